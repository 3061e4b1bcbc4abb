import XCTest
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels
import YOLOReference

/// The amx level (Intel AMX tiles): offered exactly where the CPU, the OS and Linux allow it, else
/// with a reason; the avx512vnni level's kernels but for its INT8 GEMM (tdpbsud), whose int32 sums
/// and floats equal the vpdpbusd GEMM's and the naive reference's bit for bit, and its BF16 GEMM
/// (tdpbf16ps), within the BF16 GEMM's bound (GemmKernelTests.check; GemmKernelTests'
/// tail, block and row-range tests and Int8KernelTests' run both at every level, amx included).
final class AMXKernelTests: XCTestCase {
    /// The amx level's set, or a skip that says why this machine has none.
    static func amxSet() throws -> KernelSet {
        guard let set = KernelLevel.amx.kernelSet else {
            throw XCTSkip("the amx level is not offered here: \(KernelLevel.amx.unavailableReason ?? "this build has no amx level (not x86-64)")")
        }
        return set
    }

    func testOfferedWhereTheCPUAndOSAllowItElseSaysWhy() throws {
        #if arch(x86_64)
        XCTAssertEqual(KernelLevel.allCases.last, .amx, "the highest level")
        XCTAssertEqual(KernelLevel.supported.contains(.amx), HostCPU.features.contains(.amx))
        let reason = KernelLevel.amx.unavailableReason
        XCTAssertEqual(reason == nil, KernelLevel.supported.contains(.amx), reason ?? "")
        let info = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let flags = Set(info.split(separator: "\n").first { $0.hasPrefix("flags") }?.split(separator: " ").map(String.init) ?? [])
        let tiles = ["amx_tile", "amx_int8", "amx_bf16"].allSatisfy(flags.contains)
        if !flags.isEmpty && !tiles {
            XCTAssertFalse(KernelLevel.supported.contains(.amx), "amx offered to a CPU without AMX (/proc/cpuinfo)")
        }
        if let reason {
            XCTAssertTrue(KernelLevel.unavailableSummary.contains("amx: " + reason), KernelLevel.unavailableSummary)
            XCTAssertFalse(reason.contains("\n"))
            throw XCTSkip("the amx level is not offered here: \(reason)")
        }
        XCTAssertTrue(tiles || flags.isEmpty, "amx offered, /proc/cpuinfo has no AMX")
        XCTAssertEqual(KernelLevel.detected, .amx)
        XCTAssertFalse(KernelLevel.unavailableSummary.contains("amx"))
        // YOLO_KERNEL_LEVEL still lowers it.
        XCTAssertEqual(KernelLevel.resolve(request: "avx512vnni", supported: KernelLevel.supported).0, .avx512VNNI)
        #else
        XCTAssertFalse(KernelLevel.allCases.contains(.amx))
        XCTAssertNil(KernelLevel.amx.kernelSet)
        #endif
    }

    /// The CPUs and OSes without it: each check names what failed.
    func testRefusalsNameTheMissingPiece() {
        #if arch(x86_64)
        let others: CPUFeatureSet = [.avx2, .avx512, .avx512VNNI, .avx512BF16]
        let tiles: UInt32 = 1 << 22 | 1 << 24 | 1 << 25, state: UInt64 = 3 << 17 | 0xE7
        XCTAssertEqual(HostCPU.amx(edx7: 1 << 22 | 1 << 24, xcr0: state, others: others), "this CPU has no AMX-INT8")
        XCTAssertEqual(HostCPU.amx(edx7: 0, xcr0: state, others: others), "this CPU has no AMX-BF16, AMX-TILE, AMX-INT8")
        XCTAssertEqual(HostCPU.amx(edx7: tiles, xcr0: 1 << 17 | 0xE7, others: others),
                       "the OS does not enable AMX tile state (XCR0 bits 17, 18)")
        XCTAssertTrue(HostCPU.amx(edx7: tiles, xcr0: state, others: [.avx2, .avx512])?.contains("VNNI and BF16") == true)
        #endif
    }

    /// The same kernels as avx512vnni but for the two tile GEMMs and the 10-bit preference they bring.
    func testTheVNNILevelsKernelsButTheTileGemms() throws {
        #if arch(x86_64)
        let amx = try XCTUnwrap(KernelRegistry.all.first { $0.name == "amx" })
        let vnni = try XCTUnwrap(KernelRegistry.all.first { $0.name == "avx512vnni" })
        XCTAssertEqual(amx.requires, vnni.requires.union([.avx512BF16, .amx]))
        XCTAssertEqual(amx.int8?.dot, "tdpbsud")
        // The tile product outruns the pair GEMM: two passes for a 10-bit input rather than INT8 F(2x2).
        XCTAssertEqual(amx.int8?.tenBitPreferred, .winograd)
        XCTAssertEqual(vnni.int8?.tenBitPreferred, .fp32)
        XCTAssertEqual(amx.int8?.activationShift, 0)
        XCTAssertEqual(amx.int16Pairs?.dot, vnni.int16Pairs?.dot)
        XCTAssertEqual(amx.int16Direct?.dot, vnni.int16Direct?.dot)
        XCTAssertEqual(amx.gemm.level, vnni.gemm.level)
        XCTAssertEqual(amx.fp16?.dot, vnni.fp16?.dot)
        #if compiler(>=6.1)
        XCTAssertEqual(amx.bf16?.dot, "tdpbf16ps")
        XCTAssertEqual(amx.bf16?.requires, vnni.bf16.map { $0.requires.union(.amx) })
        XCTAssertNotNil(amx.bf16?.winogradPairs)
        #else
        XCTAssertNil(amx.bf16)
        #endif
        XCTAssertTrue(amx.signature.hasPrefix("amx: "))
        #endif
    }

    /// yolov3-tiny's INT8 im2col and 1x1 GEMMs (filters x n x channel groups x 9 x 4), and shapes
    /// around the tile (16 x 16 x 64), the block (32 x 32) and the blocking (kc 2048 groups, nc 256:
    /// k past 8192 splits into blocks whose partial sums stay in C).
    static let shapes: [(m: Int, n: Int, k: Int)] = [
        (1, 1, 1), (1, 1, 4), (1, 1, 64), (1, 1, 65), (1, 17, 3), (17, 1, 129), (16, 16, 64), (32, 32, 64), (15, 17, 63),
        (17, 15, 65), (31, 33, 127), (33, 31, 129), (2, 100, 3), (100, 2, 300), (48, 49, 192), (32, 16, 1028),
        (5, 600, 7), (40, 520, 2100), (64, 257, 1025), (47, 255, 4100), (1, 17, 8193), (47, 40, 8200), (33, 300, 9000),
    ]
    static let yoloShapes: [(m: Int, n: Int, k: Int)] = [
        (32, 43264, 144), (64, 10816, 288), (128, 2704, 576), (256, 676, 1152), (512, 169, 2304), (1024, 169, 4608),
        (256, 169, 1024), (255, 169, 512), (128, 169, 256), (256, 676, 3456), (255, 676, 256),
    ]

    func testINT8TileSumsBitForBitAsVNNIAndTheReference() throws {
        let set = try Self.amxSet()
        let amx = try XCTUnwrap(set.int8)
        let vnni = try XCTUnwrap(KernelLevel.avx512VNNI.kernelSet?.int8)
        for (i, s) in (Self.shapes + Self.yoloShapes).enumerated() {
            var rng = SeededRandom(seed: UInt64(1000 + i))
            let small = s.m * s.n * s.k <= 1 << 24
            let t = Int8GemmCase(m: s.m, n: s.n, k: s.k, ldbPad: small ? i % 3 : 0, ldcPad: small ? i % 2 : 0, extreme: i % 7 == 6,
                                 rng: &rng)
            // Row ranges as threads take them (from multiples of MR = 32).
            let ranges = s.m > 64 ? [0..<32, 32..<96, 96..<s.m] : [0..<s.m]
            let got = Int8KernelTests.run(amx, t, rowRanges: ranges)
            let want = small ? t.expected(untouched: .nan) : Int8KernelTests.run(vnni, t, rowRanges: [0..<s.m])
            let bad = zip(got, want).filter { $0.bitPattern != $1.bitPattern }.count
            XCTAssertEqual(bad, 0, "\(s.m)x\(s.n)x\(s.k): \(bad) entries unlike \(small ? "the reference" : "vpdpbusd")'s")
        }
        // Every product at its largest, as deep as yolov3-tiny's deepest: no saturation.
        var rng = SeededRandom(seed: 5)
        let t = Int8GemmCase(m: 33, n: 40, k: 4608, extreme: true, rng: &rng)
        XCTAssertEqual(Int8KernelTests.run(amx, t, rowRanges: [0..<33]).map(\.bitPattern), t.expected(untouched: .nan).map(\.bitPattern))
    }

    /// Where B's rows are whole cache lines apart (ldb a multiple of 16 columns), the tile GEMM
    /// reads B in place and packs only a step that ends past k and the last columns short of 16:
    /// every mix of those, as the reference sums them.
    func testINT8TileReadsBInPlaceAsTheReference() throws {
        // (The skip is thrown, not wrapped: inside XCTUnwrap it would fail where there is no AMX.)
        let set = try Self.amxSet()
        let amx = try XCTUnwrap(set.int8)
        let shapes: [(m: Int, n: Int, k: Int, ldb: Int)] = [
            (16, 16, 64, 16), (1, 16, 3, 16), (33, 40, 100, 48), (17, 300, 27, 304), (32, 16, 1028, 16),
            (64, 520, 1025, 528), (33, 600, 2100, 608), (100, 272, 4100, 272), (32, 43264, 144, 43264), (33, 48, 8260, 48),
        ]
        for (i, s) in shapes.enumerated() {
            var rng = SeededRandom(seed: UInt64(3000 + i))
            let t = Int8GemmCase(m: s.m, n: s.n, k: s.k, ldbPad: s.ldb - s.n, ldcPad: i % 2, extreme: i % 4 == 3, rng: &rng)
            let ranges = s.m > 64 ? [0..<32, 32..<s.m] : [0..<s.m]
            let got = Int8KernelTests.run(amx, t, rowRanges: ranges), want = t.expected(untouched: .nan)
            let bad = zip(got, want).filter { $0.bitPattern != $1.bitPattern }.count
            XCTAssertEqual(bad, 0, "\(s.m)x\(s.n)x\(s.k), ldb \(s.ldb): \(bad) entries unlike the reference's")
        }
    }

    /// The 10-bit product's two passes: the vpdpbusd level's floats bit for bit.
    func testINT8TileTenBitAsVNNI() throws {
        let set = try Self.amxSet()
        let amx = try XCTUnwrap(set.int8)
        let vnni = try XCTUnwrap(KernelLevel.avx512VNNI.kernelSet?.int8)
        var rng = SeededRandom(seed: 17)
        let shapes: [(m: Int, n: Int, k: Int)] = [(1, 1, 4), (33, 47, 68), (64, 169, 1152), (16, 300, 2304), (100, 31, 4100)]
        for s in shapes {
            let a = (0..<s.m * s.k).map { _ in Int8(rng.int(below: 255) - 127) }
            let groups = (s.k + 3) / 4
            // hi and lo bytes each 0...31 (a 10-bit q = 32 hi + lo).
            let hi = (0..<groups * s.n).map { _ in UInt32(truncatingIfNeeded: rng.next()) & 0x1F1F_1F1F }
            let lo = (0..<groups * s.n).map { _ in UInt32(truncatingIfNeeded: rng.next()) & 0x1F1F_1F1F }
            let comp = (0..<s.m).map { _ in Int32(rng.int(below: 100_000)) - 50_000 }
            let scale = (0..<s.m).map { _ in rng.float(1e-5, 1e-3) }
            func run(_ kern: Int8Functions) -> [Float] {
                var packed = [UInt8](repeating: 0xEE, count: kern.packedASize(m: s.m, k: s.k))
                var scratch = [UInt8](repeating: 0xEE, count: kern.scratchSize(m: s.m, n: s.n, k: s.k))
                var c = [Float](repeating: .nan, count: s.m * s.n)
                a.withUnsafeBufferPointer { pa in
                    packed.withUnsafeMutableBytes { kern.packA(pa.baseAddress!, lda: s.k, m: s.m, k: s.k, into: $0.baseAddress!) }
                }
                packed.withUnsafeBytes { pa in scratch.withUnsafeMutableBytes { ps in
                    kern.tenBitGemm(m: s.m, n: s.n, k: s.k, packedA: pa.baseAddress!, hi: hi, lo: lo, ldb: s.n, c: &c, ldc: s.n,
                                    comp: comp, scale: scale, scratch: ps.baseAddress!)
                } }
                return c
            }
            XCTAssertEqual(run(amx).map(\.bitPattern), run(vnni).map(\.bitPattern), "\(s.m)x\(s.n)x\(s.k)")
        }
    }
}

extension GemmKernelTests {
    /// The tile BF16 GEMM against the naive product of the bfloat16-rounded inputs, within the
    /// BF16 GEMM's bound: edges of the tile (16 x 16 x 32), the block (32 x 32), the blocking (kc
    /// 1024, nc 256) and yolov3-tiny's BF16 GEMMs, C computed whole and in threads' row ranges.
    func testAMXBF16TileGemmWithinTheBF16Bound() throws {
        #if !compiler(>=6.1)
        throw XCTSkip("built by Swift 6.0, whose compiler crashes on the BF16 kernels: this build has none (KernelsAVX512BF16.swift)")
        #endif
        let set = try AMXKernelTests.amxSet()
        let kern = try XCTUnwrap(set.bf16?.gemm)
        XCTAssertTrue(bf16Levels.contains { $0.level == kern.level }, "checked on bfloat16-rounded inputs")
        let shapes = [(1, 1, 1), (1, 1, 32), (1, 1, 33), (16, 16, 32), (32, 32, 32), (17, 33, 33), (31, 15, 65), (33, 47, 1025),
                      (8, 300, 70), (2, 513, 2050), (64, 169, 4608), (255, 169, 512), (256, 676, 256), (128, 2704, 576)]
        for (i, (m, n, k)) in shapes.enumerated() {
            check(kern, Shape(m: m, n: n, k: k, ldbPad: i % 3, ldcPad: i % 2))
            if m > 32 { check(kern, Shape(m: m, n: n, k: k), rowRanges: [0..<32, 32..<m]) }
        }
    }
}
