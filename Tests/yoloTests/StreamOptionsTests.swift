import Foundation
import XCTest

/// `yolo stream` and `yolo detect` share one option set (DetectionOptions): the same options,
/// the same rules (--classes: names first, in any case, then indices; one size parser), the same
/// detections and the same JSON for them.
extension StreamTests {
    /// The small-board settings and the rest of detect's options work on video, and give on
    /// each frame what `yolo detect` gives on that frame.
    func testDetectOptionsWorkOnVideoAsOnImages() throws {
        let dir = try temporaryDirectory()
        let clip = try makeClip(in: dir, frames: 4)
        let shared = ["--size", "320x320", "--conv", "im2col", "--threads", "1", "--max-det", "1", "--stretch",
                      "--classes", "CUP", "--thresh", "0.1"] + modelArgs
        let stream = try run(try yoloBinary(), ["stream", "--input", clip, "--sessions", "1", "--no-stats"] + shared, in: dir)
        XCTAssertEqual(stream.status, 0, stream.stderr)
        let lines = try jsonLines(stream.stdout)
        XCTAssertEqual(lines.count, 4)

        let frameDir = dir + "/frames"
        try FileManager.default.createDirectory(atPath: frameDir, withIntermediateDirectories: true)
        let x = try run(try ffmpeg(), ["-hide_banner", "-loglevel", "error", "-i", clip, frameDir + "/frame-%04d.png"], in: dir)
        XCTAssertEqual(x.status, 0, x.stderr)
        let detect = try run(try yoloBinary(), ["detect", "--json", "--no-draw", frameDir] + shared, in: dir)
        XCTAssertEqual(detect.status, 0, detect.stderr)
        let expected = try jsonLines(detect.stdout)
        XCTAssertEqual(expected.count, 4)
        var found = 0
        for (got, want) in zip(lines, expected) {
            let g = got["detections"] as? [[String: Any]] ?? [], w = want["detections"] as? [[String: Any]] ?? []
            XCTAssertEqual(g.map(key), w.map(key), "frame \(got["frame"] ?? "?")")
            XCTAssertLessThanOrEqual(g.count, 1, "--max-det 1")
            XCTAssertTrue(g.allSatisfy { $0["class"] as? String == "cup" }, "--classes CUP (any case)")
            found += g.count
        }
        XCTAssertGreaterThan(found, 0, "the cup is found at 320x320")
    }

    /// --classes: a name first (exactly, else in any case), then an index, in both commands. A
    /// names file that calls class 0 "41": '--classes 41' is that class, not index 41 (cup).
    func testClassesAreNamesFirstThenIndicesInBothCommands() throws {
        let dir = try temporaryDirectory()
        let clip = try makeClip(in: dir, frames: 2)
        var names = try String(contentsOfFile: Self.repoRoot + "/weights/coco.names", encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(names[41], "cup")
        names[0] = "41"
        try names.joined(separator: "\n").write(toFile: dir + "/renamed.names", atomically: true, encoding: .utf8)
        let model = ["--cfg", Self.repoRoot + "/weights/yolov3-tiny.cfg", "--weights", Self.repoRoot + "/weights/yolov3-tiny.weights",
                     "--names", dir + "/renamed.names", "--thresh", "0.1"]
        let frame = dir + "/frame.png"
        XCTAssertEqual(try run(try ffmpeg(), ["-hide_banner", "-loglevel", "error", "-i", clip, "-frames:v", "1", frame], in: dir).status, 0)
        for (classes, wantCup) in [("41", false), ("Cup", true)] {
            let stream = try run(try yoloBinary(), ["stream", "--input", clip, "--classes", classes, "--no-stats"] + model, in: dir)
            XCTAssertEqual(stream.status, 0, stream.stderr)
            let detect = try run(try yoloBinary(), ["detect", frame, "--json", "--no-draw", "--classes", classes] + model, in: dir)
            XCTAssertEqual(detect.status, 0, detect.stderr)
            for (command, data) in [("stream", stream.stdout), ("detect", detect.stdout)] {
                let indices = try jsonLines(data).flatMap { ($0["detections"] as? [[String: Any]] ?? []).compactMap { $0["class_index"] as? Int } }
                XCTAssertEqual(indices.contains(41), wantCup, "\(command) --classes \(classes): \(indices)")
                XCTAssertTrue(Set(indices).isSubset(of: [0, 41]), "\(command) --classes \(classes): \(indices)")
            }
        }
    }

    /// Detect's options are checked the same way on stream (before anything loads), and so are
    /// frame sizes (the same parser as --size).
    func testStreamOptionErrorsAreDetects() throws {
        let dir = try temporaryDirectory()
        let shared: [([String], String)] = [
            (["--size", "400x416"], "multiples of 32"), (["--size", "big"], "expected WIDTHxHEIGHT"),
            (["--conv", "fft"], "--conv fft: expected winograd, winograd2, im2col"), (["--max-det", "-2"], "--max-det -2"),
            (["--threads", "0"], "--threads 0"), (["--classes", ","], "--classes needs at least one class"),
        ]
        for (args, message) in shared {
            for command in [["stream", "--raw", "64x64"], ["detect", "x.png"]] {
                let r = try run(try yoloBinary(), command + args, in: dir)
                XCTAssertEqual(r.status, 64, "\(command) \(args): \(r.stderr)")
                XCTAssertTrue(r.stderr.contains(message), "\(command) \(args): \(r.stderr)")
            }
        }
        let frameSizes: [([String], String)] = [
            (["--raw", "640x"], "--raw 640x: expected WIDTHxHEIGHT"), (["--raw", "20000x20000"], "over 134217728 pixels"),
            (["--raw", "64x64", "--scale", "8x8"], "--scale needs --input"),
        ]
        for (args, message) in frameSizes {
            let r = try run(try yoloBinary(), ["stream"] + args, in: dir)
            XCTAssertEqual(r.status, 64, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(message), "\(args): \(r.stderr)")
        }
        // A single N is NxN for every size: 64 is 64x64 (the run then stops at the missing weights).
        let square = try run(try yoloBinary(), ["stream", "--raw", "64", "--cfg", dir + "/none.cfg"], in: dir)
        XCTAssertEqual(square.status, 1, square.stderr)
        XCTAssertTrue(square.stderr.contains("none.cfg"), square.stderr)
    }
}
