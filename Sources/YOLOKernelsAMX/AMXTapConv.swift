// The amx level's tap convolutions (TapConv.swift): for each block of 32 filters and 32 pixels (16
// with a 10-bit input, whose hi and lo planes are the block's two B tiles), one tile product per
// step (`TapConv.Layout`), B read where it lies in the padded planes, then the store into the
// output planes (CAMX's yolo_amx_*_taps_block and yolo_amx_taps_store). INT8 (dequantized) and
// BF16 pairs (FP32 sums); the BF16 pair planes are rounded here as the BF16 tile GEMM rounds B.
#if arch(x86_64)
import YOLOKernels
import CAMX
import CDot

enum AMXTapConv {
    /// INT8: items `items` of `TapConv.items(g)`, each 32 filters x `TapConv.itemPixels` pixels.
    static func int8(_ g: TapConv.Geometry, packedA: UnsafeRawPointer, planes: UnsafePointer<UInt32>, lo: UnsafePointer<UInt32>?,
                     out: UnsafeMutablePointer<Float>, comp: UnsafePointer<Int32>, scale: UnsafePointer<Float>, items: Range<Int>) {
        let second = lo.map { UnsafeRawPointer($0) - UnsafeRawPointer(planes) } ?? 64
        run(g, packedA: packedA, planes: planes, second: second, kind: lo == nil ? 0 : 1, out: out, comp: comp, scale: scale,
            items: items, block: yolo_amx_int8_taps_block)
    }

    /// INT8 with the 2x2 stride-2 max pool after it (even height and width): items of
    /// `TapConv.pooledItems(g)`, each 32 filters x one pooled row, 16 pixels of both conv rows a
    /// block; `out` the pooled planes (height / 2 x width / 2).
    static func int8Pooled(_ g: TapConv.Geometry, packedA: UnsafeRawPointer, planes: UnsafePointer<UInt32>,
                           lo: UnsafePointer<UInt32>?, out: UnsafeMutablePointer<Float>, comp: UnsafePointer<Int32>,
                           scale: UnsafePointer<Float>, items: Range<Int>) {
        guard !items.isEmpty else { return }
        let wp = g.width + 2, steps = g.layout.steps, aPanel = steps * 1024, ldb = 4 * g.planeStride
        let (ph, pw) = (g.height / 2, g.width / 2)
        withUnsafeTemporaryAllocation(of: Int.self, capacity: steps) { offsets in
            stepOffsets(g, into: offsets.baseAddress!)
            withUnsafeTemporaryAllocation(byteCount: 2 * 32 * 128, alignment: 64) { tiles in
                let top = tiles.baseAddress!, bottom = top + 32 * 128
                yolo_amx_configure()
                defer { yolo_amx_release() }
                for item in items {
                    let f0 = 32 * (item / ph), y = 2 * (item % ph), rows = min(32, g.filters - f0), rt: Int32 = rows > 16 ? 2 : 1
                    let a = packedA + (f0 / 16) * aPanel, offsets = UnsafePointer(offsets.baseAddress)
                    for x0 in stride(from: 0, to: g.width, by: 16) {
                        let p = planes + y * wp + x0
                        if let lo {
                            // 10 bits: a block per conv row, its hi and lo sums.
                            let second = UnsafeRawPointer(lo) - UnsafeRawPointer(planes)
                            yolo_amx_int8_taps_block(rt, steps, a, aPanel, p, second, ldb, offsets, top)
                            yolo_amx_int8_taps_block(rt, steps, a, aPanel, p + wp, second, ldb, offsets, bottom)
                        } else {
                            // 8 bits: the lower conv row is the block's second B tile.
                            yolo_amx_int8_taps_block(rt, steps, a, aPanel, p, 4 * wp, ldb, offsets, top)
                        }
                        yolo_amx_taps_store_pooled(top, lo == nil ? top : bottom, Int32(rows), lo == nil ? 0 : 1,
                                                   Int32(min(8, pw - x0 / 2)), out + (f0 * ph + item % ph) * pw + x0 / 2, ph * pw,
                                                   comp + f0, scale + f0)
                    }
                }
            }
        }
    }

    /// BF16: as `int8`, FP32 sums.
    static func bf16(_ g: TapConv.Geometry, packedA: UnsafePointer<Float>, planes: UnsafePointer<UInt32>, out: UnsafeMutablePointer<Float>,
                     items: Range<Int>) {
        run(g, packedA: UnsafeRawPointer(packedA), planes: planes, second: 64, kind: 2, out: out, comp: nil, scale: nil, items: items,
            block: yolo_amx_bf16_taps_block)
    }

    typealias Block = (Int32, Int, UnsafeRawPointer?, Int, UnsafeRawPointer?, Int, Int, UnsafePointer<Int>?,
                       UnsafeMutableRawPointer?) -> Void

    private static func run(_ g: TapConv.Geometry, packedA: UnsafeRawPointer, planes: UnsafePointer<UInt32>, second: Int, kind: Int32,
                            out: UnsafeMutablePointer<Float>, comp: UnsafePointer<Int32>?, scale: UnsafePointer<Float>?,
                            items: Range<Int>, block: Block) {
        guard !items.isEmpty else { return }
        let wp = g.width + 2, steps = g.layout.steps, aPanel = steps * 1024
        let ldb = 4 * g.planeStride, pixelsPerItem = TapConv.itemPixels, plane = g.height * g.width
        let chunks = (g.pixels + pixelsPerItem - 1) / pixelsPerItem, width = kind == 1 ? 16 : 32
        withUnsafeTemporaryAllocation(of: Int.self, capacity: steps) { offsets in
            stepOffsets(g, into: offsets.baseAddress!)
            withUnsafeTemporaryAllocation(byteCount: 32 * 128, alignment: 64) { tile in
                yolo_amx_configure()
                defer { yolo_amx_release() }
                for item in items {
                    let f0 = 32 * (item / chunks), rows = min(32, g.filters - f0), a = packedA + (f0 / 16) * aPanel
                    let first = (item % chunks) * pixelsPerItem, end = min(g.pixels, first + pixelsPerItem)
                    var p = first
                    while p < end {
                        block(rows > 16 ? 2 : 1, steps, a, aPanel, planes + p, second, ldb, UnsafePointer(offsets.baseAddress),
                              tile.baseAddress)
                        yolo_amx_taps_store(tile.baseAddress, Int32(rows), kind, p, wp, g.width, g.height, out + f0 * plane, plane,
                                            comp.map { $0 + f0 }, scale.map { $0 + f0 })
                        p += width
                    }
                }
            }
        }
    }

    /// Each step's byte offset of its first B tile from a block's pixel (tap, or row of taps where
    /// shifted; then 16 planes on).
    private static func stepOffsets(_ g: TapConv.Geometry, into offsets: UnsafeMutablePointer<Int>) {
        let layout = g.layout, wp = g.width + 2, ldb = 4 * g.planeStride
        let perTap = layout.shifted ? layout.rowPlanes / 16 : g.groups / 16
        for s in 0..<layout.steps {
            let tap = s / perTap, j = s % perTap
            offsets[s] = 4 * (layout.shifted ? tap * wp : (tap / 3) * wp + tap % 3) + 16 * j * ldb
        }
    }

    #if compiler(>=6.1)
    /// BF16 pair planes (`BF16TapConv.planes`): job i writes pair j = i % groups of shifted copy
    /// kx = i / groups, rounded by vcvtne2ps2bf16 as `AMXBF16Gemm.packB` rounds; a job past the
    /// copies zeroes its plane.
    static func bf16Planes(_ src: UnsafePointer<Float>, channels: Int, height: Int, width: Int, jobs: Range<Int>, planeStride: Int,
                           into dst: UnsafeMutablePointer<UInt32>) {
        let groups = (channels + 1) / 2, wp = width + 2
        for job in jobs {
            guard job < 3 * groups else {
                (dst + job * planeStride).update(repeating: 0, count: planeStride)
                continue
            }
            let (kx, j) = (job / groups, job % groups)
            // (base: where the unshifted plane would start; nothing is written before base + kx.)
            let base = dst + (kx * groups + j) * planeStride - kx
            let c0 = src + 2 * j * height * width, c1: UnsafePointer<Float>? = 2 * j + 1 < channels ? c0 + height * width : nil
            (base + kx).update(repeating: 0, count: wp + 1 - kx)
            for y in 0..<height {
                let row = base + (y + 1) * wp + 1, x0 = c0 + y * width, x1 = c1.map { $0 + y * width }
                var x = 0
                while x + 16 <= width {
                    let a = UnsafeRawPointer(x0 + x).loadUnaligned(as: SIMD16<Float>.self)
                    let b = x1.map { UnsafeRawPointer($0 + x).loadUnaligned(as: SIMD16<Float>.self) } ?? SIMD16<Float>()
                    UnsafeMutableRawPointer(row + x).storeBytes(of: yolo_bf16_pairs_512(a, b), as: SIMD16<Int32>.self)
                    x += 16
                }
                while x < width {
                    row[x] = UInt32(bfloat16Bits(x0[x])) | UInt32(x1.map { bfloat16Bits($0[x]) } ?? 0) << 16
                    x += 1
                }
                row[width] = 0
                row[width + 1] = 0
            }
            (base + (height + 1) * wp + 1).update(repeating: 0, count: planeStride + kx - (height + 1) * wp - 1)
        }
    }
    #endif
}
#endif
