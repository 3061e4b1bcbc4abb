import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Damaged inputs and failing decoders: reported with ffmpeg's own words, exit status 1.
extension StreamTests {
    /// A video cut in the middle: the frames before the cut are detected, then the damage is
    /// reported (ffmpeg itself exits 0 on it).
    func testTruncatedVideoIsReported() throws {
        let dir = try temporaryDirectory()
        let whole = try makeTestVideo(in: dir, name: "whole.mkv", frames: 30)
        let data = try Data(contentsOf: URL(fileURLWithPath: whole))
        try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: dir + "/cut.mkv"))
        let r = try run(try yoloBinary(), ["stream", "--input", "cut.mkv", "--no-stats"] + modelArgs, in: dir)
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("yolo: cut.mkv: the input is damaged: File ended prematurely"), r.stderr)
        let lines = try jsonLines(r.stdout)
        XCTAssertGreaterThan(lines.count, 0, "the frames before the cut")
        XCTAssertLessThan(lines.count, 30)
        XCTAssertEqual(lines.map { $0["frame"] as? Int }, (0..<lines.count).map { $0 })
    }

    /// An H.264 video with garbage over part of its data: reported, not exit 0.
    func testCorruptVideoIsReported() throws {
        let dir = try temporaryDirectory()
        let good = try makeTestVideo(in: dir, name: "good.mp4", frames: 30, codec: "libx264")
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: good)))
        let start = bytes.count / 3
        for i in start..<min(bytes.count, start + bytes.count / 4) { bytes[i] = UInt8(truncatingIfNeeded: i &* 7) }
        try Data(bytes).write(to: URL(fileURLWithPath: dir + "/bad.mp4"))
        let r = try run(try yoloBinary(), ["stream", "--input", "bad.mp4", "--no-stats"] + modelArgs, in: dir)
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("yolo: bad.mp4: the input is damaged: "), r.stderr)
    }

    /// ffmpeg fails on its own terms: its error text is what yolo shows.
    func testFFmpegErrorTextIsShown() throws {
        let dir = try temporaryDirectory()
        let clip = try makeTestVideo(in: dir, frames: 3)
        let r = try run(try yoloBinary(), ["stream", "--input", clip, "--scale", "17000x17000", "--no-stats"] + modelArgs, in: dir)
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("Picture size 17000x17000 is invalid"), r.stderr)
        XCTAssertFalse(r.stderr.contains("Stream mapping"), r.stderr)
        XCTAssertFalse(r.stderr.contains("Conversion failed"), r.stderr)
    }

    /// The decoder dies (here: killed) in the middle: yolo says how, exit 1.
    func testKilledDecoderIsReported() throws {
        let dir = try temporaryDirectory()
        let clip = try makeClip(in: dir, frames: 200)
        let run = try startYolo(["stream", "--input", clip, "--json", dir + "/d.jsonl", "--no-stats"] + modelArgs, in: dir)
        XCTAssertTrue(waitUntil { self.contents(dir + "/d.jsonl").contains("\n") })
        let decoders = processes(containing: clip).filter { $0 != run.process.processIdentifier }
        XCTAssertEqual(decoders.count, 1, "one ffmpeg")
        for pid in decoders { kill(pid, SIGKILL) }
        XCTAssertTrue(waitForExit(run.process, 120, "killed decoder"))
        XCTAssertEqual(run.process.terminationStatus, 1)
        let stderr = contents(run.stderr)
        XCTAssertTrue(stderr.contains("yolo: \(clip): ffmpeg was killed by signal 9"), stderr)
        XCTAssertFalse(stderr.contains("Stream mapping"), stderr)
    }

    /// The encoder fails (an output format ffmpeg does not know): its words, exit 1, no file.
    func testEncoderErrorTextIsShown() throws {
        let dir = try temporaryDirectory()
        let clip = try makeTestVideo(in: dir, frames: 3)
        let r = try run(try yoloBinary(), ["stream", "--input", clip, "--output", "out.unknownformat", "--no-stats"] + modelArgs,
                        in: dir)
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("yolo: out.unknownformat: ffmpeg cannot write the video: Unable to find a suitable output format"),
                      r.stderr)
        XCTAssertEqual(partialFiles(in: dir), [])
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.unknownformat"))
    }
}
