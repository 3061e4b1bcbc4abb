import Foundation
import XCTest
@testable import YOLOEngine
import YOLOReference

/// The session calibration runs (`Session(observing:)`): each convolution's input, as
/// `forward(observingConvolutionInputs:)` hands it over, is the same bits as the output a session
/// keeping every layer's output holds after the forward, while its buffers are reused.
final class ObservingSessionTests: XCTestCase {
    func testObservedInputsAreTheKeptOutputsInLessMemory() throws {
        let model = try Model(cfgText: PlanTests.cfg, weights: Int8PlanTests.weights)
        let kept = try Session(model: model, threads: 2, keepsAllOutputs: true)
        let observing = try Session(observing: model, threads: 2)
        XCTAssertLessThan(observing.memoryBytes, kept.memoryBytes, "buffers reused")
        var rng = SeededRandom(seed: 21)
        let convs = model.impl.compactMap { $0.convolution }
        XCTAssertGreaterThan(convs.count, 2)
        for _ in 0..<2 {
            let input = (0..<kept.input.count).map { _ in rng.float(0, 1) }
            try kept.forward(input)
            _ = observing.input.update(fromContentsOf: input)
            var seen: [Int] = []
            observing.forward { layer, values in
                seen.append(layer)
                guard let conv = model.impl[layer].convolution else { return XCTFail("layer \(layer) is not a convolution") }
                let source = conv.sources[0]
                let expected = source < 0 ? Array(kept.input) : (try? Array(kept.output(ofLayer: source))) ?? []
                XCTAssertEqual(values.map(\.bitPattern), expected.map(\.bitPattern), "the input of layer \(layer)")
            }
            XCTAssertEqual(seen, convs.map(\.index), "every convolution once, in order")
            let heads = try XCTUnwrap(kept.heads.first), observed = try XCTUnwrap(observing.heads.first)
            XCTAssertEqual(observed.activated.map(\.bitPattern), heads.activated.map(\.bitPattern), "the same forward")
        }
    }
}
