import YOLOCore

/// What the engine was built for and what it runs on, for benchmarks and bug reports.
public enum BuildInfo {
    /// The package's version.
    public static let version = "0.1.0"

    /// The kernel levels compiled into this build, the registry's (`KernelLevel.supported`: those
    /// this CPU runs).
    public static var kernelLevels: [KernelLevel] { KernelLevel.allCases }

    /// The instruction set the Swift kernels were compiled for.
    public static var kernelTarget: String {
        #if YOLO_TARGET_CPU_SET
        let cpu = "the build machine's CPU (YOLO_TARGET_CPU was set)"
        #else
        let cpu = "portable baseline"
        #endif
        #if arch(x86_64)
        return "x86_64, \(cpu)"
        #elseif arch(arm64)
        return "aarch64 (NEON), \(cpu)"
        #else
        return "other, \(cpu)"
        #endif
    }

    /// OpenBLAS's kernel family for this CPU (e.g. "Haswell", "SkylakeX", "Zen", "ARMV8").
    public static var blasCoreName: String {
        OpenBLAS.coreName
    }

    /// OpenBLAS's build configuration string.
    public static var blasConfig: String {
        OpenBLAS.config
    }
}
