// ImagePipeline: images loaded and detected on the workers, results in input order through a
// bounded reordering buffer, failures in their place.
import Foundation
import XCTest
@testable import YOLO
@testable import YOLOCore
@testable import YOLOStream

final class ImagePipelineTests: XCTestCase {
    struct Unreadable: Error {}

    /// yolov3-tiny at 96x64, loaded once for the three tests (loading is most of their time).
    nonisolated(unsafe) static var model: Model?

    /// Small frames that differ from each other, a model, and a one-thread reference detector.
    func setUp(count: Int) throws -> (Model, [VideoFrame], Detector) {
        if Self.model == nil {
            let (cfg, weights) = try officialPaths()
            var options = ModelOptions()
            options.inputSize = .init(width: 96, height: 64)
            Self.model = try Model(cfgPath: cfg, weightsPath: weights, options: options)
        }
        let model = Self.model!
        let w = 80, h = 60
        let frames = (0..<count).map { i in
            VideoFrame(index: i, time: 0, pixels: (0..<(w * h * 3)).map { UInt8(truncatingIfNeeded: ($0 / 3 + 7 * i) * ($0 % 3 + 1)) },
                       width: w, height: h)
        }
        var detector = DetectorOptions()
        detector.threshold = 0.01
        return (model, frames, try Detector(model: model, options: detector, threads: 1))
    }

    /// Inputs that finish in the reverse order (the later, the faster) come out in input
    /// order, each with what one detector finds in it; no input starts while `capacity` inputs
    /// are between their submission and the consumer.
    func testResultsInInputOrderWithABoundedReorderingBuffer() throws {
        let (model, frames, reference) = try setUp(count: 12)
        // Inputs whose load started, less results taken; the most seen when a load starts.
        let inFlight = Locked((now: 0, most: 0))
        let pipeline = try ImagePipeline<Int>(model: model, detectorOptions: reference.options, sessions: 3,
                                              maxInFlight: 4) { i in
            inFlight.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
            usleep(UInt32(12 - i) * 3000)
            return frames[i]
        }
        XCTAssertEqual(pipeline.capacity, 4)
        let producer = Thread {
            for i in 0..<frames.count { pipeline.submit(i) }
            pipeline.finish()
        }
        producer.start()
        var results: [ImageResult<Int>] = []
        while let r = pipeline.next() {
            inFlight.withLock { $0.now -= 1 }
            results.append(r)
        }
        XCTAssertEqual(results.map(\.input), Array(0..<12))
        for r in results {
            XCTAssertEqual(r.sequence, r.input)
            XCTAssertNil(r.error)
            XCTAssertEqual(r.detections, try reference.detect(frames[r.input]))
            XCTAssertEqual([r.width, r.height], [80, 60])
            XCTAssertNil(r.image, "pixels are dropped unless kept")
        }
        // (The consumer counts a result just after taking it, which frees its place: one more.)
        XCTAssertLessThanOrEqual(inFlight.withLock { $0.most }, pipeline.capacity + 1)
        XCTAssertFalse(pipeline.submit(0), "no inputs after finish")
    }

    /// A slow first input holds the others back only up to the bound: the producer waits.
    func testSlowInputHoldsTheProducerAtTheBound() throws {
        let (model, frames, _) = try setUp(count: 10)
        let release = DispatchSemaphore(value: 0)
        let pipeline = try ImagePipeline<Int>(model: model, sessions: 2, maxInFlight: 3) { i in
            if i == 0 { release.wait() }
            return frames[i]
        }
        let submitted = Locked(0)
        let producer = Thread {
            for i in 0..<frames.count where pipeline.submit(i) { submitted.withLock { $0 += 1 } }
            pipeline.finish()
        }
        producer.start()
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(submitted.withLock { $0 }, 3, "the producer waits while 3 inputs are in flight")
        release.signal()
        var order: [Int] = []
        while let r = pipeline.next() { order.append(r.input) }
        XCTAssertEqual(order, Array(0..<10))
    }

    /// An input that cannot be loaded is reported in its place; the others go on. Pixels are
    /// kept when asked.
    func testFailuresInTheirPlaceAndPixelsWhenKept() throws {
        let (model, frames, reference) = try setUp(count: 4)
        let pipeline = try ImagePipeline<Int>(model: model, detectorOptions: reference.options, sessions: 2,
                                              keepPixels: true) { i in
            if i == 1 { throw Unreadable() }
            return frames[i]
        }
        XCTAssertEqual(pipeline.capacity, 4, "2 x sessions when pixels are kept")
        for i in 0..<4 { XCTAssertTrue(pipeline.submit(i)) }
        pipeline.finish()
        var results: [ImageResult<Int>] = []
        while let r = pipeline.next() { results.append(r) }
        XCTAssertEqual(results.map(\.input), [0, 1, 2, 3])
        XCTAssertTrue(results[1].error is Unreadable)
        XCTAssertNil(results[1].image)
        for i in [0, 2, 3] {
            XCTAssertNil(results[i].error)
            XCTAssertEqual(results[i].image?.pixels, frames[i].pixels)
            XCTAssertEqual(results[i].detections, try reference.detect(frames[i]))
        }
        XCTAssertThrowsError(try ImagePipeline<Int>(model: model, sessions: 0) { frames[$0] })
        XCTAssertThrowsError(try ImagePipeline<Int>(model: model, sessions: 1, maxInFlight: 0) { frames[$0] })
    }
}
