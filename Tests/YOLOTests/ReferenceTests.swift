import XCTest
@testable import YOLO

/// The whole network against the original Darknet's outputs (compact fixtures derived from
/// ../shared/reference by scripts/make-fixtures.py).
final class ReferenceTests: XCTestCase {
    static var network: Network?

    func officialNetwork() throws -> Network {
        if let n = Self.network { return n }
        let (cfg, weights) = try officialPaths()
        let n = try Network(cfgPath: cfg, weightsPath: weights, threads: 2)
        Self.network = n
        return n
    }

    func testStructureOfYOLOv3Tiny() throws {
        let net = try officialNetwork()
        XCTAssertEqual(net.layers.count, 24)
        XCTAssertEqual(net.layers[11].kind, .maxpool)
        XCTAssertEqual(net.layers[11].output, Shape(c: 512, h: 13, w: 13), "maxpool size=2 stride=1 keeps 13x13")
        XCTAssertEqual(net.layers[20].output, Shape(c: 384, h: 26, w: 26), "route -1,8 concatenates 128 + 256 channels")
        XCTAssertEqual(net.heads.map(\.gridWidth), [13, 26])
        XCTAssertEqual(net.heads[0].mask, [3, 4, 5])
        XCTAssertEqual(net.heads[0].anchors.map(\.width), [81, 135, 344])
        XCTAssertEqual(net.heads[1].anchors.map(\.height), [14, 27, 58])
        XCTAssertEqual(net.flops, 5_564_961_792, "sum of 2*k*k*c*n*oh*ow over the 13 conv layers of dog_layers_index.txt")
    }

    func testEveryLayerMatchesDarknetOnDog() throws {
        let net = try officialNetwork()
        net.fusesLayers = false
        defer { net.fusesLayers = true }
        try net.forward(readGzipFloats(fixturePath("dog_input_416.f32.gz")))
        for i in 0..<24 {
            let ref = try SampledTensor(path: fixturePath(String(format: "dog_layer%02d.samples", i)))
            XCTAssertEqual(net.layers[i].output, ref.shape, "layer \(i) shape")
            let (maxAbs, sumDiff) = ref.compare(net.output(ofLayer: i))
            XCTAssertLessThanOrEqual(maxAbs, 1e-3, "layer \(i): max abs difference from Darknet")
            XCTAssertLessThanOrEqual(sumDiff, 1e-4, "layer \(i): per-channel mean difference from Darknet")
            print("dog layer \(i) \(net.layers[i].kind): max abs diff \(maxAbs), channel-mean diff \(sumDiff)")
        }
    }

    func testHeadsMatchDarknet() throws {
        let net = try officialNetwork()
        defer { net.convolution = .winograd }
        for algorithm in [Network.ConvolutionAlgorithm.winograd, .im2col] {
            net.convolution = algorithm
            for name in ["dog", "person"] {
                try net.forward(readGzipFloats(fixturePath("\(name)_input_416.f32.gz")))
                for (h, layer) in [(0, 15), (1, 22)] {
                    let ref = try SampledTensor(path: fixturePath("\(name)_conv\(layer).samples"))
                    let (maxAbs, sumDiff) = ref.compare(net.heads[h].raw)
                    XCTAssertLessThanOrEqual(maxAbs, 1e-3, "\(name) head \(h) \(algorithm)")
                    XCTAssertLessThanOrEqual(sumDiff, 1e-4, "\(name) head \(h) \(algorithm)")
                    print("\(name) head \(h) (\(algorithm)): max abs diff \(maxAbs)")
                }
            }
        }
    }

    func testFusedConvMaxPoolIsBitIdentical() throws {
        let net = try officialNetwork()
        let input = try readGzipFloats(fixturePath("dog_input_416.f32.gz"))
        net.fusesLayers = false
        try net.forward(input)
        let exact = (0..<24).filter { net.layers[$0].kind != .convolutional }.map { Array(net.output(ofLayer: $0)) }
        net.fusesLayers = true
        try net.forward(input)
        let fused = (0..<24).filter { net.layers[$0].kind != .convolutional }.map { Array(net.output(ofLayer: $0)) }
        XCTAssertEqual(exact, fused, "fusing bias + activation into the max pools changes no non-conv output")
    }

    func testThreadCountsGiveTheSameHeads() throws {
        let net = try officialNetwork()
        let input = try readGzipFloats(fixturePath("person_input_416.f32.gz"))
        net.threads = 1
        try net.forward(input)
        let one = Array(net.heads[1].raw)
        for mode in [Network.GemmThreading.openBLAS, .split] {
            net.threads = 2
            net.gemmThreading = mode
            try net.forward(input)
            let two = Array(net.heads[1].raw)
            let maxDiff = zip(one, two).map { abs($0 - $1) }.max()!
            XCTAssertLessThanOrEqual(maxDiff, 1e-4, "\(mode)")
        }
        net.threads = 2
    }
}
