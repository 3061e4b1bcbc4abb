#!/usr/bin/env python3
"""Regenerates the YOLOImageTests fixtures in this folder.

    python3 -m venv /tmp/venv-img && /tmp/venv-img/bin/pip install pillow
    /tmp/venv-img/bin/python Tests/YOLOImageTests/Fixtures/make_fixtures.py

PNGs are written by the small encoder below (zlib + struct), so that every colour type,
bit depth, tRNS, gAMA, eXIf and Adam7 interlacing is exactly what the file name says; their
pixels come from the formulas below, which ImageFixtures.swift recomputes. JPEGs are written
by Pillow from flat quadrant colours, compared in the tests with a tolerance.
Pillow is only a tool for making these files; the package does not use it.
"""
import os
import struct
import zlib

from PIL import Image, ImageOps

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------- pixel formulas (see Swift)

def rgb8(x, y):
    return ((x * 37 + y * 11) % 256, (x * 5 + y * 29 + 60) % 256, (x * y * 7 + 13) % 256)

def gray8(x, y):
    return (x * 23 + y * 41) % 256

def alpha8(x, y):
    return (x * 53 + y * 17 + 100) % 256

def v16(x, y, c):
    return (x * 4099 + y * 2311 + c * 9973 + 17) % 65536

def low_bits(x, y, bits):
    return (x + 2 * y) % (1 << bits)

def palette(n):
    return [((k * 13 + 1) % 256, (k * 71 + 5) % 256, (k * 191 + 9) % 256) for k in range(n)]

def palette_index(x, y, n):
    return (x + 3 * y) % n

W, H = 13, 11        # plain fixtures
IW, IH = 19, 17      # interlaced fixtures

# ---------------------------------------------------------------- a minimal PNG encoder

ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]

def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

def pack_row(samples, depth):
    """One filter-0 scanline from a flat list of samples."""
    if depth == 16:
        data = b"".join(struct.pack(">H", s) for s in samples)
    elif depth == 8:
        data = bytes(samples)
    else:
        bits = "".join(format(s, "0%db" % depth) for s in samples)
        bits += "0" * (-len(bits) % 8)
        data = bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))
    return b"\x00" + data

def write_png(name, width, height, color_type, depth, pixel, interlace=False,
              plte=None, trns=None, extra=(), exif=None):
    """pixel(x, y) returns the tuple of samples of one pixel."""
    def scanlines(xs, ys):
        return b"".join(pack_row([s for x in xs for s in pixel(x, y)], depth) for y in ys)
    if interlace:
        raw = b""
        for x0, y0, dx, dy in ADAM7:
            xs, ys = range(x0, width, dx), range(y0, height, dy)
            if len(xs) and len(ys):
                raw += scanlines(xs, ys)
    else:
        raw = scanlines(range(width), range(height))
    out = b"\x89PNG\r\n\x1a\n"
    out += chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, int(interlace)))
    for kind, data in extra:
        out += chunk(kind, data)
    if plte is not None:
        out += chunk(b"PLTE", b"".join(bytes(c) for c in plte))
    if trns is not None:
        out += chunk(b"tRNS", trns)
    if exif is not None:
        out += chunk(b"eXIf", exif)
    out += chunk(b"IDAT", zlib.compress(raw, 9))
    out += chunk(b"IEND", b"")
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(out)

def tiff_orientation(orientation, big_endian):
    """A TIFF header with one IFD holding only the orientation tag."""
    e = ">" if big_endian else "<"
    return ((b"MM" if big_endian else b"II") + struct.pack(e + "HI", 42, 8)
            + struct.pack(e + "H", 1) + struct.pack(e + "HHI", 0x0112, 3, 1)
            + struct.pack(e + "H", orientation) + b"\x00\x00" + struct.pack(e + "I", 0))

def make_pngs():
    gray = lambda x, y: (gray8(x, y),)
    write_png("gray8.png", W, H, 0, 8, gray)
    write_png("gray8_trns.png", W, H, 0, 8, gray, trns=struct.pack(">H", gray8(3, 2)))
    for bits in (1, 2, 4):
        write_png("gray%d.png" % bits, W, H, 0, bits, lambda x, y, b=bits: (low_bits(x, y, b),))
    write_png("gray16.png", W, H, 0, 16, lambda x, y: (v16(x, y, 0),))
    write_png("graya8.png", W, H, 4, 8, lambda x, y: (gray8(x, y), alpha8(x, y)))
    write_png("graya16.png", W, H, 4, 16, lambda x, y: (v16(x, y, 0), v16(x, y, 3)))
    write_png("rgb8.png", W, H, 2, 8, rgb8)
    # gAMA 1.0 and cHRM must not change any sample (stb_image ignores them).
    chrm = struct.pack(">8I", 31270, 32900, 64000, 33000, 30000, 60000, 15000, 6000)
    write_png("rgb8_gama.png", W, H, 2, 8, rgb8,
              extra=[(b"gAMA", struct.pack(">I", 100000)), (b"cHRM", chrm)])
    write_png("rgba8.png", W, H, 6, 8, lambda x, y: rgb8(x, y) + (alpha8(x, y),))
    write_png("rgb16.png", W, H, 2, 16, lambda x, y: tuple(v16(x, y, c) for c in range(3)))
    write_png("rgba16.png", W, H, 6, 16, lambda x, y: tuple(v16(x, y, c) for c in range(4)))
    write_png("palette8_trns.png", W, H, 3, 8, lambda x, y: (palette_index(x, y, 40),),
              plte=palette(40), trns=bytes([0, 64, 128, 192, 255, 7, 9, 11, 13, 15]))
    write_png("palette4.png", W, H, 3, 4, lambda x, y: (palette_index(x, y, 11),), plte=palette(11))
    # Wider than libpng's default limit of 1,000,000 columns (the caller's pixel limit rules).
    write_png("wide_gray1.png", 1100000, 1, 0, 1, lambda x, y: (low_bits(x, y, 1),))
    write_png("rgb8_interlaced.png", IW, IH, 2, 8, rgb8, interlace=True)
    write_png("gray2_interlaced.png", IW, IH, 0, 2, lambda x, y: (low_bits(x, y, 2),), interlace=True)
    write_png("palette2_interlaced.png", IW, IH, 3, 2, lambda x, y: (palette_index(x, y, 3),),
              plte=palette(3), interlace=True)
    # EXIF orientation 1...8: upright 6 x 4 pixels of rgb8(x, y), stored transformed so that
    # applying the tag gives the upright image back. Odd orientations little-endian, even big.
    upright = Image.new("RGB", (6, 4))
    upright.putdata([rgb8(x, y) for y in range(4) for x in range(6)])
    for o in range(1, 9):
        stored = upright.transpose(INVERSE[o]) if o > 1 else upright.copy()
        name = "exif%d.png" % o
        write_png(name, stored.width, stored.height, 2, 8, lambda x, y, s=stored: s.getpixel((x, y)),
                  exif=tiff_orientation(o, big_endian=(o % 2 == 0)))
        check = Image.open(os.path.join(HERE, name))
        assert ImageOps.exif_transpose(check).tobytes() == upright.tobytes(), name

T = Image.Transpose
# For tag o, the stored image is the upright one transformed by the inverse of o's transform.
INVERSE = {2: T.FLIP_LEFT_RIGHT, 3: T.ROTATE_180, 4: T.FLIP_TOP_BOTTOM, 5: T.TRANSPOSE,
           6: T.ROTATE_90, 7: T.TRANSVERSE, 8: T.ROTATE_270}

# ---------------------------------------------------------------- JPEGs (Pillow)

# 48 x 32, four flat 24 x 16 quadrants (see Swift `quadrantColors`).
RED, GREEN, BLUE, YELLOW = (220, 40, 40), (40, 200, 60), (40, 60, 220), (230, 210, 40)
GRAYS = (30, 90, 160, 230)
# CMYK quadrants, as ink amounts (0 = none); see Swift `cmykQuadrants`.
CMYK = ((0, 200, 200, 20), (200, 0, 180, 40), (180, 150, 0, 10), (0, 30, 220, 60))

def quadrants(mode, colors, size=(48, 32)):
    image = Image.new(mode, size)
    w, h = size
    for i, color in enumerate(colors):
        x0, y0 = (i % 2) * w // 2, (i // 2) * h // 2
        image.paste(color, (x0, y0, x0 + w // 2, y0 + h // 2))
    return image

def exif_segment(orientation, big_endian):
    return b"Exif\x00\x00" + tiff_orientation(orientation, big_endian)

def make_jpegs():
    path = lambda name: os.path.join(HERE, name)
    rgb = quadrants("RGB", (RED, GREEN, BLUE, YELLOW))
    rgb.save(path("rgb.jpg"), quality=90)
    rgb.save(path("progressive.jpg"), quality=90, progressive=True)
    quadrants("L", GRAYS).save(path("gray.jpg"), quality=90)
    quadrants("CMYK", CMYK).save(path("cmyk.jpg"), quality=95)
    with open(path("cmyk.jpg"), "rb") as f:
        assert b"Adobe" in f.read(), "Pillow is expected to write an Adobe APP14 marker"
    for o, big_endian, name in ((3, False, "exif3.jpg"), (6, False, "exif6.jpg"),
                                (8, False, "exif8.jpg"), (6, True, "exif6_mm.jpg")):
        rgb.transpose(INVERSE[o]).save(path(name), quality=90, exif=exif_segment(o, big_endian))
        back = ImageOps.exif_transpose(Image.open(path(name)))
        assert back.size == rgb.size and back.getpixel((2, 2))[0] > 200, name

if __name__ == "__main__":
    make_pngs()
    make_jpegs()
    total = sum(os.path.getsize(os.path.join(HERE, f)) for f in os.listdir(HERE))
    print("fixtures written to %s (%d bytes in all)" % (HERE, total))
