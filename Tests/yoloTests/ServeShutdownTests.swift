// How long `yolo serve` takes to stop with work it cannot finish soon: at most --shutdown-grace
// (then exit 1, saying so), or at once on a second SIGTERM or SIGINT (killed by that signal). The
// work: sixteen requests at thresh=0 with no cap (every candidate box for every class through
// NMS: seconds each even in a release build) on one session.
import Foundation
import XCTest

final class ServeShutdownTests: XCTestCase {
    /// A server busy with slow requests, and the curl that sent them.
    private func busyServer(_ args: [String]) throws -> (ServeProcess, Process) {
        try ServeClients.requireCurl()
        let s = try ServeProcess(["--sessions", "1", "--threads", "1", "--min-thresh", "0", "--max-det", "1000000"] + args)
        let client = Process()
        client.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        client.arguments = ["curl", "-s", "--parallel", "--parallel-immediate", "--parallel-max", "16", "--max-time", "600", "--data-binary", "@samples/coffee.png"]
            + (0..<16).flatMap { ["-o", "/dev/null", s.url("/detect?thresh=0&max_det=1000000&name=\($0).png")] }
        client.currentDirectoryURL = URL(fileURLWithPath: repositoryRoot)
        client.standardOutput = FileHandle.nullDevice
        client.standardError = FileHandle.nullDevice
        try client.run()
        addTeardownBlock { if client.isRunning { client.terminate() }; client.waitUntilExit() }
        // Until the session is busy with one and others wait.
        let deadline = Date().addingTimeInterval(120)
        var busy = false
        while !busy && Date() < deadline {
            let h = try curl([s.url("/health")]).json()
            busy = (h["sessions_busy"] as? Int) == 1 && (h["queued"] as? Int ?? 0) >= 2
            if !busy { usleep(50_000) }
        }
        XCTAssertTrue(busy, "the requests never filled the session and the queue")
        return (s, client)
    }

    /// Waits (bounded; then SIGKILL) for the server to exit: how, its status, the seconds it took
    /// (infinity: killed) and its stderr.
    private func waitForExit(_ s: ServeProcess, since start: Date, limit: Double = 60)
        -> (reason: Process.TerminationReason, status: Int32, seconds: Double, stderr: String) {
        let deadline = start.addingTimeInterval(limit)
        while s.process.isRunning && Date() < deadline { usleep(20_000) }
        let seconds = s.process.isRunning ? .infinity : Date().timeIntervalSince(start)
        let (status, stderr) = s.stop(signal: SIGKILL)
        return (s.process.terminationReason, status, seconds, stderr)
    }

    /// SIGTERM with requests that will take far longer than the grace: exit 1 after it, saying so.
    func testStopIsBoundedByTheGrace() throws {
        let (s, _) = try busyServer(["--shutdown-grace", "1"])
        let start = Date()
        kill(s.process.processIdentifier, SIGTERM)
        let (reason, status, seconds, stderr) = waitForExit(s, since: start)
        XCTAssertEqual(reason, .exit)
        XCTAssertEqual(status, 1, stderr)
        // Does not wait for the sixteen detections (each seconds long); generous for a busy machine.
        XCTAssertLessThan(seconds, 30, stderr)
        XCTAssertTrue(stderr.contains("yolo: serve: SIGTERM: stopping (answering the requests in flight, for up to 1 s)"), stderr)
        XCTAssertTrue(stderr.contains("yolo: serve: the stop took longer than the 1 s grace ("), stderr)
    }

    /// A second signal ends it at once, by that signal, whatever the grace.
    func testSecondSignalExitsAtOnce() throws {
        let (s, _) = try busyServer(["--shutdown-grace", "3600"])
        kill(s.process.processIdentifier, SIGTERM)
        // The first is being acted on (its message written) before the second comes.
        let deadline = Date().addingTimeInterval(30)
        while !s.stderr.contains("SIGTERM: stopping") && Date() < deadline { usleep(20_000) }
        let start = Date()
        kill(s.process.processIdentifier, SIGINT)
        let (reason, status, seconds, stderr) = waitForExit(s, since: start)
        XCTAssertEqual(reason, .uncaughtSignal, stderr)
        XCTAssertEqual(status, SIGINT, stderr)
        XCTAssertLessThan(seconds, 30, stderr)
        XCTAssertTrue(stderr.contains("yolo: serve: SIGINT again: exiting now, "), stderr)
    }
}
