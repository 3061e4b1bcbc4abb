// Kernel levels: the registry of the kernel sets this build has (one line per level), which of
// them this CPU runs, and the one the process uses (lowered by YOLO_KERNEL_LEVEL).
import YOLOCore
import YOLOKernels
import YOLOKernelsBaseline
#if arch(x86_64)
import YOLOKernelsAVX2
import YOLOKernelsAVXVNNI
import YOLOKernelsAVX512
import YOLOKernelsAVX512VNNI
import YOLOKernelsAVX512BF16
import YOLOKernelsAVX512FP16
import YOLOKernelsAMX
#elseif arch(arm64) || arch(aarch64)
import YOLOKernelsDotProd
#endif

/// Every kernel set this build has, lowest first. Adding a level: a target exporting a
/// `KernelSet` (Sources/YOLOKernels<Level>/) and one line here.
enum KernelRegistry {
    static let all: [KernelSet] = {
        var sets = [KernelsBaseline.kernelSet]
        // Every level has the 16-bit pair GEMM of INT8 Winograd (avxvnni and avx512vnni their own,
        // vpdpwssd; dotprod takes NEON's smlal by element, and its direct conv + pool, from the
        // level below): the same exact sums, so INT8 Winograd and 10-bit inputs (`a10`) run, with
        // the same bits, at every level.
        #if arch(x86_64)
        sets.append(KernelsAVX2.kernelSet)
        sets.append(KernelsAVXVNNI.kernelSet)
        sets.append(KernelsAVX512.kernelSet)
        // + the BF16 GEMM, which needs AVX-512 BF16 besides, and the FP16 GEMM, which needs
        // AVX-512 FP16 (`HalfKernels.requires`, checked apart).
        var vnni = KernelsAVX512VNNI.kernelSet
        if let bf16 = KernelsAVX512BF16.bf16 { vnni = vnni.adding(bf16: bf16) }
        if let fp16 = KernelsAVX512FP16.fp16 { vnni = vnni.adding(fp16: fp16) }
        sets.append(vnni)
        // + the INT8 and BF16 GEMMs on AMX tiles; the rest is avx512vnni's.
        sets.append(KernelsAMX.kernelSet(over: vnni))
        #elseif arch(arm64) || arch(aarch64)
        var dotprod = KernelsDotProd.kernelSet
        if let pairs = sets[0].int16Pairs { dotprod = dotprod.adding(int16Pairs: pairs) }
        if let direct = sets[0].int16Direct { dotprod = dotprod.adding(int16Direct: direct) }
        sets.append(dotprod)
        #endif
        return sets
    }()
}

/// A level of the engine's own kernels, named as YOLO_KERNEL_LEVEL spells it: `baseline` (x86-64
/// SSE2), `avx2` (AVX2 + FMA), `avxvnni` (+ AVX-VNNI: INT8 dot products on ymm), `avx512`
/// (AVX-512 F/CD/BW/DQ/VL), `avx512vnni` (+ VNNI: INT8 dot products on zmm), `amx` (+ AMX tiles:
/// the INT8 and BF16 GEMMs; only where Linux grants the process tile state), `neon` (arm64),
/// `dotprod` (arm64 with the ARMv8.2 dot product: sdot). Which levels
/// exist is data (`KernelRegistry`); the static members are conveniences.
public struct KernelLevel: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    /// A level of this build (any case), or nil.
    public init?(rawValue: String) {
        let name = rawValue.lowercased()
        guard KernelRegistry.all.contains(where: { $0.name == name }) else { return nil }
        self.rawValue = name
    }
    private init(_ name: String) { rawValue = name }

    /// x86-64 without AVX (SSE2): every x86 CPU.
    public static let baseline = KernelLevel("baseline")
    /// AVX2 and FMA (Haswell, Zen and later).
    public static let avx2 = KernelLevel("avx2")
    /// AVX2 with AVX-VNNI's INT8 dot products (Alder Lake, Zen 5 and later).
    public static let avxVNNI = KernelLevel("avxvnni")
    /// AVX-512 F/CD/BW/DQ/VL (Skylake-SP, Zen 4 and later).
    public static let avx512 = KernelLevel("avx512")
    /// AVX-512 with VNNI's INT8 dot products (Cascade Lake, Ice Lake, Zen 4 and later).
    public static let avx512VNNI = KernelLevel("avx512vnni")
    /// AVX-512 VNNI with the INT8 and BF16 GEMMs on AMX tiles (Sapphire Rapids and later).
    public static let amx = KernelLevel("amx")
    /// ARMv8-A NEON: every arm64 CPU.
    public static let neon = KernelLevel("neon")
    /// ARMv8.2 with the dot-product instructions (Cortex-A55, A76 and later).
    public static let dotProduct = KernelLevel("dotprod")

    public var description: String { rawValue }

    /// Every level this build has, lowest first (whether or not this CPU runs it).
    public static var allCases: [KernelLevel] { KernelRegistry.all.map { KernelLevel($0.name) } }

    /// This level's kernels, or nil when this CPU (or build) cannot run it (for kernel tests and
    /// benchmarks).
    @_spi(Kernels) public var kernelSet: KernelSet? {
        guard let set = KernelRegistry.all.first(where: { $0.name == rawValue }),
              HostCPU.features(for: set.requires).isSuperset(of: set.requires) else { return nil }
        return set
    }

    /// The levels this build can run on this CPU, lowest first (asks Linux for AMX tile state
    /// where the CPU has it).
    public static let supported: [KernelLevel] = allCases.filter { $0.kernelSet != nil }

    /// The levels whose instructions this CPU and OS have, lowest first, without asking Linux for
    /// AMX tile state (`selected` asks only when it picks a level that uses it).
    static var hardwareSupported: [KernelLevel] {
        allCases.filter { level in
            KernelRegistry.all.contains { $0.name == level.rawValue && HostCPU.hardwareFeatures.isSuperset(of: $0.requires) }
        }
    }

    /// Why Linux will not let `level` run (it uses AMX and the process was refused tile state),
    /// or nil; asks only for a level that uses AMX.
    static func permissionRefusal(_ level: KernelLevel) -> String? {
        guard let set = KernelRegistry.all.first(where: { $0.name == level.rawValue }), set.requires.contains(.amx) else { return nil }
        return level.kernelSet == nil ? HostCPU.amxRefusal ?? "refused" : nil
    }

    /// The highest level this CPU can run.
    public static var detected: KernelLevel { supported.last! }

    /// The level the engine uses: `detected`, lowered by the environment variable
    /// `YOLO_KERNEL_LEVEL`. A level this CPU cannot run, or an unknown name, is reported on stderr
    /// once and ignored (the detected level is used).
    public static let selected: KernelLevel = {
        let request = getenv("YOLO_KERNEL_LEVEL").map { String(cString: $0) }
        let (level, message) = resolve(request: request, supported: hardwareSupported, refusal: permissionRefusal)
        if let message {
            // File descriptor 2: naming C's `stderr` is not concurrency-safe in Swift 6.
            let line = Array("yolo: \(message)\n".utf8)
            _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        }
        return level
    }()

    /// `YOLO_KERNEL_LEVEL`'s value `request` against the levels `supported` (lowest first):
    /// the level to use and, when the request is not honoured, why. `refusal` is asked about the
    /// level chosen, last (it may be a system call: Linux's AMX permission); a refused level gives
    /// way to the next one down, silently unless it was the one requested.
    static func resolve(request: String?, supported: [KernelLevel],
                        refusal: (KernelLevel) -> String? = { _ in nil }) -> (KernelLevel, message: String?) {
        let (level, message) = resolve(request: request, supported: supported)
        guard let why = refusal(level), let below = supported.lastIndex(of: level).flatMap({ $0 > 0 ? $0 - 1 : nil }) else {
            return (level, message)
        }
        let (next, more) = resolve(request: nil, supported: Array(supported[...below]), refusal: refusal)
        let requested = request?.lowercased() == level.rawValue
        return (next, requested ? "YOLO_KERNEL_LEVEL=\(request!): \(why); using \(next.rawValue)" : message ?? more)
    }

    static func resolve(request: String?, supported: [KernelLevel]) -> (KernelLevel, message: String?) {
        let best = supported.last!
        guard let request, !request.isEmpty else { return (best, nil) }
        let name = request.lowercased()
        if let level = supported.first(where: { $0.rawValue == name }) { return (level, nil) }
        guard allCases.contains(where: { $0.rawValue == name })
                || [KernelLevel.baseline, .avx2, .avxVNNI, .avx512, .avx512VNNI, .amx, .neon, .dotProduct].contains(where: { $0.rawValue == name }) else {
            let names = allCases.map { $0.rawValue }.joined(separator: ", ")
            return (best, "YOLO_KERNEL_LEVEL=\(request) is not a kernel level (\(names)); using \(best.rawValue)")
        }
        let names = supported.map { $0.rawValue }.joined(separator: ", ")
        return (best, "YOLO_KERNEL_LEVEL=\(request): this CPU cannot run it (it can: \(names)); using \(best.rawValue)")
    }

    /// Why this CPU cannot run this level (the features its set needs and this CPU lacks; for amx,
    /// which check failed), or nil when it can or the build has no such level.
    public var unavailableReason: String? {
        guard let set = KernelRegistry.all.first(where: { $0.name == rawValue }) else { return nil }
        let missing = set.requires.subtracting(HostCPU.features(for: set.requires))
        if missing.isEmpty { return nil }
        if missing.contains(.amx), let refusal = HostCPU.amxRefusal { return refusal }
        return "this CPU lacks \(missing.names.joined(separator: ", "))"
    }

    /// One line for reports: each level of this build this CPU cannot run, with why (empty when
    /// it runs them all).
    public static var unavailableSummary: String {
        allCases.compactMap { level in level.unavailableReason.map { "\(level.rawValue): \($0)" } }.joined(separator: "; ")
    }

    /// The kernels of `selected`.
    static var selectedKernels: KernelSet { selected.kernelSet! }
}
