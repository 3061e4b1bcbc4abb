import Foundation
import CPeak
@_spi(Kernels) import YOLO
import YOLOKernels

/// The peak rate of the instruction a kernel level computes a precision with, measured on this
/// CPU (CPeak's loops): the per-layer table's `peak` column is each layer's rate as a share of it
/// (docs/performance.md, "Share of the peak"). `yolo-bench peak` lists every one this CPU runs.
struct PeakProbe: Sendable {
    /// The instruction and its register width ("vpdpbusd zmm", "tdpbsud").
    let name: String
    /// Multiplications per loop iteration (a rate counts 2 operations each, as GFLOP/s do).
    let products: Double
    /// (iterations, a, b) -> the sum of the accumulators: products x iterations x a x b.
    let run: @Sendable (Int, Double, Double) -> Double

    /// Giga-operations a second on one core: the best of `samples` runs of about 20 ms each, on
    /// inputs of 1 (zeros could let a unit skip work).
    func measure(samples: Int = 3) -> Double {
        var n = 1000, seconds = 0.0
        while true {  // an iteration count that takes about 20 ms
            let t0 = nowSeconds()
            _ = run(n, 1, 1)
            seconds = nowSeconds() - t0
            if seconds > 0.005 || n > 1 << 30 { break }
            n *= 4
        }
        n = max(1, Int(Double(n) * 0.02 / max(seconds, 1e-9)))
        var best = Double.infinity
        for _ in 0..<samples {
            let t0 = nowSeconds()
            _ = run(n, 1, 1)
            best = min(best, nowSeconds() - t0)
        }
        return 2 * products * Double(n) / best / 1e9
    }

    /// Whether the loop does the products it claims: its checksum for a = 1, b = 1 (small enough
    /// to be exact in FP16 sums) equals products x iterations.
    func checks() -> (ok: Bool, got: Double, expected: Double) {
        let n = 64, got = run(n, 1, 1), expected = products * Double(n)
        return (got == expected, got, expected)
    }

    static func bf16Bits(_ x: Double) -> UInt16 { UInt16(Float(x).bitPattern >> 16) }

    #if arch(x86_64)
    static let fma256 = PeakProbe(name: "vfmadd231ps ymm", products: 12 * 8) { yolo_peak_fma256($0, Float($1), Float($2)) }
    static let fma512 = PeakProbe(name: "vfmadd231ps zmm", products: 12 * 16) { yolo_peak_fma512($0, Float($1), Float($2)) }
    static let maddwd256 = PeakProbe(name: "vpmaddwd ymm", products: 8 * 16) { yolo_peak_maddwd256($0, Int16($1), Int16($2)) }
    static let maddwd512 = PeakProbe(name: "vpmaddwd zmm", products: 8 * 32) { yolo_peak_maddwd512($0, Int16($1), Int16($2)) }
    static let dpbusd256 = PeakProbe(name: "vpdpbusd ymm", products: 12 * 32) { yolo_peak_dpbusd256($0, UInt8($1), Int8($2)) }
    static let dpbusd512 = PeakProbe(name: "vpdpbusd zmm", products: 12 * 64) { yolo_peak_dpbusd512($0, UInt8($1), Int8($2)) }
    static let dpbf16 = PeakProbe(name: "vdpbf16ps zmm", products: 12 * 32) { yolo_peak_dpbf16($0, bf16Bits($1), bf16Bits($2)) }
    static let fmaPH = PeakProbe(name: "vfmadd231ph zmm", products: 12 * 32) {
        yolo_peak_fma_ph512($0, Float16($1).bitPattern, Float16($2).bitPattern)
    }
    static let amxInt8 = PeakProbe(name: "tdpbsud", products: 4 * 16 * 16 * 64) { yolo_peak_amx_int8($0, Int8($1), UInt8($2)) }
    static let amxBF16 = PeakProbe(name: "tdpbf16ps", products: 4 * 16 * 16 * 32) { yolo_peak_amx_bf16($0, bf16Bits($1), bf16Bits($2)) }
    #elseif arch(arm64)
    static let fmla4s = PeakProbe(name: "fmla .4s", products: 12 * 4) { yolo_peak_fmla4s($0, Float($1), Float($2)) }
    #endif

    /// The instruction `level` computes `precision` with, where CPeak has a loop for it.
    static func probe(_ precision: Precision, level: KernelLevel) -> PeakProbe? {
        guard let set = level.kernelSet else { return nil }
        #if arch(x86_64)
        let wide = set.gemm.width >= 16
        switch precision {
        case .fp32: return wide ? fma512 : set.gemm.width == 8 ? fma256 : nil
        case .int8:
            switch set.int8?.dot {
            case "tdpbsud": return amxInt8
            case "vpdpbusd": return wide ? dpbusd512 : dpbusd256
            case "vpmaddwd": return wide ? maddwd512 : maddwd256
            default: return nil
            }
        case .bf16:
            switch level.bf16Kernels?.dot {
            case "tdpbf16ps": return amxBF16
            case "vdpbf16ps": return dpbf16
            default: return nil
            }
        case .fp16:
            // Without FP16 arithmetic, FP16 weights go through the FP32 GEMM.
            if level.fp16Kernels?.dot == "vfmadd231ph" { return fmaPH }
            return level.fp16Kernels == nil ? probe(.fp32, level: level) : nil
        }
        #elseif arch(arm64)
        // NEON's FP32 only (the dot-product and FP16 loops would need their own target attributes).
        _ = set
        return precision == .fp32 || (precision == .fp16 && level.fp16Kernels == nil) ? fmla4s : nil
        #else
        _ = set
        return nil
        #endif
    }
}

/// `yolo-bench peak`: each instruction's peak on one core, for every level this CPU runs.
enum PeakBench {
    static func run(_ args: [String]) {
        if args.contains("-h") || args.contains("--help") {
            print("""
            usage: yolo-bench peak

            Measures, on one core, the peak rate of each instruction the kernel levels this CPU runs
            compute with (best of 3 runs of about 20 ms; GOP/s count 2 operations per product), and
            checks that each loop does the products it counts. Exit status 1 when a check fails.
            """)
            exit(0)
        }
        if let stray = args.first {
            FileHandle.standardError.write(Data("yolo-bench peak: unexpected '\(stray)' (it takes no options; --help says what it does)\n".utf8))
            exit(64)
        }
        print("yolo-bench peak: \(Machine.cpuModel), one core")
        var seen: Set<String> = [], failed = false
        for level in KernelLevel.supported {
            for precision in [Precision.fp32, .int8, .bf16, .fp16] {
                guard let p = PeakProbe.probe(precision, level: level) else { continue }
                let line = "\(level) \(precision): \(p.name)"
                guard seen.insert(line).inserted else { continue }
                let check = p.checks()
                failed = failed || !check.ok
                print("\(pad(line, 36)) \(lpad(fmt(p.measure(), 1), 9)) GOP/s\(check.ok ? "" : "  CHECK FAILED: checksum \(check.got), expected \(check.expected)")")
            }
        }
        exit(failed ? 1 : 0)
    }
}

/// Each (level, precision)'s peak, measured when first asked for (about 0.1 s each).
final class PeakRates {
    private var rates: [String: Double?] = [:]
    func rate(_ precision: Precision, level: KernelLevel) -> Double? {
        let key = "\(level) \(precision)"
        if let known = rates[key] { return known }
        let r = PeakProbe.probe(precision, level: level).map { $0.measure() }
        rates[key] = r
        return r
    }
}
