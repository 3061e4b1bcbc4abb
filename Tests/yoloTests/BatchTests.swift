import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Issue #22 through the `yolo` binary: `yolo detect --files-from FILE|-` (one JSON line per
/// image in input order, flushed per line, failures as lines with an "error"), `--shard K/N`
/// and `--resume OUT.jsonl` after a run killed half-way. Models from Fixtures.tinyModel where
/// the weights do not matter (its one box is the same on every image; the images differ in size,
/// so each line names its own image and size).
final class BatchTests: XCTestCase {
    /// `count` noise PNGs of distinct sizes in `dir`, named img00.png, img01.png, ...; their paths.
    func images(_ count: Int, in dir: String) throws -> [String] {
        try (0..<count).map { i in
            let path = dir + "/img" + String(format: "%02d", i) + ".png"
            try Fixtures.png(width: 8 + i, height: 5 + 2 * i, Fixtures.noise).write(to: URL(fileURLWithPath: path))
            return path
        }
    }

    func writeList(_ paths: [String], to path: String) throws {
        try Data(paths.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: path))
    }

    func jsonLines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], "not a JSON object: \($0)")
        }
    }

    /// A line without its timing (the one field that differs between two runs of one image).
    func untimed(_ line: [String: Any]) -> NSDictionary {
        var l = line
        l["inference_ms"] = nil
        return l as NSDictionary
    }

    func yolo(_ args: [String], in dir: String) throws -> ProcessOutput {
        try runProcess(try yoloBinary(), args, in: dir, timeout: 300)
    }

    /// --files-from FILE: one line per image, in the list's order (not sorted, repeats kept),
    /// each with its own size; a missing file, a corrupt one and a directory among them are
    /// lines with an "error" (and a line on stderr), the images after them are still detected,
    /// and the exit status is 1 (README: 1 if any image failed); all good: 0.
    func testFilesFromFileOneLinePerImageInOrderWithErrorLines() throws {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        let imgs = try images(6, in: dir)
        try Data("not a png".utf8).write(to: URL(fileURLWithPath: dir + "/corrupt.png"))
        let list = [imgs[4], imgs[1], dir + "/missing.png", imgs[5], dir + "/corrupt.png", imgs[0], dir, imgs[1]]
        try writeList(list, to: dir + "/list.txt")
        let r = try yolo(["detect", "--files-from", "list.txt", "--json", "--sessions", "2"] + model, in: dir)
        XCTAssertEqual(r.status, 1, r.stderr)
        let lines = try jsonLines(r.stdout)
        XCTAssertEqual(lines.map { $0["image"] as? String }, list)
        for (line, path) in zip(lines, list) {
            if let i = imgs.firstIndex(of: path) {
                XCTAssertNil(line["error"], "\(line)")
                XCTAssertEqual(line["width"] as? Int, 8 + i)
                XCTAssertEqual(line["height"] as? Int, 5 + 2 * i)
                XCTAssertEqual((line["detections"] as? [[String: Any]])?.first?["class"] as? String, "thing", "\(line)")
            } else {
                let error = try XCTUnwrap(line["error"] as? String, "no error for \(path): \(line)")
                XCTAssertFalse(error.isEmpty)
                XCTAssertNil(line["detections"])
            }
        }
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 3, r.stderr)
        XCTAssertTrue(r.stderr.contains("missing.png"), r.stderr)
        XCTAssertTrue(r.stderr.contains("corrupt.png"), r.stderr)

        // Without --json: Darknet's text per image, in the same order; failures on stderr only.
        let text = try yolo(["detect", "--files-from", "list.txt", "--sessions", "2"] + model, in: dir)
        XCTAssertEqual(text.status, 1, text.stderr)
        XCTAssertEqual(text.stdout.split(separator: "\n").filter { $0.contains(": Predicted in ") }.map { String($0.prefix { $0 != ":" }) },
                       list.filter { imgs.contains($0) })
        XCTAssertFalse(text.stdout.contains("{"), text.stdout)
        XCTAssertEqual(text.stderr.split(separator: "\n").count, 3, text.stderr)

        // Only good images: exit 0, and the same lines as the IMAGE arguments give.
        try writeList(Array(imgs.reversed()), to: dir + "/good.txt")
        let good = try yolo(["detect", "--files-from", "good.txt", "--json"] + model, in: dir)
        XCTAssertEqual(good.status, 0, good.stderr)
        let args = try yolo(["detect", "--json", "--no-draw"] + imgs.reversed() + model, in: dir)
        XCTAssertEqual(args.status, 0, args.stderr)
        XCTAssertEqual(try jsonLines(good.stdout).map(untimed), try jsonLines(args.stdout).map(untimed))
        XCTAssertEqual(try jsonLines(good.stdout).count, 6)
    }

    /// --files-from -: paths from a pipe, and each image's line comes out as soon as it is done:
    /// the first line is read while stdin is still open (no buffering until the end), then the
    /// second after its path is written; closing stdin ends the run with exit 0.
    func testFilesFromStdinLinesAreFlushedAsTheyCome() throws {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        let imgs = try images(2, in: dir)
        let input = Pipe(), output = Pipe()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try yoloBinary())
        p.arguments = ["detect", "--files-from", "-", "--json"] + model
        p.currentDirectoryURL = URL(fileURLWithPath: dir)
        p.standardInput = input
        p.standardOutput = output
        p.standardError = FileHandle.nullDevice
        try p.run()
        let pid = p.processIdentifier
        addTeardownBlock { if p.isRunning { kill(pid, SIGKILL); p.waitUntilExit() } }

        let reader = output.fileHandleForReading
        var received = ""
        /// Reads until `n` lines came (false after 60 s: the lines are held back).
        func readLines(_ n: Int) -> Bool {
            let got = DispatchSemaphore(value: 0)
            let box = SharedText()
            DispatchQueue.global().async {
                var text = ""
                while text.split(separator: "\n").count < n {
                    let data = reader.availableData
                    if data.isEmpty { break }
                    text += String(decoding: data, as: UTF8.self)
                }
                box.set(text)
                got.signal()
            }
            if got.wait(timeout: .now() + 60) == .timedOut { return false }
            received += box.get()
            return true
        }
        input.fileHandleForWriting.write(Data((imgs[1] + "\n").utf8))
        XCTAssertTrue(readLines(1), "no line within 60 s of the first path, with stdin open: the output is not flushed per line")
        XCTAssertEqual(try jsonLines(received).map { $0["image"] as? String }, [imgs[1]])
        XCTAssertTrue(p.isRunning, "yolo ended before its stdin closed")
        input.fileHandleForWriting.write(Data((imgs[0] + "\n").utf8))
        XCTAssertTrue(readLines(1), "no second line within 60 s of the second path")
        XCTAssertEqual(try jsonLines(received).map { $0["image"] as? String }, [imgs[1], imgs[0]])
        try input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(60)
        while p.isRunning && Date() < deadline { usleep(20_000) }
        XCTAssertFalse(p.isRunning, "yolo did not end within 60 s of its stdin closing")
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        XCTAssertEqual(reader.readDataToEndOfFile().count, 0)
    }

    /// --shard K/N: shard K has the paths numbered K, K + N, ... (1-based, in list order, errors
    /// included), so the shards of one list are disjoint and together are the list; also for
    /// IMAGE arguments, and from stdin.
    func testShardsPartitionTheList() throws {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        let imgs = try images(7, in: dir)
        let list = imgs + [dir + "/missing.png"] + [imgs[2]]
        try writeList(list, to: dir + "/list.txt")
        var union: [String] = []
        for k in 1...3 {
            let r = try yolo(["detect", "--files-from", "list.txt", "--json", "--shard", "\(k)/3"] + model, in: dir)
            let got = try jsonLines(r.stdout).map { $0["image"] as? String ?? "?" }
            let expected = list.indices.filter { $0 % 3 == k - 1 }.map { list[$0] }
            XCTAssertEqual(got, expected, "shard \(k)/3")
            XCTAssertEqual(r.status, expected.contains(dir + "/missing.png") ? 1 : 0, r.stderr)
            union += got
        }
        XCTAssertEqual(union.sorted(), list.sorted(), "the shards together are not the list")
        XCTAssertEqual(union.count, list.count, "shards overlap")

        let one = try yolo(["detect", "--files-from", "list.txt", "--json", "--shard", "1/1"] + model, in: dir)
        XCTAssertEqual(try jsonLines(one.stdout).map { $0["image"] as? String ?? "?" }, list)
        let args = try yolo(["detect", "--json", "--no-draw", "--shard", "2/2"] + imgs + model, in: dir)
        XCTAssertEqual(args.status, 0, args.stderr)
        XCTAssertEqual(try jsonLines(args.stdout).map { $0["image"] as? String ?? "?" }, [imgs[1], imgs[3], imgs[5]])
        let stdin = try runProcess("/bin/sh", ["-c", "\"$0\" detect --files-from - --json --shard 3/4 \"$@\" < list.txt",
                                               try yoloBinary()] + model, in: dir)
        XCTAssertEqual(try jsonLines(stdin.stdout).map { $0["image"] as? String ?? "?" }, [imgs[2], imgs[6]])
    }

    /// Bad --shard values, a missing list, a directory as the list, an over-long line: each one
    /// line on stderr naming the problem, nothing on stdout, exit 64 (usage) or 1 (files).
    func testBadShardAndPathListErrors() throws {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        let imgs = try images(1, in: dir)
        try writeList(imgs, to: dir + "/list.txt")
        for bad in ["0/3", "4/3", "3", "1/0", "-1/2", "a/b", "1/2/3", "", "1/ 2", "2/2000000"] {
            let r = try yolo(["detect", "--files-from", "list.txt", "--json", "--shard", bad] + model, in: dir)
            XCTAssertEqual(r.status, 64, "--shard \(bad): \(r.stderr)")
            XCTAssertEqual(r.stdout, "")
            let first = r.stderr.split(separator: "\n").first.map(String.init) ?? ""
            XCTAssertTrue(first.hasPrefix("yolo: --shard \(bad): expected K/N with 1 <= K <= N"), "--shard \(bad): \(r.stderr)")
        }
        let cases: [(args: [String], status: Int32, message: String)] = [
            (["--files-from", "absent.txt"], 1, "yolo: absent.txt: cannot open the path list: No such file or directory"),
            (["--files-from", dir], 1, "yolo: \(dir): is a directory; --files-from takes a file"),
            (["--files-from", ""], 64, "yolo: --files-from needs a file name"),
            (["--files-from", "list.txt", imgs[0]], 64, "yolo: give IMAGE|DIR arguments or --files-from, not both"),
            (["--files-from", "list.txt", "--output", "out/"], 64, "yolo: --output needs IMAGE|DIR arguments"),
        ]
        for c in cases {
            let r = try yolo(["detect", "--json"] + c.args + model, in: dir)
            XCTAssertEqual(r.status, c.status, "\(c.args): \(r.stderr)")
            XCTAssertEqual(r.stdout, "", "\(c.args)")
            let lines = r.stderr.split(separator: "\n").filter { !$0.hasPrefix("Run 'yolo") }
            XCTAssertEqual(lines.count, 1, "\(c.args): \(r.stderr)")
            XCTAssertTrue(lines.first?.hasPrefix(c.message) == true, "\(c.args): \(r.stderr)")
        }
        // A path longer than a list line may be (64 KiB): the line is named, nothing hangs
        // (and the batch goes on: BatchLongLineTests).
        try Data((imgs[0] + "\n" + String(repeating: "x", count: 70_000) + "\n").utf8).write(to: URL(fileURLWithPath: dir + "/long.txt"))
        let long = try yolo(["detect", "--json", "--files-from", "long.txt"] + model, in: dir)
        XCTAssertEqual(long.status, 1, long.stderr)
        XCTAssertTrue(long.stderr.contains("line 2 of long.txt is longer than 65536 bytes"), long.stderr)
    }
}

/// Text handed from a reader thread to the test.
final class SharedText: @unchecked Sendable {
    private var value = ""
    private let lock = NSLock()
    func get() -> String { lock.lock(); defer { lock.unlock() }; return value }
    func set(_ v: String) { lock.lock(); value = v; lock.unlock() }
}
