// swift-tools-version:6.0
import PackageDescription

// Package.swift and Package@swift-6.0.swift (for Swift 6.0 and 6.1, e.g. Debian stable's and
// Raspberry Pi OS's `swiftlang` 6.0.3) must change together: the same products, targets,
// dependencies and resources; only how the x86 CPU flags are spelled differs (see there).
// scripts/check-manifests.sh (run by scripts/test) fails when their targets or products differ.
//
// This manifest is for Swift 6.0 and 6.1 (SwiftPM picks Package.swift from 6.2 on). It differs in
// one thing: Swift 6.0's compiler hands `-target-cpu` to its C importer as `-mcpu=`, which clang
// refuses for x86 ("error: unsupported option '-mcpu=' for target 'x86_64-pc-linux-gnu'"), so on
// x86 the CPU is named with `-Xcc -march=`: Swift takes its code generation CPU and features
// from the C importer's target, so the AVX2, AVX-512 and AVX-512 VNNI levels and the BF16 GEMM get
// the same instructions.

// Release builds are portable by default (baseline x86-64 / ARMv8). The hot GEMMs run in
// OpenBLAS, which picks its own kernels at run time, so the portable build loses little.
// To let the Swift kernels use every instruction of the build machine, set
// YOLO_TARGET_CPU=native (or a CPU name such as haswell, znver4, cortex-a72) when building.
// The manifest is compiled for the machine that builds. A cross build (scripts/arm-linux-check.sh
// builds for arm64 on x86_64) names the target's architecture in YOLO_TARGET_ARCH (x86_64 or
// aarch64); the CPU flags below follow the target, not the builder.
#if arch(x86_64)
let hostArch = "x86_64"
#elseif arch(arm64)
let hostArch = "aarch64"
#else
let hostArch = "other"
#endif
let targetArch = Context.environment["YOLO_TARGET_ARCH"].flatMap { $0.isEmpty ? nil : $0 } ?? hostArch
let targetIsX86 = targetArch == "x86_64", targetIsARM64 = targetArch == "aarch64" || targetArch == "arm64"
let targetCPU = Context.environment["YOLO_TARGET_CPU"].flatMap { $0.isEmpty ? nil : $0 }
func cpuFlag(_ cpu: String) -> [String] { targetIsX86 ? ["-Xcc", "-march=" + cpu] : ["-target-cpu", cpu] }
let cpuFlags: [SwiftSetting] = targetCPU.map { [.unsafeFlags(cpuFlag($0)), .define("YOLO_TARGET_CPU_SET")] } ?? []
let engineSettings: [SwiftSetting] = cpuFlags

// GEMM kernel levels: one thin target per CPU level, each instantiating the generic packed GEMM
// of YOLOKernels (@inlinable) for its own CPU; the engine picks one at run time (Sources/YOLO/Gemm).
// They are always optimized, also in debug builds, so that tests run the real kernels (the
// unspecialized generic code would be orders of magnitude slower). Caveat: an incremental debug
// build does not recompile them when only the body of an @inlinable function in YOLOKernels
// changed; after editing Sources/YOLOKernels/GEMM/PackedGemm.swift, touch Sources/YOLOKernels{Baseline,AVX2,AVX512}/*
// (release builds, whole-module, are not affected). An arm64 target gets no x86
// flags (there the baseline target is the NEON level, the x86 ones are empty), and the reverse.
let optimized: SwiftSetting = .unsafeFlags(["-O"], .when(configuration: .debug))
func levelSettings(_ cpu: String, when: Bool) -> [SwiftSetting] {
    [optimized] + (when ? [.unsafeFlags(cpuFlag(cpu))] : [])
}
// The levels, in the engine's dependency order: (target, CPU for `-target-cpu`, whether the
// target builds for that CPU, C modules). Targets and the engine's dependencies come from this
// table; scripts/check-manifests.sh checks that every Sources/YOLOKernels<Level> is in it.
let kernelLevels: [(name: String, cpu: String, when: Bool, cModules: [Target.Dependency])] = [
    // No CPU flag: baseline x86-64 on x86, NEON (ARMv8-A) on arm64.
    ("YOLOKernelsBaseline", "", false, ["CHints", "CDot"]),
    ("YOLOKernelsAVX2", "haswell", targetIsX86, ["CHints", "CDot"]),
    // AVX2 + AVX-VNNI (VEX vpdpbusd/vpdpwssd on ymm): Alder Lake and later client cores,
    // Gracemont (N100), Sierra Forest, Zen 5.
    ("YOLOKernelsAVXVNNI", "alderlake", targetIsX86, ["CHints", "CDot"]),
    // Any AVX-512 CPU with F/CD/BW/DQ/VL (Skylake-SP and later, Zen 4 and later); not znver4/5.
    ("YOLOKernelsAVX512", "skylake-avx512", targetIsX86, ["CHints", "CDot"]),
    // The same + AVX-512 VNNI (vpdpbusd): Cascade Lake, Ice Lake and later, Zen 4 and later.
    ("YOLOKernelsAVX512VNNI", "cascadelake", targetIsX86, ["CHints", "CDot"]),
    // ARMv8.2 + dot product (sdot): Cortex-A55, A76 (Raspberry Pi 5), Neoverse N1 and later.
    ("YOLOKernelsDotProd", "cortex-a76", targetIsARM64, ["CHints", "CDot"]),
    // The BF16 GEMM: + AVX-512 BF16 (vdpbf16ps): Cooper Lake, Sapphire Rapids, Zen 4 and later.
    ("YOLOKernelsAVX512BF16", "cooperlake", targetIsX86, ["CHints", "CDot"]),
    // The FP16 GEMM: + AVX-512 FP16 (vfmadd231ph): Sapphire Rapids, Emerald Rapids and later Xeons.
    ("YOLOKernelsAVX512FP16", "sapphirerapids", targetIsX86, ["CHints", "CDot"]),
    // The amx level: avx512vnni's set with its INT8 and BF16 GEMMs on AMX tiles (packing and
    // stores built as the BF16 GEMM is, for vcvtne2ps2bf16; the tiles through CAMX, Intel AMX
    // tile instructions as per-function target attributes).
    ("YOLOKernelsAMX", "cooperlake", targetIsX86, ["CAMX", "CDot"]),
]
let kernelLevelTargets: [Target] = kernelLevels.map {
    .target(name: $0.name, dependencies: ["YOLOKernels"] + $0.cModules, swiftSettings: levelSettings($0.cpu, when: $0.when))
}
// Built apart from `Package(...)`: inside it, Swift 6.0 cannot type-check the expression in time.
var engineDependencies: [Target.Dependency] = ["YOLOCore", "YOLOKernels"]
engineDependencies += kernelLevels.map { .byName(name: $0.name) }
engineDependencies += ["CCPUID", "CHints", "COpenBLAS"]

let package = Package(
    name: "yolo-swift",
    products: [
        // Public API: YOLO (the engine, detection and the shared types; each also on its own)
        .library(name: "YOLO", targets: ["YOLO"]),
        .library(name: "YOLOEngine", targets: ["YOLOEngine"]),
        .library(name: "YOLOImage", targets: ["YOLOImage"]),
        .library(name: "YOLOStream", targets: ["YOLOStream"]),
        .executable(name: "yolo", targets: ["yolo"]),
        .executable(name: "yolo-bench", targets: ["yolo-bench"]),
    ],
    targets: [
        // System libraries (Debian packages), each a module map and a one-line shim.
        .systemLibrary(name: "COpenBLAS", providers: [.apt(["libopenblas0"])]),
        .systemLibrary(name: "CJPEG", pkgConfig: "libjpeg", providers: [.apt(["libjpeg-dev"])]),
        .systemLibrary(name: "CPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev", "libdeflate-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),

        // Implementation
        // Compute kernels: free functions over raw buffers; imports nothing, so they also build
        // with Embedded Swift (aarch64-none-none-elf). Optimized in debug builds too: loading a
        // model (its weights folded, transformed and packed here) took 3 s unoptimized, paid by
        // every test that loads yolov3-tiny or runs the yolo tool.
        .target(name: "YOLOKernels", swiftSettings: engineSettings + [optimized]),
        // CPU hints Swift has no words for: prefetch (micro-kernels) and spin-wait pause (header only).
        .systemLibrary(name: "CHints"),
        // 8- and 16-bit dot-product instructions for the INT8 kernels (header only: x86 and ARM intrinsics).
        .systemLibrary(name: "CDot"),
        // Intel AMX tile instructions for the amx level (header only, per-function target attributes).
        .systemLibrary(name: "CAMX"),
        // Each kernel instruction's peak rate, measured by yolo-bench (header only, per-function target attributes).
        .systemLibrary(name: "CPeak"),
        // CPUID/XGETBV for picking the kernel level (header only).
        .systemLibrary(name: "CCPUID"),
        // Shared types and the platform: detections, pixel formats, hardened file access, locks,
        // threads. Imports only the C library (the Embedded build too).
        .target(name: "YOLOCore", swiftSettings: engineSettings),
        // The engine: cfg, layers, planner, algorithms, kernel sets, Model, Session.
        .target(name: "YOLOEngine", dependencies: engineDependencies,
                swiftSettings: engineSettings),
        // Detection: letterbox, decoding, NMS, Detector.
        .target(name: "YOLODetection", dependencies: ["YOLOCore", "YOLOEngine"], swiftSettings: engineSettings),
        // The umbrella: re-exports the three above.
        .target(name: "YOLO", dependencies: ["YOLOCore", "YOLOEngine", "YOLODetection"], swiftSettings: engineSettings),
        .target(name: "YOLOImage", dependencies: ["YOLOCore", "CJPEG", "CPNG"], swiftSettings: cpuFlags),
        // The tools' text formats: JSON lines of detections, class lists.
        .target(name: "YOLOText", dependencies: ["YOLO", "YOLOCore"], swiftSettings: cpuFlags),
        // `yolo serve`: the detector over HTTP (libmicrohttpd), DeepStack-compatible, with a live view.
        .target(name: "YOLOServe", dependencies: ["YOLO", "YOLOCore", "YOLOImage", "YOLOText", "CMicroHTTPD"],
                swiftSettings: cpuFlags),
        // Video: frames through several detectors of one model, in order, with tracking (not in
        // the Embedded build).
        .target(name: "YOLOStream", dependencies: ["YOLO"], swiftSettings: cpuFlags),
        .executableTarget(name: "yolo", dependencies: ["YOLO", "YOLOImage", "YOLOText", "YOLOServe", "YOLOStream"],
                          swiftSettings: cpuFlags),
        .executableTarget(name: "yolo-bench", dependencies: ["YOLO", "YOLOKernels", "YOLOImage", "YOLOText", "COpenBLAS", "CPeak"], path: "Benchmarks/yolo-bench",
                          swiftSettings: cpuFlags),

        // Tests
        // The naive references, seeded random inputs, fixture parsers and comparisons of the test
        // suites and of scripts/arm-check.sh's aarch64 harness; imports nothing (Embedded Swift
        // builds it too). Optimized in debug builds as well: the references are long loops.
        .target(name: "YOLOReference", swiftSettings: [optimized]),
        .testTarget(name: "YOLOTests", dependencies: ["YOLO", "YOLOCore", "YOLOEngine", "YOLODetection", "YOLOKernels", "YOLOReference",
                                            "YOLOStream"],
                    resources: [.copy("Fixtures")]),
        .testTarget(name: "YOLOImageTests", dependencies: ["YOLOImage", "YOLO", "YOLOReference"], resources: [.copy("Fixtures")]),
        .testTarget(name: "yoloTests", dependencies: ["yolo", "yolo-bench", "YOLOReference", "YOLOServe", "YOLOText"]),
        // End to end: image files through the engine, checked against Darknet's outputs.
        .testTarget(name: "IntegrationTests", dependencies: ["YOLO", "YOLOImage", "YOLOReference"], resources: [.copy("Fixtures")]),
    ],
    swiftLanguageModes: [.v6]
)
package.targets += kernelLevelTargets
