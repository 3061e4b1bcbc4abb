"""Photos to network inputs, letterboxed as Darknet's letterbox_image does, and the photo sets.

`letterbox(rgb, 416, 416)` follows Darknet (and our Sources/YOLODetection/Letterbox.swift):
bytes / 255 (a double division rounded to float), the limiting side keeps the network size
and the other follows by integer division, a separable bilinear resize with corner-aligned
scales (in - 1) / (out - 1), horizontal pass first, the last column / row copying the last
input column / row, the vertical pass rounded twice ((1 - dy) * a, then + dy * b), all in
float32, placed centred ((net - new) / 2) on a canvas of 0.5. On PNGs it equals Darknet's own
input tensors (shared/reference/*/*_input_416.f32) bit for bit; JPEGs are decoded by OpenCV's
libjpeg-turbo here (Darknet uses stb_image), so theirs may differ in the last bits.

Calibration photos: samples/ (the scikit-image photos of scripts/fetch-samples.sh), or every
photo of the folder PEERS_CALIBRATION names (issue #49's: eval-photos/calib, made by
scripts/eval-photos.py; the INT8 models then carry its name). Evaluation photos: Darknet's seven
in ../shared/images, which no calibration sees, or any folder (accuracy.py --images).
"""

import os
from pathlib import Path

import numpy as np

PEERS = Path(__file__).resolve().parent
ROOT = PEERS.parent.parent
SAMPLES = ROOT / "samples"
SHARED_IMAGES = ROOT.parent / "shared" / "images"
CALIBRATION = ("astronaut.png", "camera.png", "chelsea.png", "coffee.png", "horse.png",
               "hubble_deep_field.jpg", "logo.png", "motorcycle_left.png", "rocket.jpg")
EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp")


def read_rgb(path):
    """8-bit RGB (H, W, 3) of a photo file; grey is replicated and alpha dropped, as stb_image's 3 channels."""
    import cv2

    img = cv2.imread(str(path), cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION)
    if img is None:
        raise ValueError(f"{path}: not a readable image")
    return np.ascontiguousarray(img[:, :, ::-1])


def letterbox_size(w, h, net_w, net_h):
    if np.float32(net_w) / np.float32(w) < np.float32(net_h) / np.float32(h):
        return net_w, max(1, (h * net_w) // w)
    return max(1, (w * net_h) // h), net_h


def _scale(n_in, n_out):
    return np.float32(np.float32(n_in - 1) / np.float32(n_out - 1)) if n_out > 1 else np.float32(0)


def resize(planes, out_w, out_h):
    """Darknet's resize_image on float32 planes (C, H, W)."""
    c, h, w = planes.shape
    f32 = np.float32
    # Horizontal pass.
    cols = np.arange(out_w)
    sx = cols.astype(np.float32) * _scale(w, out_w)
    ix = sx.astype(np.int64)
    dx = (sx - ix.astype(np.float32)).astype(np.float32)
    last = (cols == out_w - 1) | (w == 1)
    ix = np.where(last, w - 1, ix)
    ix1 = np.minimum(ix + 1, w - 1)
    part = (f32(1) - dx) * planes[:, :, ix] + dx * planes[:, :, ix1]
    part[:, :, last] = planes[:, :, [w - 1]]
    # Vertical pass: (1 - dy) * row iy, then + dy * row iy+1 (two roundings), except the last row.
    rows = np.arange(out_h)
    sy = rows.astype(np.float32) * _scale(h, out_h)
    iy = np.minimum(sy.astype(np.int64), h - 1)
    dy = (sy - iy.astype(np.float32)).astype(np.float32)
    iy1 = np.minimum(iy + 1, h - 1)
    first = (f32(1) - dy)[None, :, None] * part[:, iy, :]
    second = dy[None, :, None] * part[:, iy1, :]
    lastrow = (rows == out_h - 1) | (h == 1)
    out = np.where(lastrow[None, :, None], first, first + second)
    return out.astype(np.float32)


def letterbox(rgb, net_w=416, net_h=416):
    """(3, net_h, net_w) float32 CHW input of an (H, W, 3) uint8 RGB image."""
    h, w = rgb.shape[:2]
    table = (np.arange(256, dtype=np.float64) / 255.0).astype(np.float32)
    planes = table[rgb.transpose(2, 0, 1)]
    new_w, new_h = letterbox_size(w, h, net_w, net_h)
    resized = resize(planes, new_w, new_h)
    canvas = np.full((3, net_h, net_w), 0.5, dtype=np.float32)
    x0, y0 = (net_w - new_w) // 2, (net_h - new_h) // 2
    canvas[:, y0:y0 + new_h, x0:x0 + new_w] = resized
    return canvas


def load(path, net_w=416, net_h=416):
    """(tensor (3, net_h, net_w), (width, height)) of a photo."""
    rgb = read_rgb(path)
    return letterbox(rgb, net_w, net_h), (rgb.shape[1], rgb.shape[0])


def calibration_photos():
    if os.environ.get("PEERS_CALIBRATION"):
        return photos_in(os.environ["PEERS_CALIBRATION"])
    paths = [SAMPLES / name for name in CALIBRATION]
    missing = [p.name for p in paths if not p.exists()]
    if missing:
        raise SystemExit(f"calibration photos missing from {SAMPLES}: {', '.join(missing)} "
                         f"(run scripts/fetch-samples.sh)")
    return paths


def calibration_tag():
    """What the INT8 models' file names carry: nothing for samples/, else '-calib-' and the
    PEERS_CALIBRATION folder's name (so that models of two sets are not taken for each other)."""
    folder = os.environ.get("PEERS_CALIBRATION")
    return f"-calib-{Path(folder).resolve().name}" if folder else ""


def photos_in(directory):
    directory = Path(directory)
    if not directory.is_dir():
        raise SystemExit(f"{directory}: no such folder of photos (Darknet's are in ../shared/images beside "
                         "a checkout; pass --images DIR)")
    paths = sorted(p for p in directory.iterdir() if p.suffix.lower() in EXTENSIONS)
    if not paths:
        raise SystemExit(f"{directory}: no photos (.jpg, .png, .bmp)")
    return paths
