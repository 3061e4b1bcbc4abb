import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `yolo detect --resume OUT.jsonl` (issue #22): a batch killed with SIGKILL after about half
/// its images, then started again with the same list, ends with exactly one line per image,
/// equal to an uninterrupted run's (timings aside); also when the kill left half a line at the
/// end of OUT. The killed run takes its paths from a pipe, so that the test knows when half
/// are answered; it is killed right after more paths went in (work in flight).
extension BatchTests {
    /// The lines of a --resume file without timings, sorted by image (a resumed file has the
    /// first run's lines, then the second's).
    func resultLines(_ path: String) throws -> [NSDictionary] {
        try jsonLines(String(contentsOfFile: path, encoding: .utf8)).map(untimed)
            .sorted { ($0["image"] as? String ?? "") < ($1["image"] as? String ?? "") }
    }

    func testResumeAfterKillEndsWithOneLinePerImage() throws {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        let imgs = try images(20, in: dir)
        let list = imgs[..<6] + [dir + "/missing.png"] + imgs[6...]
        try writeList(Array(list), to: dir + "/list.txt")
        let command = ["detect", "--files-from", "list.txt", "--sessions", "2"] + model

        // The uninterrupted run.
        let full = try yolo(command + ["--resume", "full.jsonl"], in: dir)
        XCTAssertEqual(full.status, 1, full.stderr)  // the missing path
        let expected = try resultLines(dir + "/full.jsonl")
        XCTAssertEqual(expected.count, list.count)
        XCTAssertEqual(Set(expected.compactMap { $0["image"] as? String }), Set(list))
        XCTAssertEqual(expected.filter { $0["error"] != nil }.count, 1)

        for tornLine in [false, true] {
            let out = dir + "/resumed-\(tornLine).jsonl"
            let input = Pipe()
            let p = Process()
            p.executableURL = URL(fileURLWithPath: try yoloBinary())
            p.arguments = ["detect", "--files-from", "-", "--sessions", "2", "--resume", out] + model
            p.currentDirectoryURL = URL(fileURLWithPath: dir)
            p.standardInput = input
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            let pid = p.processIdentifier
            addTeardownBlock { if p.isRunning { kill(pid, SIGKILL); p.waitUntilExit() } }
            let half = list.count / 2
            input.fileHandleForWriting.write(Data(list[..<half].map { $0 + "\n" }.joined().utf8))
            func written() -> Int { ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n").count }
            let deadline = Date().addingTimeInterval(60)
            while written() < half && p.isRunning && Date() < deadline { usleep(2_000) }
            XCTAssertEqual(written(), half, "the first half was not answered within 60 s")
            // More paths in, and killed at once (SIGKILL: nothing of yolo's runs after it).
            input.fileHandleForWriting.write(Data(list[half..<(half + 3)].map { $0 + "\n" }.joined().utf8))
            kill(pid, SIGKILL)
            p.waitUntilExit()
            XCTAssertEqual(p.terminationReason, .uncaughtSignal)
            var first = try String(contentsOfFile: out, encoding: .utf8)
            let done = first.split(separator: "\n").count
            XCTAssertTrue(done >= half && done < list.count, "killed after \(done) of \(list.count) lines")
            if tornLine {
                // A write cut short: the last line loses its end (and its newline).
                first = String(first.dropLast(25))
                try Data(first.utf8).write(to: URL(fileURLWithPath: out))
            }
            let kept = String(first[..<(first.lastIndex(of: "\n").map { first.index(after: $0) } ?? first.startIndex)])

            // Resumed with the list file: the rest is answered, once.
            let resumed = try yolo(command + ["--resume", out], in: dir)
            XCTAssertEqual(resumed.status, kept.contains("missing.png") ? 0 : 1, resumed.stderr)
            XCTAssertEqual(try resultLines(out), expected, tornLine ? "with a torn last line" : "")
            let text = try String(contentsOfFile: out, encoding: .utf8)
            XCTAssertTrue(text.hasSuffix("}\n"))
            XCTAssertTrue(text.hasPrefix(kept), "the first run's complete lines were not kept as they were")
            XCTAssertEqual(text.split(separator: "\n").count, list.count)
            XCTAssertEqual(resumed.stderr.contains("cut off an unterminated last line"), tornLine, resumed.stderr)

            // Again: everything is answered, nothing is added.
            let again = try yolo(command + ["--resume", out], in: dir)
            XCTAssertEqual(again.status, 0, again.stderr)
            XCTAssertEqual(try String(contentsOfFile: out, encoding: .utf8), text)
        }
    }

    /// --resume refuses, with one line naming the file, a file another run holds (locked) and a
    /// file whose lines are not `yolo detect --json`'s (left as it was, nothing appended).
    func testResumeRefusesALockedOrForeignFile() throws {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        let imgs = try images(2, in: dir)
        try writeList(imgs, to: dir + "/list.txt")
        let command = ["detect", "--files-from", "list.txt"] + model

        let foreign = "{\"image\": \"\(imgs[0])\", \"detections\": []}\nnot json\n"
        try Data(foreign.utf8).write(to: URL(fileURLWithPath: dir + "/foreign.jsonl"))
        let r = try yolo(command + ["--resume", "foreign.jsonl"], in: dir)
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertTrue(r.stderr.hasPrefix("yolo: foreign.jsonl: line 2 is not a line of 'yolo detect --json'"), r.stderr)
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
        XCTAssertEqual(try String(contentsOfFile: dir + "/foreign.jsonl", encoding: .utf8), foreign)

        let fd = open(dir + "/held.jsonl", O_RDWR | O_CREAT, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        XCTAssertEqual(flock(fd, LOCK_EX), 0)
        let held = try yolo(command + ["--resume", "held.jsonl"], in: dir)
        XCTAssertEqual(held.status, 1, held.stderr)
        XCTAssertTrue(held.stderr.hasPrefix("yolo: held.jsonl: another process is writing it"), held.stderr)
        XCTAssertEqual(try String(contentsOfFile: dir + "/held.jsonl", encoding: .utf8), "")
        flock(fd, LOCK_UN)
        let free = try yolo(command + ["--resume", "held.jsonl"], in: dir)
        XCTAssertEqual(free.status, 0, free.stderr)
        XCTAssertEqual(try jsonLines(String(contentsOfFile: dir + "/held.jsonl", encoding: .utf8)).count, 2)
    }
}
