// Every Darknet cfg of ../shared/cfg (YOLOv2, v3, v4, Scaled-YOLOv4, v7) loads and runs with
// random weights at a small input size; skipped when that folder is absent (a fresh clone).
import Foundation
import XCTest
@testable import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore
import YOLOReference

final class ModelZooTests: XCTestCase {
    /// ../shared/cfg next to the package, found from this file's path.
    static var sharedCfgs: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared/cfg").path
    }

    /// Random parameters that fit `config` at `input`, in the weights file's order: per
    /// convolution its biases, [batch norm scales, means, variances near 1], then its weights,
    /// small enough that activations stay in range through a deep network.
    static func randomWeights(_ config: DarknetConfig, input: Shape, seed: UInt64) throws -> [Float] {
        var rng = SeededRandom(seed: seed)
        var shapes: [Shape] = [], kinds: [LayerKind] = [], floats: [Float] = []
        for (i, section) in config.sections.dropFirst().enumerated() {
            let layer = try Model.makeLayer(section, index: i, input: i == 0 ? input : shapes[i - 1], shapes: shapes,
                                            previousKind: kinds.last)
            // The convolutions that feed a head get small weights: exp(tw) of random values
            // would overflow the box sizes.
            let feedsHead = ["yolo", "region"].contains(config.sections.dropFirst().dropFirst(i + 1).first?.name ?? "")
            if let conv = layer.convolution {
                floats += rng.floats(conv.filters, -0.1, 0.1)
                if conv.batchNormalize {
                    floats += rng.floats(conv.filters, 0.7, 1.1) + rng.floats(conv.filters, -0.1, 0.1) + rng.floats(conv.filters, 0.8, 1.2)
                }
                let fanIn = conv.columns, bound = Float((feedsHead ? 0.05 : 1.3) * (3.0 / Double(fanIn)).squareRoot())
                floats += rng.floats(conv.filters * fanIn, -bound, bound)
            }
            shapes.append(layer.outputShape)
            kinds.append(layer.kind)
        }
        return floats
    }

    /// A Darknet 0.2 weights file of `floats` (the header's major 0, minor 2, revision 0, seen
    /// 0), copied in one piece (the floats in the machine's order: little-endian on every target
    /// this package builds for): `weightsFile` goes byte by byte, too slow for 100M parameters.
    static func weightsBytes(_ floats: [Float]) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 20 + 4 * floats.count)
        bytes[4] = 2
        bytes.withUnsafeMutableBytes { dst in
            floats.withUnsafeBytes { src in
                (dst.baseAddress! + 20).copyMemory(from: src.baseAddress!, byteCount: src.count)
            }
        }
        return bytes
    }

    func testEverySharedCfgLoadsAndRuns() throws {
        let dir = Self.sharedCfgs
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir).filter({ $0.hasSuffix(".cfg") }).sorted(),
              !names.isEmpty else {
            throw XCTSkip("no cfgs in \(dir): the shared model zoo is not next to this checkout")
        }
        var rng = SeededRandom(seed: 53)
        for name in names {
            let config = try DarknetConfig(path: dir + "/" + name)
            let size = 64
            let input = Shape(c: 3, h: size, w: size)
            let weights = try Self.randomWeights(config, input: input, seed: 54)
            let model = try Model(config: config, weights: Self.weightsBytes(weights), weightsName: name,
                                  options: ModelOptions(inputSize: .init(width: size, height: size), planning: .table))
            XCTAssertFalse(model.heads.isEmpty, name)
            let detector = try Detector(model: model, options: DetectorOptions(threshold: 0.5), threads: 2)
            let image = rng.bytes(160 * 96 * 3)
            _ = try detector.detect(rgb: image, width: 160, height: 96)
            for head in detector.session.rawHeads {
                XCTAssertTrue(head.raw.allSatisfy(\.isFinite), "\(name): head \(head.layerIndex) is not finite")
            }
            if ["yolov4-csp.cfg", "yolov4x-mish.cfg", "yolov4-p5.cfg"].contains(name) {
                XCTAssertEqual(model.letterBox, true, "\(name): letter_box")
            }
            print("\(name): \(model.heads.count) heads, \(model.parameterCount) parameters")
            if name.hasPrefix("yolov2") { XCTAssertTrue(model.heads.allSatisfy(\.region), name) }
        }
    }
}
