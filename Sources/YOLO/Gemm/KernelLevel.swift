#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
#if arch(x86_64)
import CCPUID
#endif

/// The instruction-set levels of the GEMM kernels (Sources/YOLOKernels*/): `baseline` is the
/// x86-64 default (SSE2), `neon` the arm64 one; `avx2` needs AVX2 + FMA, `avx512` needs
/// AVX-512 F + CD + BW + DQ + VL (and an OS that saves the YMM/ZMM state); see `CPUFeatures`.
public enum KernelLevel: String, Sendable, CaseIterable {
    case baseline, avx2, avx512, neon

    /// The levels this build can run on this CPU, lowest first.
    public static let supported: [KernelLevel] = {
        #if arch(x86_64)
        let cpu = CPUFeatures.host
        return [.baseline] + (cpu.avx2 ? [.avx2] : []) + (cpu.avx512 ? [.avx512] : [])
        #elseif arch(arm64) || arch(aarch64)
        return [.neon]
        #else
        return [.baseline]
        #endif
    }()

    /// The highest level this CPU can run.
    public static var detected: KernelLevel { supported.last! }

    /// The level the engine uses: `detected`, lowered by the environment variable
    /// `YOLO_KERNEL_LEVEL` (baseline, avx2, avx512, neon). A level this CPU cannot run, or an
    /// unknown name, is reported on stderr once and ignored (the detected level is used).
    public static let selected: KernelLevel = {
        let request = getenv("YOLO_KERNEL_LEVEL").map { String(cString: $0) }
        let (level, message) = resolve(request: request, supported: supported)
        if let message {
            // File descriptor 2: naming C's `stderr` is not concurrency-safe in Swift 6.
            let line = Array("yolo: \(message)\n".utf8)
            _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        }
        return level
    }()

    /// `YOLO_KERNEL_LEVEL`'s value `request` against the levels `supported` (lowest first):
    /// the level to use and, when the request is not honoured, why.
    static func resolve(request: String?, supported: [KernelLevel]) -> (KernelLevel, message: String?) {
        let best = supported.last!
        guard let request, !request.isEmpty else { return (best, nil) }
        guard let level = KernelLevel(rawValue: request.lowercased()) else {
            let names = KernelLevel.allCases.map { $0.rawValue }.joined(separator: ", ")
            return (best, "YOLO_KERNEL_LEVEL=\(request) is not a kernel level (\(names)); using \(best.rawValue)")
        }
        guard supported.contains(level) else {
            let names = supported.map { $0.rawValue }.joined(separator: ", ")
            return (best, "YOLO_KERNEL_LEVEL=\(request): this CPU cannot run it (it can: \(names)); using \(best.rawValue)")
        }
        return (level, nil)
    }
}

/// What the kernel levels need from the CPU (x86: CPUID + XGETBV).
struct CPUFeatures: Sendable {
    /// AVX2 and FMA with the OS saving YMM state, plus what `-target-cpu haswell` lets the
    /// compiler use besides (BMI1, BMI2, LZCNT, MOVBE, F16C: every AVX2+FMA CPU has them).
    var avx2 = false
    /// AVX-512 F, CD, BW, DQ and VL (what `-target-cpu skylake-avx512` enables; every Intel
    /// and AMD AVX-512 CPU since Skylake-SP and Zen 4 has them), with the OS saving opmask and
    /// ZMM state.
    var avx512 = false

    static let host = CPUFeatures.detect()

    static func detect() -> CPUFeatures {
        var features = CPUFeatures()
        #if arch(x86_64)
        var r: [UInt32] = [0, 0, 0, 0]
        guard yolo_cpuid(1, 0, &r) != 0 else { return features }
        let ecx1 = r[2]
        let bit1 = { (n: UInt32) in ecx1 & (1 << n) != 0 }
        // FMA, MOVBE, OSXSAVE, AVX, F16C
        guard bit1(27), bit1(28) else { return features }
        let haswellLeaf1 = bit1(12) && bit1(22) && bit1(29)
        let xcr0 = yolo_xgetbv0()
        let ymmState = xcr0 & 0x6 == 0x6              // SSE + AVX state
        let zmmState = xcr0 & 0xE6 == 0xE6            // + opmask, ZMM_Hi256, Hi16_ZMM
        guard yolo_cpuid(7, 0, &r) != 0 else { return features }
        let ebx7 = r[1]
        let bit7 = { (n: UInt32) in ebx7 & (1 << n) != 0 }
        let lzcnt = yolo_cpuid(0x8000_0001, 0, &r) != 0 && r[2] & (1 << 5) != 0
        // AVX2, BMI1, BMI2
        features.avx2 = ymmState && haswellLeaf1 && lzcnt && bit7(5) && bit7(3) && bit7(8)
        // AVX512F, DQ, CD, BW, VL
        features.avx512 = features.avx2 && zmmState && bit7(16) && bit7(17) && bit7(28) && bit7(30) && bit7(31)
        #endif
        return features
    }
}
