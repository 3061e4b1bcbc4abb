import Foundation
import XCTest
@testable import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore
@testable import YOLO
@testable import YOLOStream

final class TrackerTests: XCTestCase {
    func box(_ cls: Int, _ x: Float, _ y: Float, _ w: Float = 0.2, _ h: Float = 0.2) -> Detection {
        Detection(classIndex: cls, className: "c\(cls)", confidence: 0.9, objectness: 0.9, x: x, y: y, width: w, height: h,
                  imageWidth: 100, imageHeight: 100, boxIndex: 0)
    }

    func testMovingObjectsKeepTheirIdsAndNewOnesGetNewIds() {
        var tracker = IoUTracker()
        let a = tracker.update([box(0, 0.2, 0.2), box(1, 0.7, 0.7)], frameWidth: 100, frameHeight: 100)
        XCTAssertEqual(a.map(\.trackID), [1, 2])
        // Both move a little; listed in the other order; a new object appears.
        let b = tracker.update([box(1, 0.72, 0.7), box(0, 0.22, 0.21), box(0, 0.5, 0.9)], frameWidth: 100, frameHeight: 100)
        XCTAssertEqual(b.map(\.trackID), [2, 1, 3])
        // A different class at the same place is not the same object.
        let c = tracker.update([box(2, 0.22, 0.21)], frameWidth: 100, frameHeight: 100)
        XCTAssertEqual(c.map(\.trackID), [4])
    }

    func testTracksSurviveAFewMissedFramesThenEnd() {
        var tracker = IoUTracker(maxMissed: 2)
        XCTAssertEqual(tracker.update([box(0, 0.5, 0.5)], frameWidth: 100, frameHeight: 100).map(\.trackID), [1])
        _ = tracker.update([], frameWidth: 100, frameHeight: 100)
        _ = tracker.update([], frameWidth: 100, frameHeight: 100)
        XCTAssertEqual(tracker.update([box(0, 0.5, 0.5)], frameWidth: 100, frameHeight: 100).map(\.trackID), [1])
        for _ in 0..<3 { _ = tracker.update([], frameWidth: 100, frameHeight: 100) }
        XCTAssertEqual(tracker.trackCount, 0)
        XCTAssertEqual(tracker.update([box(0, 0.5, 0.5)], frameWidth: 100, frameHeight: 100).map(\.trackID), [2])
    }

    func testGreedyMatchingPrefersTheBestOverlap() {
        var tracker = IoUTracker(minIoU: 0.1)
        _ = tracker.update([box(0, 0.30, 0.5), box(0, 0.45, 0.5)], frameWidth: 100, frameHeight: 100)
        // The new box at 0.44 overlaps track 2 best; the one at 0.31 goes to track 1.
        let r = tracker.update([box(0, 0.44, 0.5), box(0, 0.31, 0.5)], frameWidth: 100, frameHeight: 100)
        XCTAssertEqual(r.map(\.trackID), [2, 1])
    }

    func testSmoothingAveragesTheLastNBoxes() {
        var tracker = IoUTracker(smoothing: 3)
        let xs: [Float] = [0.50, 0.53, 0.56, 0.59]
        var out: [Detection] = []
        for x in xs { out.append(tracker.update([box(0, x, 0.5)], frameWidth: 100, frameHeight: 100)[0].detection) }
        XCTAssertEqual(out[0].x, 0.50, accuracy: 1e-6)
        XCTAssertEqual(out[1].x, (0.50 + 0.53) / 2, accuracy: 1e-6)
        XCTAssertEqual(out[2].x, (0.50 + 0.53 + 0.56) / 3, accuracy: 1e-6)
        XCTAssertEqual(out[3].x, (0.53 + 0.56 + 0.59) / 3, accuracy: 1e-6)
        XCTAssertEqual(out[3].left, (out[3].x - 0.1) * 100, accuracy: 1e-4)
        // Without smoothing the detection is passed through unchanged.
        var plain = IoUTracker()
        let d = box(0, 0.3, 0.4)
        XCTAssertEqual(plain.update([d], frameWidth: 100, frameHeight: 100)[0].detection, d)
    }
    /// One box reported as car and as truck (Darknet reports one detection per (box, class)) is
    /// one object: one track id, one smoothed box, one `TrackedBox` listing both classes.
    func testOneTrackPerBoxWhateverItsClasses() {
        func det(_ cls: Int, _ name: String, _ confidence: Float, x: Float, boxIndex: Int) -> Detection {
            Detection(classIndex: cls, className: name, confidence: confidence, objectness: 0.9, x: x, y: 0.5,
                      width: 0.2, height: 0.2, imageWidth: 100, imageHeight: 100, boxIndex: boxIndex)
        }
        var tracker = IoUTracker(smoothing: 3)
        // Frame 1: the vehicle as car only; a person elsewhere.
        let a = tracker.update([det(2, "car", 0.7, x: 0.3, boxIndex: 0), det(0, "person", 0.8, x: 0.8, boxIndex: 1)],
                               frameWidth: 100, frameHeight: 100)
        XCTAssertEqual(a.map(\.trackID), [1, 2])
        // Frame 2: the same vehicle, moved, as car and truck (one box); the person again.
        let b = tracker.update([det(0, "person", 0.8, x: 0.81, boxIndex: 0), det(2, "car", 0.61, x: 0.32, boxIndex: 1),
                                det(7, "truck", 0.30, x: 0.32, boxIndex: 1)], frameWidth: 100, frameHeight: 100)
        XCTAssertEqual(b.map(\.trackID), [2, 1, 1], "one track per box")
        XCTAssertEqual(b[1].detection.left, b[2].detection.left, "one smoothed box")
        XCTAssertEqual(b[1].detection.x, (0.3 + 0.32) / 2, accuracy: 1e-6)
        let boxes = TrackedBox.boxes(of: b)
        XCTAssertEqual(boxes.map(\.trackID), [2, 1])
        XCTAssertEqual(boxes[1].detections.map(\.className), ["car", "truck"], "most confident first")
        XCTAssertEqual(boxGroups(b.map(\.detection)).count, 2, "drawn as two boxes, not three")
        // Frame 3: only as truck now: still the same object (it was a truck in frame 2).
        let c = tracker.update([det(7, "truck", 0.5, x: 0.34, boxIndex: 0)], frameWidth: 100, frameHeight: 100)
        XCTAssertEqual(c.map(\.trackID), [1])
        XCTAssertEqual(tracker.trackCount, 2)
    }

}

final class FramePipelineTests: XCTestCase {
    /// yolov3-tiny at the frames' 96x64, loaded once for the suite: the tests are about threads,
    /// order and errors, and loading (packing the weights) was most of their time, 16-39 s a test
    /// under ThreadSanitizer with a model of their own at 416x416 each.
    nonisolated(unsafe) static var model: Model?

    /// `count` small frames that differ from each other, the shared model and a one-thread
    /// reference detector.
    func frames(count: Int) throws -> (Model, [VideoFrame], Detector) {
        let w = 96, h = 64
        if Self.model == nil {
            let (cfg, weights) = try officialPaths()
            var options = ModelOptions()
            options.inputSize = .init(width: w, height: h)
            Self.model = try Model(cfgPath: cfg, weightsPath: weights, options: options)
        }
        let model = Self.model!
        var out: [VideoFrame] = []
        for i in 0..<count {
            var pixels = [UInt8](repeating: 0, count: w * h * 3)
            for y in 0..<h { for x in 0..<w {
                let v = UInt8(truncatingIfNeeded: (x + 3 * i) * 5 ^ y * 7)
                pixels[(y * w + x) * 3] = v; pixels[(y * w + x) * 3 + 1] = v &+ 40; pixels[(y * w + x) * 3 + 2] = 255 - v
            } }
            out.append(VideoFrame(index: i, time: Double(i) / 10, pixels: pixels, width: w, height: h))
        }
        var options = DetectorOptions()
        options.threshold = 0.01
        return (model, out, try Detector(model: model, options: options, threads: 1))
    }

    func testBlockingPipelineReturnsEveryFrameInOrderAsOneDetectorWould() throws {
        let (model, input, reference) = try frames(count: 6)
        let pipeline = try FramePipeline(model: model, detectorOptions: reference.options,
                                         options: FramePipelineOptions(sessions: 3, maxInFlight: 3))
        let producer = Thread { for f in input { pipeline.submit(f) }; pipeline.finish() }
        producer.start()
        var results: [FrameResult] = []
        while let r = pipeline.next() { results.append(r) }
        XCTAssertEqual(results.map(\.frame.index), Array(0..<6))
        XCTAssertGreaterThan(results.map(\.detections.count).reduce(0, +), 0, "frames with detections to compare")
        for r in results {
            let expected = try reference.detect(rgb: input[r.frame.index].pixels, width: 96, height: 64)
            XCTAssertEqual(r.detections, expected)
            XCTAssertEqual(r.tracked.map(\.detection), expected)
            XCTAssertNil(r.error)
            XCTAssertEqual(r.skipped, [])
        }
        XCTAssertFalse(pipeline.submit(input[0]), "no frames after finish")
    }

    func testAsyncStreamOfResults() async throws {
        let (model, input, reference) = try frames(count: 4)
        let pipeline = try FramePipeline(model: model, detectorOptions: reference.options,
                                         options: FramePipelineOptions(sessions: 2))
        let source = AsyncStream<VideoFrame> { c in for f in input { c.yield(f) }; c.finish() }
        var indices: [Int] = []
        for try await result in pipeline.results(for: source) {
            indices.append(result.frame.index)
            let expected = try reference.detect(rgb: input[result.frame.index].pixels, width: 96, height: 64)
            XCTAssertEqual(result.detections, expected)
        }
        XCTAssertEqual(indices, [0, 1, 2, 3])
    }

    func testLiveModeDropsStaleFramesNewestWins() throws {
        let (model, input, reference) = try frames(count: 12)
        let pipeline = try FramePipeline(model: model, detectorOptions: reference.options,
                                         options: FramePipelineOptions(sessions: 1, dropStale: true))
        // All frames at once: far faster than one detector.
        for f in input { XCTAssertTrue(pipeline.submit(f)) }
        pipeline.finish()
        var reported: [Int] = [], skipped: [Int] = []
        while let r = pipeline.next() { reported.append(r.frame.index); skipped += r.skipped }
        skipped += pipeline.trailingSkipped
        XCTAssertEqual(reported, reported.sorted())
        XCTAssertEqual((reported + skipped).sorted(), Array(0..<12))
        XCTAssertLessThanOrEqual(reported.count, pipeline.capacity + 1)
        XCTAssertEqual(reported.last, 11, "newest wins")
        XCTAssertEqual(pipeline.skippedCount, skipped.count)
    }

    func testBadFrameIsReportedNotFatal() throws {
        let (model, input, _) = try frames(count: 2)
        let pipeline = try FramePipeline(model: model, options: FramePipelineOptions(sessions: 1))
        var bad = input[0]
        bad.pixels = [1, 2, 3]
        pipeline.submit(bad)
        pipeline.submit(input[1])
        pipeline.finish()
        let a = try XCTUnwrap(pipeline.next()), b = try XCTUnwrap(pipeline.next())
        XCTAssertNotNil(a.error)
        XCTAssertNil(b.error)
        XCTAssertNil(pipeline.next())
    }

    struct SourceFailed: Error, Equatable { let after: Int }

    /// A source that fails ends the stream with its error, after the frames it gave.
    func testSourceErrorEndsTheResultsWithThatError() async throws {
        let (model, input, reference) = try frames(count: 3)
        let pipeline = try FramePipeline(model: model, detectorOptions: reference.options,
                                         options: FramePipelineOptions(sessions: 2))
        let source = AsyncThrowingStream<VideoFrame, Error> { c in
            for f in input { c.yield(f) }
            c.finish(throwing: SourceFailed(after: input.count))
        }
        var indices: [Int] = []
        do {
            for try await result in pipeline.results(for: source) { indices.append(result.frame.index) }
            XCTFail("the source's error was lost")
        } catch let error as SourceFailed {
            XCTAssertEqual(error, SourceFailed(after: 3))
        }
        XCTAssertEqual(indices, [0, 1, 2], "the frames before the error")
        XCTAssertEqual(pipeline.sourceError as? SourceFailed, SourceFailed(after: 3))
    }

    /// The same without async: `finish(throwing:)` ends `next()` after the frames in flight.
    func testFinishThrowingKeepsTheFramesInFlight() throws {
        let (model, input, reference) = try frames(count: 3)
        let pipeline = try FramePipeline(model: model, detectorOptions: reference.options,
                                         options: FramePipelineOptions(sessions: 2))
        for f in input { XCTAssertTrue(pipeline.submit(f)) }
        pipeline.finish(throwing: SourceFailed(after: 3))
        pipeline.finish(throwing: SourceFailed(after: 99))  // the first error stays
        XCTAssertFalse(pipeline.submit(input[0]))
        var indices: [Int] = []
        while let r = pipeline.next() { indices.append(r.frame.index) }
        XCTAssertEqual(indices, [0, 1, 2])
        XCTAssertEqual(pipeline.sourceError as? SourceFailed, SourceFailed(after: 3))
    }

    /// A consumer that stops early ends the pipeline: the producer stops submitting.
    func testConsumerStoppingEarlyFinishesThePipeline() async throws {
        let (model, input, reference) = try frames(count: 2)
        let pipeline = try FramePipeline(model: model, detectorOptions: reference.options,
                                         options: FramePipelineOptions(sessions: 1, maxInFlight: 1))
        let endless = AsyncStream<VideoFrame>(bufferingPolicy: .bufferingNewest(1)) { c in
            Task {  // frames until the stream's reader goes away
                var i = 0
                while case .enqueued = c.yield(input[i % 2]) { i += 1; await Task.yield() }
            }
        }
        var taken = 0
        for try await _ in pipeline.results(for: endless) {
            taken += 1
            break
        }
        XCTAssertEqual(taken, 1)
        let accepted = await pipeline.submit(input[0])
        XCTAssertFalse(accepted, "finished")
    }
}
