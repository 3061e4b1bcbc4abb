import XCTest
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore
import YOLOKernels
import YOLOReference

/// The packed GEMM of every kernel level this CPU can run (so an AVX-512 machine also tests
/// AVX2 and baseline), the BF16 GEMM where this CPU has AVX-512 BF16, the FP16 GEMM and every
/// level's GEMM on FP16-stored weights, against a naive double-precision reference (on the inputs
/// rounded as each GEMM rounds them: BF16KernelTests.swift, FP16KernelTests.swift,
/// FP16WeightsTests.swift).
final class GemmKernelTests: XCTestCase {
    struct Shape: CustomStringConvertible {
        var m, n, k: Int
        var ldbPad = 0, ldcPad = 0
        var description: String { "\(m)x\(n)x\(k) ldb+\(ldbPad) ldc+\(ldcPad)" }
    }

    /// The GEMM of every kernel set this CPU runs, then the BF16 and FP16 GEMMs it runs.
    var levels: [GemmFunctions] {
        KernelLevel.supported.map { level in
            guard let k = level.kernelSet else { XCTFail("\(level) is supported but has no kernels"); fatalError() }
            return k.gemm
        } + bf16Levels + fp16Levels + fp16WeightsLevels
    }

    /// Runs `kern` on `s` and compares with the naive product (YOLOReference): every entry when the product is
    /// small, else `samples` entries (always including the four corners and the last row and
    /// column). C starts as NaN: every entry of the m x n block must be written, the padding
    /// columns (ldc > n) left alone.
    /// With `rowRanges`, C is computed one range of rows at a time (as threads would), and rows
    /// outside them must stay untouched.
    func check(_ kern: GemmFunctions, _ s: Shape, samples: Int = 4000, rowRanges: [Range<Int>]? = nil,
               file: StaticString = #filePath, line: UInt = #line) {
        let (m, n, k) = (s.m, s.n, s.k)
        let ldb = n + s.ldbPad, ldc = n + s.ldcPad
        var rng = SeededRandom(seed: UInt64(m &* 31 &+ n &* 17 &+ k &* 7 &+ s.ldbPad))
        let a = rng.floats(m * k)
        let b = rng.floats(k * ldb)
        // The BF16 GEMM's reference: the same products of the inputs rounded to bfloat16.
        let rounded = bf16Levels.contains { $0.level == kern.level }
        // The FP16 GEMM's: the inputs rounded to FP16, and sums in FP16 over blocks of at most kc
        // steps: each of a block's steps rounds once (2^-11 of that partial sum at most).
        let half = fp16Levels.contains { $0.level == kern.level }
        // FP16-stored weights' (FP16WeightsTests.swift): A rounded to FP16, FP32 arithmetic.
        let weightsHalf = fp16WeightsLevels.contains { $0.level == kern.level }
        let (ra, rb) = rounded ? (a.map(bfloat16Rounded), b.map(bfloat16Rounded))
            : half ? (a.map(fp16Rounded), b.map(fp16Rounded)) : weightsHalf ? (a.map(fp16Rounded), b) : (a, b)
        var c = [Float](repeating: .nan, count: m * ldc)
        var packed = [Float](repeating: .nan, count: kern.packedASize(m: m, k: k))
        var scratch = [Float](repeating: .nan, count: kern.scratchSize(m: m, n: n, k: k))
        a.withUnsafeBufferPointer { pa in
            packed.withUnsafeMutableBufferPointer { kern.packA(pa.baseAddress!, lda: k, m: m, k: k, into: $0.baseAddress!) }
        }
        packed.withUnsafeBufferPointer { pa in b.withUnsafeBufferPointer { pb in c.withUnsafeMutableBufferPointer { pc in
            scratch.withUnsafeMutableBufferPointer { ps in
                if let rowRanges {
                    for rows in rowRanges {
                        kern.gemm(m: m, n: n, k: k, packedA: pa.baseAddress!, b: pb.baseAddress!, ldb: ldb,
                                  c: pc.baseAddress!, ldc: ldc, scratch: ps.baseAddress!, rows: rows)
                    }
                } else {
                    kern.gemm(m: m, n: n, k: k, packedA: pa.baseAddress!, b: pb.baseAddress!, ldb: ldb,
                              c: pc.baseAddress!, ldc: ldc, scratch: ps.baseAddress!)
                }
            }
        } } }
        var entries: [(Int, Int)]
        if m * n * k <= 1 << 20 || m * n <= samples {
            entries = (0..<m).flatMap { i in (0..<n).map { (i, $0) } }
        } else {
            entries = [(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)]
            entries += (0..<n).map { (m - 1, $0) }.prefix(samples / 4)
            entries += (0..<m).map { ($0, n - 1) }.prefix(samples / 4)
            var pick = SeededRandom(seed: 99)
            while entries.count < samples {
                entries.append((pick.int(below: m), pick.int(below: n)))
            }
        }
        if let rowRanges {
            let computed = Set(rowRanges.flatMap { Array($0) })
            entries = entries.filter { computed.contains($0.0) }
            for i in 0..<m where !computed.contains(i) {
                XCTAssertTrue((0..<n).allSatisfy { c[i * ldc + $0].isNaN }, "\(kern.level) \(s): row \(i) outside \(rowRanges) was written",
                              file: file, line: line)
            }
        }
        let tolerance = Double(Float.ulpOfOne) * (4 * Double(k).squareRoot() + 4)
            + (half ? Double(min(k, kern.kc) + 1) * 0x1p-11 : 0)
        var failures = 0
        for (i, j) in entries {
            let (ref, magnitude) = Naive.gemmEntry(ra, lda: k, rb, ldb: ldb, k: k, i: i, j: j)
            let got = Double(c[i * ldc + j])
            // (FP16 sums below 2^-14 are denormals: each rounding off by up to 2^-25.)
            let floor = half ? Double(min(k, kern.kc) + 1) * 0x1p-25 : 1e-30
            if !(abs(got - ref) <= tolerance * magnitude + floor) {
                failures += 1
                if failures <= 3 {
                    XCTFail("\(kern.level) \(s): C[\(i)][\(j)] = \(got), expected \(ref) (sum |a||b| \(magnitude))", file: file, line: line)
                }
            }
        }
        for i in 0..<m where s.ldcPad > 0 {
            for j in n..<ldc where !c[i * ldc + j].isNaN {
                XCTFail("\(kern.level) \(s): padding C[\(i)][\(j)] was written", file: file, line: line)
                return
            }
        }
        XCTAssertEqual(failures, 0, "\(kern.level) \(s): \(failures) of \(entries.count) entries wrong", file: file, line: line)
    }

    /// Tails around the register tile (MR, NR, the SIMD width W) and the cache blocks (KC, NC); m, n, k = 1;
    /// ldb > n and ldc > n.
    func testTailsAndStrides() {
        for kern in levels {
            let (mr, nr, kc, nc, w) = (kern.mr, kern.nr, kern.kc, kern.nc, kern.width)
            var shapes: [Shape] = []
            let ms = [1, 2, mr - 1, mr, mr + 1, 2 * mr + 3]
            // 2W and 2W + 1: the two-vector tail (runVector2) alone, and followed by a column.
            let ns = [1, 3, w - 1, w, w + 1, 2 * w, 2 * w + 1, nr - 1, nr, nr + 1, nr + w, nr + w + 1, 2 * nr + 2 * w, 3 * nr + 5]
            var pad = 0
            for m in ms {
                for n in ns {
                    for k in [1, 2, 7] {
                        shapes.append(Shape(m: m, n: n, k: k, ldbPad: pad % 3 == 1 ? 5 : 0, ldcPad: pad % 4 == 2 ? 3 : 0))
                        pad += 1
                    }
                }
            }
            for k in [kc - 1, kc, kc + 1, 2 * kc - 1, 2 * kc, 2 * kc + 1, 3 * kc + 7] {
                shapes.append(Shape(m: mr + 1, n: nr + 3, k: k, ldbPad: 1, ldcPad: 2))
                shapes.append(Shape(m: 1, n: 1, k: k))
            }
            for n in [nc - 1, nc, nc + 1, 2 * nc + nr + 1] {
                shapes.append(Shape(m: mr + 2, n: n, k: 3, ldbPad: 7, ldcPad: 1))
                shapes.append(Shape(m: 1, n: n, k: kc + 1))
            }
            shapes.append(Shape(m: 2 * mr + 1, n: nc + nr + 1, k: kc + 5, ldbPad: 2, ldcPad: 2))
            for s in shapes { check(kern, s) }
        }
    }

    /// Rows computed range by range (ranges starting at multiples of MR), as threads sharing
    /// one packed A would; rows left out stay untouched.
    func testRowRanges() {
        for kern in levels {
            let mr = kern.mr, m = 3 * kern.mr + 2
            for k in [1, 5, kern.kc + 3] {
                let s = Shape(m: m, n: 2 * kern.nr + kern.width / 2 + 3, k: k, ldbPad: 1, ldcPad: 2)
                check(kern, s, rowRanges: [0..<mr, mr..<3 * mr, 3 * mr..<m])
                check(kern, s, rowRanges: [mr..<2 * mr + 1])
                check(kern, s, rowRanges: [2 * mr..<m, 0..<0])
            }
        }
    }

    /// k = 0: C is zeroed; m = 0 or n = 0: nothing happens.
    func testEmpty() {
        for kern in levels {
            var c = [Float](repeating: .nan, count: 12)
            let packed = [Float](repeating: 0, count: max(1, kern.packedASize(m: 3, k: 0)))
            let b = [Float](repeating: 1, count: 4)
            var scratch = [Float](repeating: 0, count: kern.scratchSize(m: 3, n: 4, k: 0))
            kern.gemm(m: 3, n: 4, k: 0, packedA: packed, b: b, ldb: 4, c: &c, ldc: 4, scratch: &scratch)
            XCTAssertEqual(c, [Float](repeating: 0, count: 12), "\(kern.level)")
            c = [Float](repeating: 7, count: 12)
            kern.gemm(m: 0, n: 4, k: 2, packedA: packed, b: b, ldb: 4, c: &c, ldc: 4, scratch: &scratch)
            kern.gemm(m: 3, n: 0, k: 2, packedA: packed, b: b, ldb: 4, c: &c, ldc: 4, scratch: &scratch)
            XCTAssertEqual(c, [Float](repeating: 7, count: 12), "\(kern.level)")
        }
    }

    /// yolov3-tiny's GEMMs (m x n x k; im2col and 1x1 convs), n cut to a sub-block for the
    /// largest (still past several NC blocks), checked on sampled entries.
    func testYOLOv3TinyShapes() {
        let shapes: [(Int, Int, Int)] = [
            (16, 173056, 27), (32, 43264, 144), (64, 10816, 288), (128, 2704, 576), (256, 676, 1152),
            (512, 169, 2304), (1024, 169, 4608), (256, 169, 1024), (512, 169, 2304), (255, 169, 512),
            (128, 169, 256), (256, 676, 384), (255, 676, 256),
        ]
        // Under qemu (scripts/arm-linux-check.sh) the selected level only: 100 s for all five GEMMs
        // there, and scripts/arm-check.sh runs each arm64 GEMM over its shapes under qemu already.
        let emulated = ProcessInfo.processInfo.environment["YOLO_TEST_EMULATED"] != nil
        for kern in emulated ? [KernelLevel.selected.kernelSet!.gemm] : levels {
            for (m, n, k) in shapes {
                check(kern, Shape(m: m, n: min(n, 2 * kern.nc + 77), k: k), samples: 1500)
            }
        }
    }

    /// Winograd's products: (filters x channels) · (channels x tiles) with few tiles.
    func testWinogradShapes() {
        for kern in levels {
            for (m, n, k) in [(256, 49, 128), (512, 49, 256), (1024, 49, 512), (128, 169, 64), (256, 169, 384), (64, 2704, 32)] {
                check(kern, Shape(m: m, n: n, k: k), samples: 1500)
            }
        }
    }

    // MARK: levels

    func testLevelsOfThisCPU() {
        let supported = KernelLevel.supported
        XCTAssertFalse(supported.isEmpty)
        XCTAssertEqual(KernelLevel.detected, supported.last)
        XCTAssertTrue(supported.contains(KernelLevel.selected))
        XCTAssertEqual(KernelLevel.selected.kernelSet?.name, KernelLevel.selected.rawValue)
        #if arch(x86_64)
        XCTAssertEqual(supported.first, .baseline)
        XCTAssertFalse(supported.contains(.neon))
        XCTAssertNil(KernelLevel.neon.kernelSet, "no NEON on x86")
        XCTAssertNil(KernelLevel.dotProduct.kernelSet, "no sdot on x86")
        let features = HostCPU.features
        let cpu = (avx2: features.contains(.avx2), avx512: features.contains(.avx512))
        XCTAssertEqual(supported.contains(.avx2), cpu.avx2)
        XCTAssertEqual(supported.contains(.avx512), cpu.avx512)
        if !cpu.avx512 { XCTAssertNil(KernelLevel.avx512.kernelSet, "AVX-512 offered to a CPU without it") }
        if !cpu.avx2 { XCTAssertNil(KernelLevel.avx2.kernelSet, "AVX2 offered to a CPU without it") }
        if cpu.avx512 { XCTAssertTrue(cpu.avx2, "AVX-512 level implies the AVX2 level") }
        // Cross-check with what the kernel reports in /proc/cpuinfo (Linux).
        if let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
           let flagsLine = info.split(separator: "\n").first(where: { $0.hasPrefix("flags") }) {
            let flags = Set(flagsLine.split(separator: " ").map(String.init))
            XCTAssertEqual(cpu.avx2, ["avx2", "fma", "bmi1", "bmi2", "abm", "movbe", "f16c"].allSatisfy(flags.contains),
                           "avx2 vs /proc/cpuinfo")
            XCTAssertEqual(cpu.avx512, cpu.avx2 && ["avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"].allSatisfy(flags.contains),
                           "avx512 vs /proc/cpuinfo")
            XCTAssertEqual(features.contains(.avx512VNNI), cpu.avx512 && flags.contains("avx512_vnni"), "VNNI vs /proc/cpuinfo")
            XCTAssertEqual(features.contains(.avx512BF16), cpu.avx512 && flags.contains("avx512_bf16"), "BF16 vs /proc/cpuinfo")
            XCTAssertEqual(features.contains(.avxVNNI), cpu.avx2 && flags.contains("avx_vnni"), "AVX-VNNI vs /proc/cpuinfo")
        }
        #elseif arch(arm64) || arch(aarch64)
        // dotprod where the auxiliary vector says so (HWCAP_ASIMDDP), cross-checked with /proc/cpuinfo.
        let dot = HostCPU.features.contains(.dotProduct)
        XCTAssertEqual(supported, dot ? [.neon, .dotProduct] : [.neon])
        if let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
           let line = info.split(separator: "\n").first(where: { $0.hasPrefix("Features") }) {
            XCTAssertEqual(dot, line.split(separator: " ").contains("asimddp"), "dotprod vs /proc/cpuinfo")
        }
        XCTAssertNil(KernelLevel.avx2.kernelSet)
        XCTAssertNil(KernelLevel.avx512.kernelSet)
        #endif
        for level in KernelLevel.allCases {
            XCTAssertEqual(level.kernelSet != nil, supported.contains(level), "\(level)")
        }
    }

    /// YOLO_KERNEL_LEVEL lowers the level; a level the CPU lacks or an unknown name falls back
    /// to the detected level with a message.
    func testKernelLevelRequest() {
        let x86: [KernelLevel] = [.baseline, .avx2]
        XCTAssertTrue(KernelLevel.resolve(request: nil, supported: x86) == (.avx2, nil))
        XCTAssertTrue(KernelLevel.resolve(request: "", supported: x86) == (.avx2, nil))
        XCTAssertTrue(KernelLevel.resolve(request: "baseline", supported: x86) == (.baseline, nil))
        XCTAssertTrue(KernelLevel.resolve(request: "AVX2", supported: x86) == (.avx2, nil))
        let (tooHigh, why) = KernelLevel.resolve(request: "avx512", supported: x86)
        XCTAssertEqual(tooHigh, .avx2)
        XCTAssertTrue(why?.contains("cannot run") == true, why ?? "no message")
        let (unknown, what) = KernelLevel.resolve(request: "sse9", supported: x86)
        XCTAssertEqual(unknown, .avx2)
        XCTAssertTrue(what?.contains("not a kernel level") == true, what ?? "no message")
        XCTAssertEqual(KernelLevel.resolve(request: "neon", supported: x86).0, .avx2)
        XCTAssertTrue(KernelLevel.resolve(request: "neon", supported: [.neon]) == (.neon, nil))
        XCTAssertTrue(KernelLevel.resolve(request: "neon", supported: [.neon, .dotProduct]) == (.neon, nil))
        let (noDot, whyNot) = KernelLevel.resolve(request: "dotprod", supported: [.neon])
        XCTAssertEqual(noDot, .neon)
        XCTAssertTrue(whyNot?.contains("cannot run") == true, whyNot ?? "no message")
    }

    /// Linux's AMX permission is asked about the level chosen only: held below amx, never; a
    /// refused amx gives way to the next level, silently unless amx was the level requested.
    func testKernelLevelPermissionAskedOnlyForTheLevelChosen() {
        let x86: [KernelLevel] = [.baseline, .avx2, .avx512VNNI, .amx]
        var asked: [KernelLevel] = []
        let refuse = { (level: KernelLevel) -> String? in asked.append(level); return level == .amx ? "refused here" : nil }
        XCTAssertTrue(KernelLevel.resolve(request: "avx512vnni", supported: x86, refusal: refuse) == (.avx512VNNI, nil))
        XCTAssertEqual(asked, [.avx512VNNI])
        asked = []
        XCTAssertTrue(KernelLevel.resolve(request: nil, supported: x86, refusal: refuse) == (.avx512VNNI, nil))
        XCTAssertEqual(asked, [.amx, .avx512VNNI])
        let (level, why) = KernelLevel.resolve(request: "AMX", supported: x86, refusal: refuse)
        XCTAssertEqual(level, .avx512VNNI)
        XCTAssertEqual(why, "YOLO_KERNEL_LEVEL=AMX: refused here; using avx512vnni")
        XCTAssertTrue(KernelLevel.resolve(request: nil, supported: x86, refusal: { _ in nil }) == (.amx, nil))
        // The engine's own check asks nothing about a level that does not use AMX.
        XCTAssertNil(KernelLevel.permissionRefusal(.avx2))
    }
}
