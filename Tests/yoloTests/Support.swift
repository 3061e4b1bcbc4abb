import Foundation
import XCTest

/// The repository root, found from this file's path (Tests/yoloTests/Support.swift).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

/// An executable product of this package (`yolo`, `yolo-bench`), built next to the test bundle
/// (on Linux an executable, found here without Bundle: in Debian's Swift 6.0.3 and 6.2.3,
/// `Bundle.allBundles` as the process's first Bundle call dereferences a null pointer, so a run
/// that starts with these tests crashed).
func builtExecutable(_ name: String) throws -> String {
    var dirs = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path]
    if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        dirs.append(URL(fileURLWithPath: exe).deletingLastPathComponent().path)
    }
    #if canImport(Darwin)
    dirs += Bundle.allBundles.map { $0.bundleURL.deletingLastPathComponent().path }
    #endif
    for dir in dirs where FileManager.default.isExecutableFile(atPath: dir + "/" + name) { return dir + "/" + name }
    XCTFail("no \(name) executable next to the test bundle (looked in \(Set(dirs).sorted()))")
    throw XCTSkip("no \(name) binary")
}

extension XCTestCase {
    /// The `yolo` executable: SwiftPM builds it next to the test bundle.
    func yoloBinary() throws -> String { try builtExecutable("yolo") }

    /// A new directory, removed when the test ends.
    func temporaryDirectory() throws -> String {
        let dir = NSTemporaryDirectory() + "yolo-test-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return dir
    }
}

/// What a finished subprocess left: its exit status and everything it wrote.
struct ProcessOutput {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs `executable` (a path, or a name looked up in PATH) with `args` in `dir`, its output to
/// files (nothing can block on a full pipe); a run past `timeout` seconds is terminated and fails
/// the test.
func runProcess(_ executable: String, _ args: [String], in dir: String, environment: [String: String] = [:],
                timeout: Double = 300, file: StaticString = #filePath, line: UInt = #line) throws -> ProcessOutput {
    let p = Process()
    if executable.contains("/") {
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = args
    } else {
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [executable] + args
    }
    if !environment.isEmpty { p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
    p.currentDirectoryURL = URL(fileURLWithPath: dir)
    let base = NSTemporaryDirectory() + "yolo-test-output-\(getpid())-\(UUID().uuidString.prefix(8))"
    let out = base + ".stdout", err = base + ".stderr"
    _ = FileManager.default.createFile(atPath: out, contents: nil)
    _ = FileManager.default.createFile(atPath: err, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: out); try? FileManager.default.removeItem(atPath: err) }
    p.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
    p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
    let done = DispatchSemaphore(value: 0)
    p.terminationHandler = { _ in done.signal() }
    try p.run()
    if done.wait(timeout: .now() + timeout) == .timedOut {
        p.terminate()
        XCTFail("\(executable) \(args) did not finish within \(timeout) s", file: file, line: line)
        done.wait()
    }
    return ProcessOutput(status: p.terminationStatus, stdout: try String(contentsOfFile: out, encoding: .utf8),
                         stderr: try String(contentsOfFile: err, encoding: .utf8))
}
