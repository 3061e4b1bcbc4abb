import Foundation
import Synchronization
import XCTest
import YOLO
import YOLOImage

/// The library under Swift concurrency: which types are `Sendable`, one detector shared by
/// tasks, and `Model.detectAll` (results in input order, errors, cancellation).
final class ConcurrencyTests: XCTestCase {
    nonisolated(unsafe) static var sharedModel: Model?

    func model() throws -> Model {
        if let m = Self.sharedModel { return m }
        let root = DarknetImageTests.repoRoot
        guard FileManager.default.fileExists(atPath: root + "/weights/yolov3-tiny.weights") else {
            XCTFail("weights/yolov3-tiny.weights is missing: run weights/fetch.sh")
            throw XCTSkip("no weights")
        }
        let m = try Model(cfgPath: root + "/weights/yolov3-tiny.cfg", weightsPath: root + "/weights/yolov3-tiny.weights")
        Self.sharedModel = m
        return m
    }

    func samplePath(_ name: String) throws -> String {
        let path = DarknetImageTests.repoRoot + "/samples/" + name
        guard FileManager.default.fileExists(atPath: path) else {
            XCTFail("samples/\(name) is missing: run scripts/fetch-samples.sh")
            throw XCTSkip("no samples")
        }
        return path
    }

    let names = (0..<80).map { "class\($0)" }

    /// Compiles only while these types are Sendable (Detector, Session and Network were not).
    func testTypesSafeToShareAreSendable() {
        func sendable<T: Sendable>(_: T.Type) -> String { "\(T.self)" }
        let types = [sendable(Model.self), sendable(Detector.self), sendable(Session.self), sendable(Network.self),
                     sendable(Detection.self), sendable(DetectorOptions.self), sendable(DetectionTiming.self),
                     sendable(ModelOptions.self), sendable(LayerInfo.self), sendable(HeadInfo.self),
                     sendable(YOLOError.self), sendable(RGBImage.self), sendable(ImageError.self)]
        XCTAssertEqual(types.count, 13)
    }

    /// Tasks share one detector: its calls take turns, and each gets its own photo's detections.
    func testOneDetectorSharedAcrossTasks() async throws {
        let detector = try Detector(model: try model(), classNames: names, threads: 1)
        let photos = try ["coffee.png", "motorcycle_left.png"].map { try loadImage(path: try samplePath($0)) }
        let expected = try photos.map { try detector.detect(rgb: $0.pixels, width: $0.width, height: $0.height) }
        XCTAssertNotEqual(expected[0], expected[1])
        let got = try await withThrowingTaskGroup(of: (Int, [Detection]).self) { group in
            for i in 0..<6 {
                group.addTask {
                    let photo = photos[i % 2]
                    return (i, try detector.detect(rgb: photo.pixels, width: photo.width, height: photo.height))
                }
            }
            group.addTask {  // options and timing read and written meanwhile, from another task
                let options = detector.options
                detector.options = options
                _ = detector.lastTiming
                return (-1, [])
            }
            var got = [Int: [Detection]]()
            for try await (i, d) in group where i >= 0 { got[i] = d }
            return got
        }
        for i in 0..<6 { XCTAssertEqual(got[i], expected[i % 2], "task \(i)") }
    }

    /// Results come back in input order, whichever input finishes first: the first input is
    /// made the slowest, and the same photo appears at several places.
    func testDetectAllReturnsResultsInInputOrder() async throws {
        let model = try model()
        let files = ["coffee.png", "motorcycle_left.png", "astronaut.png", "coffee.png", "motorcycle_left.png"]
        let paths = try files.map(samplePath)
        let serial = try Detector(model: model, classNames: names, threads: 1)
        let expected = try paths.map { path in
            let photo = try loadImage(path: path)
            return try serial.detect(rgb: photo.pixels, width: photo.width, height: photo.height)
        }
        XCTAssertNotEqual(expected[0], expected[1])
        for sessions in [1, 2, 8] {
            let inputs = Array(paths.enumerated())
            let results = try await model.detectAll(inputs, classNames: names, sessions: sessions) { detector, input in
                if input.offset == 0 { usleep(300_000) }  // finishes last when there are 2 workers or more
                let photo = try loadImage(path: input.element)
                return (input.offset, try detector.detect(rgb: photo.pixels, width: photo.width, height: photo.height))
            }
            XCTAssertEqual(results.map { $0.0 }, Array(0..<files.count), "sessions \(sessions)")
            // (Detectors with other thread counts than the serial one differ in the last bits.)
            for (i, (got, want)) in zip(results.map { $0.1 }, expected).enumerated() {
                XCTAssertEqual(got.map { [$0.classIndex, $0.boxIndex] }, want.map { [$0.classIndex, $0.boxIndex] },
                               "sessions \(sessions), input \(i)")
                for (g, w) in zip(got, want) {
                    XCTAssertEqual(g.confidence, w.confidence, accuracy: 1e-4, "sessions \(sessions), input \(i)")
                    XCTAssertEqual(g.left, w.left, accuracy: 0.05, "sessions \(sessions), input \(i)")
                    XCTAssertEqual(g.bottom, w.bottom, accuracy: 0.05, "sessions \(sessions), input \(i)")
                }
            }
        }
        let none: [[Detection]] = try await model.detectAll([String](), classNames: names) { _, _ in
            XCTFail("called without inputs")
            return []
        }
        XCTAssertTrue(none.isEmpty)
    }

    /// The first error is rethrown as it was thrown, and the other workers stop taking inputs.
    func testDetectAllRethrowsTheFirstErrorAndStopsTheRest() async throws {
        let model = try model()
        let good = try samplePath("coffee.png")
        let paths = ["/nonexistent/photo.png"] + Array(repeating: good, count: 200)
        let calls = Atomic<Int>(0)
        do {
            _ = try await model.detectAll(paths, classNames: names, sessions: 2) { _, path in
                calls.add(1, ordering: .relaxed)
                if path == good { usleep(10_000) }
                return try loadImage(path: path).width
            }
            XCTFail("no error")
        } catch let error as ImageError {
            XCTAssertEqual(error, .fileNotFound(file: "/nonexistent/photo.png"))
        }
        XCTAssertLessThan(calls.load(ordering: .relaxed), paths.count, "the other worker went on to the end")

        do {
            _ = try await model.detectAll([good], sessions: 0) { _, _ in 0 }
            XCTFail("sessions 0 accepted")
        } catch let error as YOLOError {
            XCTAssertEqual(error.description, "detectAll: sessions 0: expected 1 or more")
        }
    }

    /// Cancelling the calling task ends detectAll with CancellationError, before any input.
    func testDetectAllStopsWhenItsTaskIsCancelled() async throws {
        let model = try model()
        let good = try samplePath("coffee.png")
        let calls = Atomic<Int>(0)
        let names = self.names
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await model.detectAll([good, good, good], classNames: names) { _, _ in
                calls.add(1, ordering: .relaxed)
                return 0
            }
        }
        do {
            _ = try await task.value
            XCTFail("not cancelled")
        } catch is CancellationError {
        }
        XCTAssertEqual(calls.load(ordering: .relaxed), 0)
    }
}
