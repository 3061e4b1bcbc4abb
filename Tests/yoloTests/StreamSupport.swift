import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Helpers for the `yolo stream` tests that run yolo in the background: generated videos
/// (lavfi testsrc), waiting with a bound (a hang fails the test instead of blocking the suite),
/// and finding the ffmpeg processes a run left behind.
extension StreamTests {
    /// A test video made by ffmpeg from lavfi's testsrc (a moving pattern): `frames` frames at
    /// 10 fps, 320x240. `codec` ffv1 (lossless, mkv) or libx264 (mp4, index first, so that a
    /// cut file still opens).
    func makeTestVideo(in dir: String, name: String = "test.mkv", frames: Int = 20, codec: String = "ffv1") throws -> String {
        let path = dir + "/" + name
        var args = ["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi",
                    "-i", "testsrc=size=\(Self.width)x\(Self.height):rate=\(Self.fps)", "-frames:v", "\(frames)", "-c:v", codec]
        if codec == "libx264" { args += ["-pix_fmt", "yuv420p", "-g", "5", "-movflags", "+faststart"] }
        let r = try run(try ffmpeg(), args + [path], in: dir)
        XCTAssertEqual(r.status, 0, "ffmpeg could not make \(name): \(r.stderr)")
        guard FileManager.default.fileExists(atPath: Self.repoRoot + "/weights/yolov3-tiny.weights") else {
            XCTFail("weights/yolov3-tiny.weights is missing: run weights/fetch.sh")
            throw XCTSkip("no weights")
        }
        return path
    }

    /// Starts yolo with stdout and stderr to files in `dir` (read them with `contents`).
    func startYolo(_ args: [String], in dir: String, stdin: Pipe? = nil) throws -> (process: Process, stdout: String, stderr: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try yoloBinary())
        p.arguments = args
        p.currentDirectoryURL = URL(fileURLWithPath: dir)
        let out = dir + "/.yolo-out-\(UUID().uuidString)", err = dir + "/.yolo-err-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        p.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        p.standardInput = stdin ?? FileHandle.nullDevice
        try p.run()
        // Whatever happens in the test, nothing it started outlives it.
        let pid = p.processIdentifier
        addTeardownBlock { if p.isRunning { kill(pid, SIGKILL); p.waitUntilExit() } }
        return (p, out, err)
    }

    func contents(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    /// Waits until `condition` holds, checking ten times a second; false after `seconds` (a
    /// generous bound: only a hang reaches it).
    @discardableResult
    func waitUntil(_ seconds: Double = 120, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(100_000)
        }
        return condition()
    }

    /// Waits for the process to end; on a hang (nothing within `seconds`) fails the test, kills it.
    func waitForExit(_ p: Process, _ seconds: Double = 120, _ what: String) -> Bool {
        if waitUntil(seconds, { !p.isRunning }) { p.waitUntilExit(); return true }
        XCTFail("\(what): yolo did not end within \(Int(seconds)) s (it hangs)")
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        return false
    }

    /// The processes whose command line contains `marker` (e.g. a path unique to this test).
    func processes(containing marker: String) -> [pid_t] {
        let me = getpid()
        return ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { name in
            guard let pid = pid_t(name), pid != me,
                  let data = FileManager.default.contents(atPath: "/proc/\(name)/cmdline"), !data.isEmpty else { return nil }
            // A zombie has an empty command line; a live process its arguments, NUL-separated.
            let args = String(decoding: data, as: UTF8.self).split(separator: "\0")
            guard args.contains(where: { $0.contains(marker) }) else { return nil }
            return pid
        }
    }

    /// Kills (SIGKILL) the processes left behind by a failed run; they would block forever.
    func killLeftovers(containing marker: String) {
        for pid in processes(containing: marker) { kill(pid, SIGKILL) }
    }

    /// Bytes of `args.json`-style output file as JSON lines with a "frame" (skipping others).
    func frameLines(_ path: String) throws -> [[String: Any]] {
        try jsonLines(contents(path)).filter { $0["frame"] != nil }
    }

    /// Names of files in `dir` that look like a temporary (partial) output.
    func partialFiles(in dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.contains(".partial-") }
    }

    /// The number of video frames in a file, by ffprobe (nil when it cannot read one).
    func videoFrameCount(_ path: String, in dir: String) throws -> Int? {
        let probe = try run("/usr/bin/env", ["ffprobe", "-v", "error", "-count_frames", "-show_entries",
                                             "stream=nb_read_frames", "-of", "csv=p=0", path], in: dir)
        return Int(String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
