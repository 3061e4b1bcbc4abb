// What the CPU this process runs on can do (x86: CPUID + XGETBV; arm64: NEON always, the
// ARMv8.2 extensions from the auxiliary vector) and how to name it in a plan cache key.
import YOLOCore
import YOLOKernels
import Synchronization
internal import CCPUID

enum HostCPU {
    /// The features of this CPU that kernel sets may require: `.amx` only once Linux has granted
    /// this process the tile state, which only `features(for:)` asks for.
    static var features: CPUFeatureSet {
        guard hardwareFeatures.contains(.amx) else { return hardwareFeatures }
        return amxAsked.load(ordering: .acquiring) && amxPermission == nil ? hardwareFeatures : hardwareFeatures.subtracting(.amx)
    }
    /// The features a kernel set that `requires` these runs with: Linux is asked for AMX tile
    /// state (once) only for a set that uses it, so a process held below amx (`YOLO_KERNEL_LEVEL`)
    /// never asks.
    static func features(for requires: CPUFeatureSet) -> CPUFeatureSet {
        guard requires.contains(.amx), hardwareFeatures.contains(.amx) else { return features }
        return amxPermission == nil ? hardwareFeatures : hardwareFeatures.subtracting(.amx)
    }
    /// `.amx` where the CPU and OS have it, whether or not Linux grants it (CPUID and XGETBV only).
    static var hardwareFeatures: CPUFeatureSet { detected.features }
    /// Why the amx level is not offered, or nil when it is (and on arm64, which has no such
    /// level); asks Linux where the CPU has AMX.
    static var amxRefusal: String? { detected.amxRefusal ?? (hardwareFeatures.contains(.amx) ? amxPermission : nil) }
    private static let detected: (features: CPUFeatureSet, amxRefusal: String?) = detect()
    /// Whether `amxPermission` has been asked for.
    private static let amxAsked = Atomic<Bool>(false)
    /// Linux's permission for this process's tile state, asked once (a system call): nil when
    /// granted, else why not.
    private static let amxPermission: String? = {
        defer { amxAsked.store(true, ordering: .releasing) }
        #if arch(x86_64)
        let error = yolo_amx_request_permission()
        guard error == 0 else {
            return "Linux refused the AMX tile state (arch_prctl(ARCH_REQ_XCOMP_PERM): \(String(cString: strerror(error))))"
        }
        #endif
        return nil
    }()

    /// A short description that identifies the CPU model for cached measurements: vendor
    /// brand string (x86) or implementer/part (arm64), family/model/stepping, features, cores.
    static let identity: String = {
        var parts: [String] = []
        #if arch(x86_64)
        parts.append(brandString())
        var r: [UInt32] = [0, 0, 0, 0]
        if yolo_cpuid(1, 0, &r) != 0 {
            let eax = r[0]
            let family = Int((eax >> 8) & 0xF) + (((eax >> 8) & 0xF) == 0xF ? Int((eax >> 20) & 0xFF) : 0)
            let model = Int((eax >> 4) & 0xF) | (Int((eax >> 16) & 0xF) << 4)
            parts.append("family \(family) model \(model) stepping \(Int(eax & 0xF))")
        }
        #else
        parts.append(armIdentity())
        #endif
        // (The CPU's, not this process's: the key does not depend on whether AMX was asked for.)
        parts.append("features \(hardwareFeatures.rawValue)")
        parts.append("cores \(availableCores())")
        return parts.joined(separator: "; ")
    }()

    static func detect() -> (features: CPUFeatureSet, amxRefusal: String?) {
        var f: CPUFeatureSet = []
        #if arch(x86_64)
        let noAVX = "this CPU or OS has no AVX (the amx level needs AVX-512 too)"
        var r: [UInt32] = [0, 0, 0, 0]
        guard yolo_cpuid(1, 0, &r) != 0 else { return (f, noAVX) }
        let ecx1 = r[2]
        let bit1 = { (n: UInt32) in ecx1 & (1 << n) != 0 }
        // FMA, MOVBE, OSXSAVE, AVX, F16C
        guard bit1(27), bit1(28) else { return (f, noAVX) }
        let haswellLeaf1 = bit1(12) && bit1(22) && bit1(29)
        let xcr0 = yolo_xgetbv0()
        let ymmState = xcr0 & 0x6 == 0x6              // SSE + AVX state
        let zmmState = xcr0 & 0xE6 == 0xE6            // + opmask, ZMM_Hi256, Hi16_ZMM
        guard yolo_cpuid(7, 0, &r) != 0 else { return (f, "this CPU has no CPUID leaf 7 (no AVX2, AVX-512 or AMX)") }
        let (ebx7, ecx7, edx7) = (r[1], r[2], r[3])
        let bit7 = { (n: UInt32) in ebx7 & (1 << n) != 0 }
        var sub1 = [UInt32](repeating: 0, count: 4)
        _ = yolo_cpuid(7, 1, &sub1)
        let lzcnt = yolo_cpuid(0x8000_0001, 0, &r) != 0 && r[2] & (1 << 5) != 0
        // AVX2, BMI1, BMI2
        let avx2 = ymmState && haswellLeaf1 && lzcnt && bit7(5) && bit7(3) && bit7(8)
        if avx2 { f.insert(.avx2) }
        if avx2 && sub1[0] & (1 << 4) != 0 { f.insert(.avxVNNI) }
        // AVX512F, DQ, CD, BW, VL
        if avx2 && zmmState && bit7(16) && bit7(17) && bit7(28) && bit7(30) && bit7(31) {
            f.insert(.avx512)
            if ecx7 & (1 << 11) != 0 { f.insert(.avx512VNNI) }
            if sub1[0] & (1 << 5) != 0 { f.insert(.avx512BF16) }
            if edx7 & (1 << 23) != 0 { f.insert(.avx512FP16) }
        }
        let amxRefusal = amx(edx7: edx7, xcr0: xcr0, others: f)
        if amxRefusal == nil { f.insert(.amx) }
        return (f, amxRefusal)
        #elseif arch(arm64) || arch(aarch64)
        // AT_HWCAP (16): HWCAP_FPHP (1 << 9), HWCAP_ASIMDHP (1 << 10), HWCAP_ASIMDDP (1 << 20).
        let hwcap = yolo_hwcap()
        if hwcap & (1 << 20) != 0 { f.insert(.dotProduct) }
        if hwcap & (1 << 10) != 0 { f.insert(.fp16) }
        return (f, nil)
        #else
        return (f, nil)
        #endif
    }

    #if arch(x86_64)
    /// Whether this CPU and OS can run the amx level: nil, or why not. AMX-BF16, AMX-TILE, AMX-INT8
    /// (CPUID.7.0:EDX bits 22, 24, 25), the OS saving tile state (XCR0 bits 17 XTILECFG and 18
    /// XTILEDATA), and what the level's other kernels need (`others`: the avx512vnni level and
    /// AVX-512 BF16). Linux's permission for the process is asked later (`amxPermission`).
    static func amx(edx7: UInt32, xcr0: UInt64, others: CPUFeatureSet) -> String? {
        let missing = [(22, "AMX-BF16"), (24, "AMX-TILE"), (25, "AMX-INT8")].filter { edx7 & (1 << UInt32($0.0)) == 0 }.map { $0.1 }
        guard missing.isEmpty else { return "this CPU has no \(missing.joined(separator: ", "))" }
        guard xcr0 & (3 << 17) == 3 << 17 else { return "the OS does not enable AMX tile state (XCR0 bits 17, 18)" }
        guard others.isSuperset(of: [.avx2, .avx512, .avx512VNNI, .avx512BF16]) else {
            return "this CPU has AMX but not all of AVX-512 F/CD/BW/DQ/VL, VNNI and BF16, which the amx level needs too"
        }
        return nil
    }
    #endif

    #if arch(x86_64)
    /// CPUID leaves 0x80000002-4, trimmed ("AMD EPYC 9R45", "Intel(R) Xeon(R) ...").
    static func brandString() -> String {
        var bytes: [UInt8] = []
        var r: [UInt32] = [0, 0, 0, 0]
        for leaf: UInt32 in 0x8000_0002...0x8000_0004 {
            guard yolo_cpuid(leaf, 0, &r) != 0 else { return "unknown x86-64" }
            for word in r { for i in 0..<4 { bytes.append(UInt8((word >> (8 * UInt32(i))) & 0xFF)) } }
        }
        let text = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        return text.split(separator: " ").joined(separator: " ")
    }
    #else
    /// "CPU implementer" and "CPU part" of the first core in /proc/cpuinfo (e.g. 0x41 0xd0b: an
    /// Arm Cortex-A76), or "unknown arm64".
    static func armIdentity() -> String {
        // /proc files report a size of 0: read until the end (at most 1 MiB).
        let fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "unknown arm64" }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, 4096) }
            if n <= 0 { break }
            bytes += chunk.prefix(n)
        }
        var found: [String] = []
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            for key in ["CPU implementer", "CPU part", "CPU variant", "CPU revision"] where line.hasPrefix(key) {
                if let colon = line.firstIndex(of: ":") { found.append("\(key) \(line[line.index(after: colon)...].split(separator: " ").joined())") }
            }
            if found.count >= 4 { break }
        }
        return found.isEmpty ? "unknown arm64" : found.joined(separator: ", ")
    }
    #endif
}
