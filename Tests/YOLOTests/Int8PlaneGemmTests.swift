import XCTest
import YOLOReference
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels

/// The INT8 GEMM with B packed from padded planes (Int8PlaneB.swift) against im2col's column
/// matrix through the same level's GEMM, bit for bit: at every level this CPU runs, for shapes
/// with rows narrower and wider than a panel, several blocks of k, and column ranges as threads
/// split them (starting mid-row and mid-panel too).
final class Int8PlaneGemmTests: XCTestCase {
    struct Shape {
        let groups: Int, height: Int, width: Int, filters: Int
    }

    static let shapes = [
        Shape(groups: 1, height: 5, width: 7, filters: 8), Shape(groups: 3, height: 13, width: 13, filters: 20),
        Shape(groups: 4, height: 26, width: 26, filters: 16), Shape(groups: 2, height: 3, width: 1, filters: 9),
        Shape(groups: 5, height: 9, width: 50, filters: 12), Shape(groups: 40, height: 20, width: 20, filters: 16),
    ]

    func testPlaneGemmEqualsIm2colGemmAtEveryLevel() {
        var levels = 0
        for level in KernelLevel.supported {
            guard let kern = level.kernelSet?.int8, kern.planeGemm != nil else { continue }
            levels += 1
            for shape in Self.shapes { check(level.rawValue, kern, shape) }
        }
        XCTAssertGreaterThan(levels, 0, "no level has the plane GEMM")
    }

    func check(_ name: String, _ kern: Int8Functions, _ s: Shape) {
        var rng = SeededRandom(seed: UInt64(s.groups * 1009 + s.height * 31 + s.width * 7 + s.filters))
        let (h, w, m, n, k) = (s.height, s.width, s.filters, s.height * s.width, s.groups * 36)
        let padding = UInt32(rng.int(below: 256)) &* 0x0101_0101
        let planes = (0..<s.groups * h * w).map { _ in UInt32(truncatingIfNeeded: rng.int(below: 1 << 30) &* 7) }
        let a = (0..<m * k).map { _ in Int8(rng.int(below: 255) - 127) }
        let comp = (0..<m).map { _ in Int32(rng.int(below: 100_000)) - 50_000 }
        let scale = (0..<m).map { _ in rng.float(1e-4, 2e-2) }
        var columns = [UInt32](repeating: 0, count: s.groups * 9 * n)
        planes.withUnsafeBufferPointer { p in columns.withUnsafeMutableBufferPointer { c in
            im2col(p.baseAddress!, height: h, width: w, kernel: 3, stride: 1, pad: 1, outWidth: w, outRows: 0..<h,
                   rows: 0..<s.groups * 9, padding: padding, into: c.baseAddress!)
        } }
        let stride = TapConv.planeStride(height: h, width: w)
        var padded = [UInt32](repeating: 0xDEAD_BEEF, count: s.groups * stride)
        planes.withUnsafeBufferPointer { p in padded.withUnsafeMutableBufferPointer { d in
            TapConv.pad(p.baseAddress!, groups: 0..<s.groups, height: h, width: w, planeStride: stride, padding: padding,
                        into: d.baseAddress!)
        } }
        var packed = [UInt8](repeating: 0xEE, count: kern.packedASize(m: m, k: k))
        a.withUnsafeBufferPointer { pa in
            packed.withUnsafeMutableBytes { kern.packA(pa.baseAddress!, lda: k, m: m, k: k, into: $0.baseAddress!) }
        }
        let geometry = Int8PlaneGeometry(width: w, planeStride: stride)
        let splits = [[0..<n], [0..<min(n, kern.nr), min(n, kern.nr)..<n], [0..<n / 3, n / 3..<n]]
        for split in splits {
            var want = [Float](repeating: .nan, count: m * n), got = want
            var scratch = [UInt8](repeating: 0xEE, count: kern.scratchSize(m: m, n: n, k: k))
            packed.withUnsafeBytes { pa in scratch.withUnsafeMutableBytes { ps in
                for cols in split where !cols.isEmpty {
                    columns.withUnsafeBufferPointer { b in want.withUnsafeMutableBufferPointer { c in
                        kern.gemm(m: m, n: cols.count, k: k, packedA: pa.baseAddress!, b: b.baseAddress! + cols.lowerBound, ldb: n,
                                  c: c.baseAddress! + cols.lowerBound, ldc: n, comp: comp, scale: scale, scratch: ps.baseAddress!)
                    } }
                    padded.withUnsafeBufferPointer { p in got.withUnsafeMutableBufferPointer { c in
                        kern.gemm(m: m, n: cols.count, k: k, packedA: pa.baseAddress!, planes: p.baseAddress!, geometry: geometry,
                                  firstColumn: cols.lowerBound, c: c.baseAddress! + cols.lowerBound, ldc: n, comp: comp,
                                  scale: scale, scratch: ps.baseAddress!)
                    } }
                }
            } }
            let bad = (0..<m * n).filter { got[$0].bitPattern != want[$0].bitPattern }
            XCTAssertEqual(bad.count, 0, "\(name) \(s) split \(split): \(bad.count) of \(m * n) differ, first at "
                           + "\(bad.first.map { "[\($0 / n), \($0 % n)]: \(got[$0]) against \(want[$0])" } ?? "")")
        }
    }
}
