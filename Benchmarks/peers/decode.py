"""Raw [yolo] heads to detections with our decoder's semantics, and detection matching.

`decode(heads, yolo_layers, image_size)` follows Sources/YOLODetection (Darknet's
get_yolo_detections, correct_yolo_boxes and do_nms_sort): objectness = logistic(t_o) (in
double, rounded to float) kept when > threshold; x = (col + logistic(tx) * scale_x_y -
(scale_x_y - 1) / 2) / grid_w, w = exp(tw) * anchor_w / net_w (new_coords: no logistic,
w = tw^2 * 4 * anchor_w / net_w); prob_k = objectness * logistic(class_k), 0 unless >
threshold; the letterbox undone; per class, boxes sorted by prob_k (stable, descending) and
each later box whose Darknet IoU with a kept one is > nms gets prob_k = 0; every (box, class)
whose prob_k is still > threshold is a detection. Box edges in image pixels, unclamped.

`match(reference, test, iou=0.5)`: same class, IoU >= iou, greedy by the test detections'
confidence (each reference used once): (matched, len(reference), len(test)).
"""

from dataclasses import dataclass

import numpy as np

import darknet
from photos import letterbox_size


@dataclass
class YoloLayer:
    anchors: list  # [(w, h)] of this layer's mask
    classes: int
    scale_xy: float = 1.0
    new_coords: bool = False


@dataclass
class Detection:
    cls: int
    conf: float
    left: float
    top: float
    right: float
    bottom: float


def yolo_layers(cfg):
    """The [yolo] sections of a cfg, in order, and the network's input size (w, h)."""
    sections = darknet.parse_cfg(cfg)
    net = sections[0][1]
    layers = []
    for kind, p in sections[1:]:
        if kind != "yolo":
            continue
        values = [float(v) for v in p["anchors"].split(",")]
        pairs = list(zip(values[0::2], values[1::2]))
        mask = [int(v) for v in p.get("mask", ",".join(str(i) for i in range(len(pairs)))).split(",")]
        if p.get("nms_kind", "greedynms").strip() not in ("greedynms", "default"):
            raise ValueError(f"nms_kind {p['nms_kind']} is not decoded here (greedy only)")
        layers.append(YoloLayer(anchors=[pairs[m] for m in mask], classes=int(p.get("classes", 20)),
                                scale_xy=float(p.get("scale_x_y", 1)), new_coords=p.get("new_coords", "0") == "1"))
    return layers, (int(net["width"]), int(net["height"]))


def _logistic(v):
    return (1.0 / (1.0 + np.exp(-v.astype(np.float64)))).astype(np.float32)


def decode(heads, layers, net_size, image_size, threshold=0.25, nms=0.45):
    f32 = np.float32
    net_w, net_h = net_size
    img_w, img_h = image_size
    xs, ys, ws, hs, probs = [], [], [], [], []
    for head, layer in zip(heads, layers):
        n = len(layer.anchors)
        _, gh, gw = head.shape
        raw = head.reshape(n, layer.classes + 5, gh, gw)
        act = (lambda v: v.astype(np.float32)) if layer.new_coords else _logistic
        # Darknet's order: cells row-major, then the anchors of a cell.
        obj = act(raw[:, 4]).transpose(1, 2, 0)  # (gh, gw, n)
        rows, cols, anchors = np.nonzero(obj > threshold)
        if rows.size == 0:
            continue
        o = obj[rows, cols, anchors]
        scale = f32(layer.scale_xy)
        shift = f32(-0.5 * (layer.scale_xy - 1))
        sx = act(raw[anchors, 0, rows, cols]) * scale + shift
        sy = act(raw[anchors, 1, rows, cols]) * scale + shift
        xs.append((cols.astype(np.float32) + sx) / f32(gw))
        ys.append((rows.astype(np.float32) + sy) / f32(gh))
        aw = np.array([layer.anchors[a][0] for a in anchors])
        ah = np.array([layer.anchors[a][1] for a in anchors])
        tw, th = raw[anchors, 2, rows, cols], raw[anchors, 3, rows, cols]
        if layer.new_coords:
            ws.append(tw * tw * f32(4) * aw.astype(np.float32) / f32(net_w))
            hs.append(th * th * f32(4) * ah.astype(np.float32) / f32(net_h))
        else:
            ws.append((np.exp(tw.astype(np.float64)) * aw / net_w).astype(np.float32))
            hs.append((np.exp(th.astype(np.float64)) * ah / net_h).astype(np.float32))
        p = o[:, None] * act(raw[anchors, 5:, rows, cols].reshape(rows.size, layer.classes))
        probs.append(np.where(p > threshold, p, f32(0)))
    if not xs:
        return []
    x, y, w, h = (np.concatenate(v) for v in (xs, ys, ws, hs))
    probs = np.concatenate(probs)
    # correct_yolo_boxes: the letterbox undone.
    new_w, new_h = letterbox_size(img_w, img_h, net_w, net_h)
    x = ((x.astype(np.float64) - (net_w - new_w) / 2.0 / net_w) / float(f32(new_w) / f32(net_w))).astype(np.float32)
    y = ((y.astype(np.float64) - (net_h - new_h) / 2.0 / net_h) / float(f32(new_h) / f32(net_h))).astype(np.float32)
    w = w * (f32(net_w) / f32(new_w))
    h = h * (f32(net_h) / f32(new_h))
    for k in np.nonzero((probs > 0).any(axis=0))[0]:
        order = [i for i in np.argsort(-probs[:, k], kind="stable") if probs[i, k] > 0]
        for a_pos, a in enumerate(order):
            if probs[a, k] == 0:
                continue
            for b in order[a_pos + 1:]:
                if probs[b, k] != 0 and _darknet_iou(x, y, w, h, a, b) > nms:
                    probs[b, k] = 0
    out = []
    for i, k in zip(*np.nonzero(probs > threshold)):
        out.append(Detection(int(k), float(probs[i, k]),
                             float((x[i] - w[i] / 2) * img_w), float((y[i] - h[i] / 2) * img_h),
                             float((x[i] + w[i] / 2) * img_w), float((y[i] + h[i] / 2) * img_h)))
    return out


def _darknet_iou(x, y, w, h, a, b):
    def overlap(c1, s1, c2, s2):
        return min(c1 + s1 / 2, c2 + s2 / 2) - max(c1 - s1 / 2, c2 - s2 / 2)

    ow = overlap(x[a], w[a], x[b], w[b])
    oh = overlap(y[a], h[a], y[b], h[b])
    inter = 0 if ow < 0 or oh < 0 else ow * oh
    return inter / (w[a] * h[a] + w[b] * h[b] - inter)


def iou(a, b):
    iw = min(a.right, b.right) - max(a.left, b.left)
    ih = min(a.bottom, b.bottom) - max(a.top, b.top)
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    union = (a.right - a.left) * (a.bottom - a.top) + (b.right - b.left) * (b.bottom - b.top) - inter
    return inter / union if union > 0 else 0.0


def pairs(reference, test, threshold=0.5):
    """[(reference, test)] detections matched: same class, IoU >= threshold, greedy by test confidence."""
    free = list(reference)
    found = []
    for t in sorted(test, key=lambda d: -d.conf):
        best, best_iou = None, threshold
        for r in free:
            if r.cls == t.cls:
                v = iou(r, t)
                if v >= best_iou:
                    best, best_iou = r, v
        if best is not None:
            free.remove(best)
            found.append((best, t))
    return found


def match(reference, test, threshold=0.5):
    """(matched, len(reference), len(test))."""
    return len(pairs(reference, test, threshold)), len(reference), len(test)
