// Whether 16-bit products pay on this CPU, for the plans the table decides with the plan cache
// in use (`Planning.cached` without a stored plan: the tools' default before `yolo tune`). The
// table puts every GEMM of a BF16 or FP16 model on the 16-bit GEMM, which is faster where the CPU
// computes 16-bit products at twice FP32's rate (Zen 4's vdpbf16ps, the A76's fmla .8h), but not
// everywhere: on an Emerald Rapids vdpbf16ps runs at half its FP32 FMA's rate and the table's
// BF16 plan lost to FP32 (docs/performance-low-precision.md). So, once per load, one GEMM of a mid-sized layer's
// shape is timed both ways (alternating rounds, the fastest of each), and where the
// 16-bit GEMM is not clearly faster the table keeps FP32 on every layer and says so. `yolo tune`
// still measures every 16-bit candidate per layer; `Planning.table` probes nothing (the same
// plan on every machine).
import YOLOCore
import YOLOKernels

enum HalfProbe {
    /// The shape timed: a slice of yolov3-tiny's layer 8 as im2col gives it (m filters, n columns,
    /// k = channels x 9): 14 MFLOP, short enough natively and under an emulator (qemu computes
    /// FP16 in software).
    static let (m, n, k) = (64, 192, 576)
    /// The 16-bit GEMM must take at most this share of FP32's time.
    static let threshold = 0.9

    /// The fastest of `rounds` alternating timings (nanoseconds) of the 16-bit and the FP32 GEMM,
    /// one thread.
    static func measure(half: GemmFunctions, fp32: GemmFunctions, rounds: Int = 5) -> (half: UInt64, fp32: UInt64) {
        let a = UnsafeMutablePointer<Float>.allocate(capacity: m * k)
        let b = UnsafeMutablePointer<Float>.allocate(capacity: k * n)
        let c = UnsafeMutablePointer<Float>.allocate(capacity: m * n)
        defer { a.deallocate(); b.deallocate(); c.deallocate() }
        // Values of a layer's size and sign mix (the GEMMs' speed does not depend on them).
        for i in 0..<(m * k) { a[i] = Float(i % 17) * 0.01 - 0.08 }
        for i in 0..<(k * n) { b[i] = Float(i % 13) * 0.1 }
        let gemms = [half, fp32]
        let packed = gemms.map { UnsafeMutablePointer<Float>.allocate(capacity: $0.packedASize(m, k)) }
        let scratch = gemms.map { UnsafeMutablePointer<Float>.allocate(capacity: max(1, $0.scratchSize(m, n, k))) }
        defer { for p in packed + scratch { p.deallocate() } }
        for j in 0..<2 { gemms[j].packA(a, k, m, k, packed[j]) }
        func time(_ j: Int) -> UInt64 {
            let start = monotonicNanoseconds()
            gemms[j].gemm(m, n, k, packed[j], b, n, c, n, scratch[j], 0..<m)
            return monotonicNanoseconds() - start
        }
        var best: [UInt64] = [.max, .max]
        _ = time(0); _ = time(1)   // warm-up: caches, page faults
        for _ in 0..<rounds {
            for j in 0..<2 { best[j] = min(best[j], time(j)) }
        }
        return (best[0], best[1])
    }

    /// Whether the 16-bit GEMM is clearly faster than FP32's, from their timings.
    static func pays(half: UInt64, fp32: UInt64) -> Bool {
        Double(half) <= threshold * Double(fp32)
    }

    /// The plan's note when the 16-bit GEMM does not pay.
    /// (`precision` the model's, `halfPrecision` the GEMM's: .fp16 in an INT8 model; `others`:
    /// the model has another 16-bit GEMM, which the table may still take.)
    static func note(_ precision: Precision, half halfPrecision: Precision, dot: String, half: UInt64, fp32: UInt64,
                     others: Bool = false) -> String {
        let ratio = Double(half) / Double(max(1, fp32))
        let shown = Double(Int((ratio * 100).rounded())) / 100
        let layers = precision == .int8 ? "the layers not in INT8" : "every layer"
        let keeps = others ? "takes no \(halfPrecision.rawValue) form" : "keeps FP32 on \(layers)"
        return "\(precision.rawValue): the table \(keeps): on this CPU the \(halfPrecision.rawValue) GEMM (\(dot)) took "
            + "\(shown)x the FP32 GEMM's time (over \(threshold)x); 'yolo tune --precision \(precision.rawValue)' measures each layer"
    }
}
