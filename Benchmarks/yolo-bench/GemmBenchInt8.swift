import Foundation
@_spi(Kernels) import YOLO
import YOLOKernels

/// `yolo-bench gemm --int8`: each level's INT8 GEMMs against its own FP32 GEMM on the same shapes,
/// one thread. The im2col shapes (`conv*`) run the INT8 GEMM (u8 x s8, what `int8` layers use);
/// the Winograd shapes (`wino*`) run the 16-bit pair GEMM of INT8 Winograd (`winograd2-int8`,
/// `winograd4-int8`) with k = channels. GOP/s count 2 operations per multiply-add, as GFLOP/s
/// do, so the ratio is the speed-up of the INT8 product over the FP32 one: the ceiling of what
/// INT8 can gain on that layer's GEMM (the transforms, quantization and epilogues come on top).
enum GemmBenchInt8 {
    /// One timed call and its work (multiply-adds x 2).
    struct Call { let ops: Double; let run: () -> Void }

    /// The FP32 and INT8 calls of `level` on shape (m, n, k); nil INT8 where the level has no such
    /// kernel (no pair GEMM on a `wino` shape). Buffers are kept in `keep` until the shape is done.
    static func calls(_ level: KernelLevel, winograd: Bool, m: Int, n: Int, k: Int,
                      keep: inout [UnsafeMutableRawPointer]) -> (fp32: Call, int8: Call?) {
        let set = level.kernelSet!
        func bytes(_ count: Int) -> UnsafeMutableRawPointer {
            let p = UnsafeMutableRawPointer.allocate(byteCount: max(64, count), alignment: 64)
            p.initializeMemory(as: UInt8.self, repeating: 0, count: max(64, count))
            keep.append(p)
            return p
        }
        let ops = 2.0 * Double(m) * Double(n) * Double(k)
        // FP32: A packed once, B packed per call, as in the FP32 table.
        let g = set.gemm
        let a = bytes(4 * m * k).assumingMemoryBound(to: Float.self), b = bytes(4 * k * n).assumingMemoryBound(to: Float.self)
        for i in 0..<(m * k) { a[i] = Float(i % 17) * 0.01 - 0.08 }
        for i in 0..<(k * n) { b[i] = Float(i % 13) * 0.02 - 0.12 }
        let c = bytes(4 * m * n).assumingMemoryBound(to: Float.self)
        let packed = bytes(4 * g.packedASize(m: m, k: k)).assumingMemoryBound(to: Float.self)
        let scratch = bytes(4 * g.scratchSize(m: m, n: n, k: k)).assumingMemoryBound(to: Float.self)
        g.packA(a, lda: k, m: m, k: k, into: packed)
        let fp32 = Call(ops: ops) { g.gemm(m: m, n: n, k: k, packedA: packed, b: b, ldb: n, c: c, ldc: n, scratch: scratch) }
        // INT8: k counts the bytes of A: 4 per group of the u8 x s8 GEMM, 2 per channel (two
        // int16 halves) for the pair GEMM; B holds ceil(k / 4) rows of n words either way.
        guard let q = winograd ? set.int16Pairs : set.int8 else { return (fp32, nil) }
        let kb = winograd ? 2 * k : k, groups = (kb + 3) / 4
        let qa = bytes(m * kb).assumingMemoryBound(to: Int8.self)
        // (Small values: a pair GEMM's int16 kernels stay within Int16Pairs.kernelLimit.)
        for i in 0..<(m * kb) { qa[i] = Int8(i % 7) - 3 }
        let qb = bytes(4 * groups * n).assumingMemoryBound(to: UInt32.self)
        for i in 0..<(groups * n) { qb[i] = UInt32(truncatingIfNeeded: i &* 2_654_435_761) & 0x00FF_00FF }
        let comp = bytes(4 * m).assumingMemoryBound(to: Int32.self), scale = bytes(4 * m).assumingMemoryBound(to: Float.self)
        for i in 0..<m { scale[i] = 0.001 }
        let qPacked = bytes(q.packedASize(m: m, k: kb)), qScratch = bytes(q.scratchSize(m: m, n: n, k: kb))
        q.packA(qa, lda: kb, m: m, k: kb, into: qPacked)
        let int8 = Call(ops: ops) {
            q.gemm(m: m, n: n, k: kb, packedA: qPacked, b: qb, ldb: n, c: c, ldc: n, comp: comp, scale: scale, scratch: qScratch)
        }
        return (fp32, int8)
    }

    static func run(levels: [KernelLevel], shapes: [(name: String, m: Int, n: Int, k: Int)], runs: Int, minSeconds: Double,
                    best: Bool) {
        let levels = levels.filter { $0.kernelSet?.int8 != nil }
        guard !levels.isEmpty else { fail("gemm --int8: no level given has INT8 kernels", code: 1) }
        print("yolo-bench gemm --int8: \(Machine.cpuModel); one thread; \(best ? "best" : "median") of \(runs) samples (>= \(fmt(minSeconds * 1000, 0)) ms each, round-robin), GOP/s (2 per multiply-add)")
        for level in levels {
            let s = level.kernelSet!
            let pairs = s.int16Pairs.map { "; pair GEMM (wino*) \($0.dot), \($0.mr) x \($0.nr) tile" } ?? "; no pair GEMM"
            print("  \(level.rawValue): FP32 \(s.gemm.mr) x \(s.gemm.nr) tile; INT8 (conv*) \(s.int8!.dot), \(s.int8!.mr) x \(s.int8!.nr) tile\(pairs)")
        }
        let names = levels.flatMap { ["\($0.rawValue)-fp32", "\($0.rawValue)-int8", "int8/fp32"] }
        let widths = names.map { max(10, $0.count + 2) }
        print(pad("shape", 8) + pad("m x n x k", 20) + zip(names, widths).map { lpad($0, $1) }.joined())
        var totals = [Double](repeating: 0, count: 2 * levels.count), work = totals
        for shape in shapes {
            var keep: [UnsafeMutableRawPointer] = []
            defer { keep.forEach { $0.deallocate() } }
            let winograd = shape.name.hasPrefix("wino")
            let pairs = levels.map { calls($0, winograd: winograd, m: shape.m, n: shape.n, k: shape.k, keep: &keep) }
            let seconds = GemmBench.sample(pairs.flatMap { [$0.fp32.run, $0.int8?.run] }.compactMap { $0 }, runs: runs,
                                           minSeconds: minSeconds, best: best)
            var row = pad(shape.name, 8) + pad("\(shape.m)x\(shape.n)x\(shape.k)", 20), next = 0, column = 0
            for (l, pair) in pairs.enumerated() {
                let f = seconds[next]; next += 1
                let q = pair.int8 == nil ? nil : seconds[next]
                if q != nil { next += 1 }
                if let q {  // (the FP32 total over the same shapes as the INT8 one)
                    totals[2 * l] += f; work[2 * l] += pair.fp32.ops
                    totals[2 * l + 1] += q; work[2 * l + 1] += pair.fp32.ops
                }
                row += lpad(fmt(pair.fp32.ops / f / 1e9, 1), widths[column])
                row += lpad(q.map { fmt(pair.fp32.ops / $0 / 1e9, 1) } ?? "-", widths[column + 1])
                row += lpad(q.map { fmt(f / $0, 2) + "x" } ?? "-", widths[column + 2])
                column += 3
            }
            print(row)
        }
        var total = pad("all", 28)
        for l in levels.indices {
            guard totals[2 * l] > 0 else { total += widths[(3 * l)..<(3 * l + 3)].map { lpad("-", $0) }.joined(); continue }
            let (f, q) = (work[2 * l] / totals[2 * l] / 1e9, work[2 * l + 1] / totals[2 * l + 1] / 1e9)
            total += lpad(fmt(f, 1), widths[3 * l]) + lpad(fmt(q, 1), widths[3 * l + 1]) + lpad(fmt(q / f, 2) + "x", widths[3 * l + 2])
        }
        print(total + "   (time-weighted over the shapes both run)")
    }
}
