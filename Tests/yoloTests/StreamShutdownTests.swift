import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// How `yolo stream` ends: on SIGINT, SIGTERM and SIGHUP alike (the frames in flight finished,
/// the video closed and renamed, exit 0), on a second signal (abort, no partial file), and with
/// a source that stalls; on every path its ffmpeg children end too.
extension StreamTests {
    /// Starts a run that writes a video and JSON, waits for its first result, sends `signals`
    /// (one after the other, at once) and waits for it to end.
    func interruptedRun(_ signals: [Int32], file: StaticString = #filePath, line: UInt = #line) throws
        -> (process: Process, dir: String, lines: [[String: Any]]) {
        let dir = try temporaryDirectory()
        let clip = try makeClip(in: dir, frames: 200)
        let run = try startYolo(["stream", "--input", clip, "--output", dir + "/out.mkv", "--json", dir + "/d.jsonl"]
                                + modelArgs, in: dir)
        XCTAssertTrue(waitUntil { self.contents(dir + "/d.jsonl").contains("\n") }, "no result", file: file, line: line)
        for s in signals { kill(run.process.processIdentifier, s) }
        let ended = waitForExit(run.process, 120, "after signals \(signals)")
        defer { killLeftovers(containing: clip) }
        XCTAssertTrue(ended, file: file, line: line)
        XCTAssertEqual(processes(containing: clip), [], "no ffmpeg left running", file: file, line: line)
        XCTAssertEqual(partialFiles(in: dir), [], "no partial output left behind: \(contents(run.stderr))", file: file, line: line)
        return (run.process, dir, try frameLines(dir + "/d.jsonl"))
    }

    func testSIGINTFinishesFramesInFlightAndTheVideo() throws {
        try checkCleanStop(SIGINT)
    }

    func testSIGTERMAndSIGHUPFinishTheVideoLikeSIGINT() throws {
        try checkCleanStop(SIGTERM)
        try checkCleanStop(SIGHUP)
    }

    func checkCleanStop(_ signal: Int32, file: StaticString = #filePath, line: UInt = #line) throws {
        let (p, dir, lines) = try interruptedRun([signal], file: file, line: line)
        XCTAssertEqual(p.terminationReason, .exit, "signal \(signal)", file: file, line: line)
        XCTAssertEqual(p.terminationStatus, 0, "signal \(signal)", file: file, line: line)
        XCTAssertGreaterThan(lines.count, 0, file: file, line: line)
        XCTAssertLessThan(lines.count, 200, "stopped before the end", file: file, line: line)
        XCTAssertEqual(lines.map { $0["frame"] as? Int }, (0..<lines.count).map { $0 }, "complete lines, in order",
                       file: file, line: line)
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir + "/out.mkv"), "signal \(signal): the video is finished and renamed",
                      file: file, line: line)
        XCTAssertEqual(try videoFrameCount(dir + "/out.mkv", in: dir), lines.count, "signal \(signal)", file: file, line: line)
    }

    /// A second signal may abort the run, but then it leaves no partial file (and no ffmpeg).
    func testASecondSignalLeavesNoPartialFile() throws {
        let (p, dir, lines) = try interruptedRun([SIGINT, SIGTERM])
        if p.terminationReason == .exit && p.terminationStatus == 0 {
            XCTAssertEqual(try videoFrameCount(dir + "/out.mkv", in: dir), lines.count, "finished anyway: a complete video")
        } else {
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.mkv"), "aborted: no video")
        }
    }

    /// ffmpeg blocks opening a FIFO that nobody writes to: a signal still ends yolo, and ffmpeg.
    func testFIFOWithoutWriterDoesNotBlockShutdown() throws {
        let dir = try temporaryDirectory()
        _ = try makeTestVideo(in: dir, frames: 1)  // checks that the weights are here
        let fifo = dir + "/nobody-writes.fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        defer { killLeftovers(containing: fifo) }
        let run = try startYolo(["stream", "--input", fifo, "--json", dir + "/d.jsonl"] + modelArgs, in: dir)
        XCTAssertTrue(waitUntil { !self.processes(containing: fifo).filter { $0 != run.process.processIdentifier }.isEmpty },
                      "ffmpeg started on the FIFO")
        // The model has loaded (or is loading): give the run a moment to reach its wait.
        usleep(500_000)
        kill(run.process.processIdentifier, SIGINT)
        XCTAssertTrue(waitForExit(run.process, 120, "FIFO without a writer"))
        XCTAssertEqual(run.process.terminationReason, .exit, contents(run.stderr))
        XCTAssertEqual(run.process.terminationStatus, 0, contents(run.stderr))
        XCTAssertEqual(processes(containing: fifo), [], "ffmpeg ended too")
    }

    /// A writer sends some frames, then stalls with the FIFO open: the frames are detected, and
    /// a signal ends yolo and its ffmpeg (blocked reading) without waiting for more.
    func testWriterThatStallsDoesNotBlockShutdown() throws {
        let dir = try temporaryDirectory()
        let clip = try makeTestVideo(in: dir, name: "whole.mkv", frames: 30)
        let half = try Data(contentsOf: URL(fileURLWithPath: clip)).prefix(60_000)
        let fifo = dir + "/stalls.fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        defer { killLeftovers(containing: fifo) }
        let run = try startYolo(["stream", "--input", fifo, "--json", dir + "/d.jsonl"] + modelArgs, in: dir)
        // O_RDWR: opening does not wait for the reader; the FIFO stays open (stalled) until the end.
        let writer = open(fifo, O_RDWR)
        XCTAssertGreaterThanOrEqual(writer, 0)
        defer { close(writer) }
        let written = half.withUnsafeBytes { write(writer, $0.baseAddress!, $0.count) }
        XCTAssertEqual(written, half.count)
        XCTAssertTrue(waitUntil { (try? self.frameLines(dir + "/d.jsonl").count) ?? 0 >= 3 }, "frames before the stall")
        kill(run.process.processIdentifier, SIGINT)
        XCTAssertTrue(waitForExit(run.process, 120, "a writer that stalls"))
        XCTAssertEqual(run.process.terminationReason, .exit, contents(run.stderr))
        XCTAssertEqual(run.process.terminationStatus, 0, contents(run.stderr))
        let lines = try frameLines(dir + "/d.jsonl")
        XCTAssertEqual(lines.map { $0["frame"] as? Int }, (0..<lines.count).map { $0 })
        XCTAssertEqual(processes(containing: fifo), [], "ffmpeg ended too")
    }

    /// Raw frames on stdin from a writer that stalls: a signal ends the run.
    func testRawStdinThatStallsDoesNotBlockShutdown() throws {
        let dir = try temporaryDirectory()
        _ = try makeTestVideo(in: dir, frames: 1)
        let input = Pipe()
        let run = try startYolo(["stream", "--raw", "\(Self.width)x\(Self.height)", "--json", dir + "/d.jsonl"] + modelArgs,
                                in: dir, stdin: input)
        input.fileHandleForWriting.write(Data(repeating: 90, count: 2 * Self.width * Self.height * 3))
        XCTAssertTrue(waitUntil { (try? self.frameLines(dir + "/d.jsonl").count) ?? 0 == 2 }, "two frames")
        kill(run.process.processIdentifier, SIGHUP)
        XCTAssertTrue(waitForExit(run.process, 120, "stdin that stalls"))
        XCTAssertEqual(run.process.terminationStatus, 0, contents(run.stderr))
        try input.fileHandleForWriting.close()
    }
}
