// What the `yolo serve` tests share: a server process on a free loopback port (stopped at the
// end of its test or class), curl as the HTTP client, the real clients' set-up
// (scripts/serve-test-setup.sh: Chromium, curl, the deepstack-python venv) and `yolo detect
// --json` for comparisons.
import Foundation
import XCTest

/// A running `yolo serve --listen 127.0.0.1:0 ...`.
final class ServeProcess {
    let process = Process()
    let stderrPath: String
    private(set) var port = 0
    private var stopped: (status: Int32, stderr: String)?

    /// Starts the server with the test model and `args`; waits (bounded) until it listens.
    init(_ args: [String], timeout: Double = 300) throws {
        let r = repositoryRoot
        guard FileManager.default.fileExists(atPath: r + "/weights/yolov3-tiny.weights"),
              FileManager.default.fileExists(atPath: r + "/samples/coffee.png") else {
            XCTFail("weights or samples are missing: run scripts/bootstrap.sh")
            throw XCTSkip("no weights or samples")
        }
        stderrPath = NSTemporaryDirectory() + "yolo-serve-\(getpid())-\(UUID().uuidString.prefix(8)).stderr"
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: try ServeProcess.yolo())
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--cfg", r + "/weights/yolov3-tiny.cfg",
                             "--weights", r + "/weights/yolov3-tiny.weights", "--names", r + "/weights/coco.names"] + args
        process.currentDirectoryURL = URL(fileURLWithPath: r)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        let pattern = try NSRegularExpression(pattern: "listening on http://127\\.0\\.0\\.1:([0-9]+)/")
        while Date() < deadline {
            let text = stderr
            if let m = pattern.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
               let range = Range(m.range(at: 1), in: text) {
                port = Int(text[range])!
                return
            }
            if !process.isRunning { break }
            usleep(100_000)
        }
        let text = stop().stderr
        XCTFail("yolo serve did not start listening: \(text)")
        throw XCTSkip("no server")
    }

    deinit { _ = stop() }

    static func yolo() throws -> String { try builtExecutable("yolo") }

    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Sends `signal` and waits (bounded) for the exit; SIGKILL after `timeout` seconds.
    @discardableResult
    func stop(signal: Int32 = SIGTERM, timeout: Double = 60) -> (status: Int32, stderr: String) {
        if let stopped { return stopped }
        if process.isRunning {
            kill(process.processIdentifier, signal)
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning && Date() < deadline { usleep(50_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        let result = (process.terminationStatus, stderr)
        try? FileManager.default.removeItem(atPath: stderrPath)
        stopped = result
        return result
    }
}

/// An HTTP answer as curl saw it.
struct CurlResponse {
    var status: Int
    var headers: String
    var body: Data
    var text: String { String(decoding: body, as: UTF8.self) }
    func json(file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: body)
        return try XCTUnwrap(object as? [String: Any], "not a JSON object: \(text)", file: file, line: line)
    }
    func header(_ name: String) -> String? {
        headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
            .map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
    }
}

struct CurlFailure: Error {}

/// Runs curl with `args` (a URL among them); the status, headers and body.
func curl(_ args: [String], timeout: Double = 120) throws -> CurlResponse {
    let base = NSTemporaryDirectory() + "yolo-curl-\(getpid())-\(UUID().uuidString.prefix(8))"
    defer { try? FileManager.default.removeItem(atPath: base + ".body"); try? FileManager.default.removeItem(atPath: base + ".head") }
    let out = try runProcess("curl", ["-sS", "--max-time", "\(Int(timeout))", "-o", base + ".body", "-D", base + ".head",
                                      "-w", "%{http_code}"] + args, in: repositoryRoot, timeout: timeout + 10)
    guard out.status == 0, let status = Int(out.stdout) else {
        XCTFail("curl \(args) failed (exit \(out.status)): \(out.stderr)")
        throw CurlFailure()
    }
    return CurlResponse(status: status, headers: (try? String(contentsOfFile: base + ".head", encoding: .utf8)) ?? "",
                        body: (try? Data(contentsOf: URL(fileURLWithPath: base + ".body"))) ?? Data())
}

enum ServeClients {
    nonisolated(unsafe) private static var python: Result<String, Error>?

    /// curl, for the tests that need no other client: the set-up runs only when it is missing.
    static func requireCurl() throws {
        if (try? runProcess("curl", ["--version"], in: repositoryRoot))?.status == 0 { return }
        _ = try setUp()
    }

    /// The real clients' Python (with deepstack-python and websocket-client), Chromium and curl,
    /// installed once by scripts/serve-test-setup.sh; skips (saying why) when they cannot be.
    static func setUp() throws -> String {
        if python == nil {
            python = Result {
                let out = try runProcess(repositoryRoot + "/scripts/serve-test-setup.sh", [], in: repositoryRoot, timeout: 900)
                guard out.status == 0, let path = out.stdout.split(separator: "\n").last.map(String.init), !path.isEmpty else {
                    throw XCTSkip("the real clients could not be installed (scripts/serve-test-setup.sh exit \(out.status)): \(out.stderr)")
                }
                return path
            }
        }
        return try python!.get()
    }

    /// Runs one of scripts/serve/*.py with the clients' Python; its JSON line.
    static func script(_ name: String, _ args: [String], timeout: Double = 300) throws -> (status: Int32, json: [String: Any], output: String) {
        let out = try runProcess(try setUp(), [repositoryRoot + "/scripts/serve/" + name] + args, in: repositoryRoot, timeout: timeout)
        let line = out.stdout.split(separator: "\n").last.map(String.init) ?? ""
        let json = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
        return (out.status, json, out.stdout + out.stderr)
    }
}

/// `yolo detect --json --no-draw` on samples (from samples/, so "image" is the file name),
/// with one thread as the servers in these tests run; one line per image.
func detectJSONLines(_ names: [String], extra: [String] = []) throws -> [String] {
    let r = repositoryRoot
    let out = try runProcess(try ServeProcess.yolo(), ["detect", "--json", "--no-draw", "--threads", "1",
                                                       "--cfg", r + "/weights/yolov3-tiny.cfg", "--weights", r + "/weights/yolov3-tiny.weights",
                                                       "--names", r + "/weights/coco.names"] + extra + names,
                             in: r + "/samples")
    XCTAssertEqual(out.status, 0, out.stderr)
    return out.stdout.split(separator: "\n").map(String.init)
}

/// A JSON line without its "inference_ms" (which differs from run to run).
func withoutTiming(_ line: String) -> String {
    line.replacingOccurrences(of: "\"inference_ms\": [0-9.]+", with: "\"inference_ms\": _", options: .regularExpression)
}
