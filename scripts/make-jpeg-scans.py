#!/usr/bin/env python3
"""Writes a valid progressive JPEG with very many scans (the cost that the scan limit refuses).

    scripts/make-jpeg-scans.py OUT.jpg [--size WxH] [--passes P] [--color]

Each 8x8 block is flat (its DC coefficient carries a pattern, see `block_value`; every AC
coefficient is 0), but the coefficients are sent one at a time: for each component, the DC
coefficient in P successive-approximation passes (a first scan and P - 1 refinements), then each
of the 63 AC coefficients in a band of its own, P passes each: 64 * P scans per component (gray:
1 component, --color: 3, YCbCr 4:4:4). Every scan is a legal progression, so libjpeg decodes the
file without a warning; the all-zero AC scans are a few bytes each (one end-of-band run).
No encoder is needed (cjpeg -scans makes such files from real photos, when installed).

The fixture Tests/YOLOImageTests/Fixtures/many_scans.jpg is `--size 64x64 --passes 10`: 640
scans, 64 x 64 gray. `--size 5600x5600 --passes 14 --color` (2,688 scans) reproduces the
review's report at 5600 x 5600.
"""
import argparse, struct


def block_value(bx, by):
    """The gray level of block (bx, by): a pattern the tests recompute."""
    return 16 + (bx * 29 + by * 53) % 224


class Bits:
    """Entropy-coded data: bits MSB first, 0xFF stuffed with 0x00, padded with 1s."""
    def __init__(self):
        self.out = bytearray(); self.acc = 0; self.n = 0

    def put(self, value, length):
        for i in range(length - 1, -1, -1):
            self.acc = self.acc << 1 | (value >> i & 1); self.n += 1
            if self.n == 8:
                self.out.append(self.acc)
                if self.acc == 0xFF: self.out.append(0)
                self.acc = 0; self.n = 0

    def done(self):
        if self.n: self.put((1 << (8 - self.n)) - 1, 8 - self.n)
        return bytes(self.out)


def segment(marker, payload):
    return struct.pack(">BBH", 0xFF, marker, len(payload) + 2) + payload


def huffman(counts, symbols):
    """{symbol: (code, length)} of a canonical table with `counts[i]` codes of length i + 1."""
    table, code, k = {}, 0, 0
    for length in range(1, 17):
        for _ in range(counts[length - 1]):
            table[symbols[k]] = (code, length); code += 1; k += 1
        code <<= 1
    return table


# DC: the standard luminance table (categories 0..11). AC: only end-of-band runs EOBn
# (symbol n << 4, a run of 2^n + n extra bits), all 4-bit codes.
DC_COUNTS = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
DC_SYMBOLS = list(range(12))
AC_COUNTS = [0, 0, 0, 15] + [0] * 12
AC_SYMBOLS = [n << 4 for n in range(15)]
DC_TABLE, AC_TABLE = huffman(DC_COUNTS, DC_SYMBOLS), huffman(AC_COUNTS, AC_SYMBOLS)


def eob_runs(bits, blocks):
    while blocks:
        run = min(blocks, 32767)
        n = run.bit_length() - 1
        code, length = AC_TABLE[n << 4]
        bits.put(code, length)
        if n: bits.put(run - (1 << n), n)
        blocks -= run


def dc_first(bits, values, al):
    previous = 0
    for dc in values:
        v = dc >> al
        diff, previous = v - previous, v
        size = abs(diff).bit_length()
        code, length = DC_TABLE[size]
        bits.put(code, length)
        if size: bits.put(diff if diff > 0 else diff - 1 + (1 << size), size)


def make(width, height, passes, color):
    bw, bh = (width + 7) // 8, (height + 7) // 8
    components = 3 if color else 1
    # DC of a flat block of level v with quantizer 1: 8 * (v - 128). Chroma stays neutral.
    luma = [8 * (block_value(x, y) - 128) for y in range(bh) for x in range(bw)]
    dcs = [luma] + [[0] * (bw * bh)] * (components - 1)
    out = bytearray(b"\xff\xd8")
    out += segment(0xE0, b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0")
    out += segment(0xDB, b"\x00" + bytes([1] * 64))  # table 0: every quantizer 1
    sof = struct.pack(">BHHB", 8, height, width, components)
    for c in range(components): sof += bytes([c + 1, 0x11, 0])
    out += segment(0xC2, sof)
    out += segment(0xC4, b"\x00" + bytes(DC_COUNTS) + bytes(DC_SYMBOLS))
    out += segment(0xC4, b"\x10" + bytes(AC_COUNTS) + bytes(AC_SYMBOLS))
    scans = 0
    for c in range(components):
        for k in range(64):
            for p in range(passes):
                ah, al = (0, passes - 1) if p == 0 else (passes - p, passes - p - 1)
                out += segment(0xDA, bytes([1, c + 1, 0x00, k, k, ah << 4 | al]))
                bits = Bits()
                if k == 0 and p == 0: dc_first(bits, dcs[c], al)
                elif k == 0:
                    for dc in dcs[c]: bits.put(dc >> al & 1, 1)
                else: eob_runs(bits, bw * bh)
                out += bits.done()
                scans += 1
    out += b"\xff\xd9"
    return bytes(out), scans


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    a.add_argument("output")
    a.add_argument("--size", default="64x64")
    a.add_argument("--passes", type=int, default=10, help="passes per coefficient, 1..14")
    a.add_argument("--color", action="store_true")
    args = a.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    if not 1 <= args.passes <= 14: a.error("--passes: 1..14 (8-bit JPEG: successive approximation to bit 13)")
    data, scans = make(width, height, args.passes, args.color)
    open(args.output, "wb").write(data)
    print(f"{args.output}: {width}x{height}, {scans} scans, {len(data)} bytes")


if __name__ == "__main__":
    main()
