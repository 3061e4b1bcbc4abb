import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `yolo stream`'s outputs: none may replace a file the run reads (refused before anything is
/// written, exit 64), while special files (/dev/null, /dev/stdout, a FIFO) stay usable.
extension StreamTests {
    func testOutputsThatAreInputsAreRefusedBeforeAnythingIsWritten() throws {
        let dir = try temporaryDirectory()
        let clip = try makeTestVideo(in: dir, name: "v.mkv", frames: 3)
        // Copies of the small model files (a failure must not destroy the repository's).
        let cfg = dir + "/m.cfg", names = dir + "/m.names"
        try FileManager.default.copyItem(atPath: Self.repoRoot + "/weights/yolov3-tiny.cfg", toPath: cfg)
        try FileManager.default.copyItem(atPath: Self.repoRoot + "/weights/coco.names", toPath: names)
        try FileManager.default.createSymbolicLink(atPath: dir + "/link.mkv", withDestinationPath: "v.mkv")
        try FileManager.default.linkItem(atPath: clip, toPath: dir + "/hard.mkv")
        let raw = dir + "/frames.rgb"
        try Data(repeating: 7, count: Self.width * Self.height * 3).write(to: URL(fileURLWithPath: raw))
        let before = try [clip, cfg, names, raw].map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        let model = ["--cfg", cfg, "--weights", Self.repoRoot + "/weights/yolov3-tiny.weights", "--names", names]
        let cases: [([String], String?)] = [
            (["--input", clip, "--output", clip], nil),
            (["--input", "v.mkv", "--output", dir + "/./v.mkv"], nil),
            (["--input", clip, "--output", "link.mkv"], nil),
            (["--input", "link.mkv", "--output", clip], nil),
            (["--input", clip, "--output", "hard.mkv"], nil),
            (["--input", clip, "--json", clip], nil),
            (["--input", clip, "--json", "link.mkv"], nil),
            (["--input", clip, "--json", names], nil),
            (["--input", clip, "--output", "out.mkv", "--json", cfg], nil),
            (["--input", clip, "--output", names], nil),
            (["--raw", "\(Self.width)x\(Self.height)", "--json", names], nil),
            (["--raw", "\(Self.width)x\(Self.height)", "--json", raw], raw),   // stdin is the file
            (["--input", clip, "--output", "same.mkv", "--json", "same.mkv"], nil),
        ]
        for (args, stdin) in cases {
            let r = try run(try yoloBinary(), ["stream", "--no-stats"] + args + model, in: dir, stdin: stdin)
            XCTAssertEqual(r.status, 64, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("refusing to write") || r.stderr.contains("would go there"), "\(args): \(r.stderr)")
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "one line: \(r.stderr)")
            XCTAssertEqual(r.stdout.count, 0, "\(args)")
        }
        let after = try [clip, cfg, names, raw].map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        XCTAssertEqual(after, before, "every input is intact")
        let made = try FileManager.default.contentsOfDirectory(atPath: dir).filter { !$0.hasPrefix(".out-") && !$0.hasPrefix(".err-") }
        XCTAssertEqual(Set(made), Set(["v.mkv", "m.cfg", "m.names", "link.mkv", "hard.mkv", "frames.rgb"]), "nothing written")
    }

    /// Special files are outputs, never replaced: /dev/null, /dev/stdout (also when stdout is a
    /// file) and a FIFO that another process reads.
    func testJSONToDevNullStdoutAndAFIFOStillWorks() throws {
        let dir = try temporaryDirectory()
        let clip = try makeTestVideo(in: dir, frames: 3)
        let null = try run(try yoloBinary(), ["stream", "--input", clip, "--json", "/dev/null", "--no-stats"] + modelArgs, in: dir)
        XCTAssertEqual(null.status, 0, null.stderr)
        XCTAssertEqual(null.stdout.count, 0)

        let stdout = try run(try yoloBinary(), ["stream", "--input", clip, "--json", "/dev/stdout", "--no-stats"] + modelArgs, in: dir)
        XCTAssertEqual(stdout.status, 0, stdout.stderr)
        XCTAssertEqual(try jsonLines(stdout.stdout).map { $0["frame"] as? Int }, [0, 1, 2])

        // A FIFO read by another process (cat): the lines go through it.
        let fifo = dir + "/json.fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let cat = Process()
        cat.executableURL = URL(fileURLWithPath: "/bin/sh")
        cat.arguments = ["-c", "cat '\(fifo)' > '\(dir)/from-fifo.jsonl'"]
        try cat.run()
        let viaFIFO = try run(try yoloBinary(), ["stream", "--input", clip, "--json", fifo, "--no-stats"] + modelArgs, in: dir)
        XCTAssertEqual(viaFIFO.status, 0, viaFIFO.stderr)
        cat.waitUntilExit()
        XCTAssertEqual(try frameLines(dir + "/from-fifo.jsonl").map { $0["frame"] as? Int }, [0, 1, 2])
    }

    /// An annotated video to a FIFO is written into it (never renamed over it).
    func testVideoToAFIFOIsWrittenIntoIt() throws {
        let dir = try temporaryDirectory()
        let clip = try makeTestVideo(in: dir, frames: 3)
        let fifo = dir + "/video.mkv"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let cat = Process()
        cat.executableURL = URL(fileURLWithPath: "/bin/sh")
        cat.arguments = ["-c", "exec cat '\(fifo)' > '\(dir)/got.mkv'"]
        try cat.run()
        defer { if cat.isRunning { cat.terminate() } }
        let r = try run(try yoloBinary(), ["stream", "--input", clip, "--output", fifo, "--json", "/dev/null", "--no-stats"]
                        + modelArgs, in: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(waitUntil(60) { !cat.isRunning }, "the reader got the end of the video")
        var st = stat()
        XCTAssertEqual(stat(fifo, &st), 0)
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFIFO, "still a FIFO")
        XCTAssertEqual(try videoFrameCount(dir + "/got.mkv", in: dir), 3)
        XCTAssertEqual(partialFiles(in: dir), [])
    }

    /// The annotated video and the JSON lines through a symbolic link: written to what it
    /// points at, the link kept; a directory (or, as root, a block device) is refused with a
    /// line that says what it is.
    func testVideoAndJSONThroughALinkKeepTheLinkAndOddTargetsAreRefused() throws {
        let dir = try temporaryDirectory()
        let clip = try makeTestVideo(in: dir, frames: 2)
        try FileManager.default.createDirectory(atPath: dir + "/real", withIntermediateDirectories: true)
        XCTAssertEqual(symlink("real/v.mkv", dir + "/out.mkv"), 0)
        XCTAssertEqual(symlink("real/j.jsonl", dir + "/out.jsonl"), 0)
        let r = try run(try yoloBinary(), ["stream", "--input", clip, "--output", "out.mkv", "--json", "out.jsonl", "--no-stats"]
                        + modelArgs, in: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: dir + "/out.mkv"), "real/v.mkv")
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: dir + "/out.jsonl"), "real/j.jsonl")
        XCTAssertEqual(try videoFrameCount(dir + "/real/v.mkv", in: dir), 2)
        XCTAssertEqual(try frameLines(dir + "/real/j.jsonl").count, 2)
        XCTAssertEqual(partialFiles(in: dir) + partialFiles(in: dir + "/real"), [])

        var refused = [(dir + "/real", "a directory")]
        if getuid() == 0, mknod(dir + "/blk", S_IFBLK | 0o600, dev_t(240 << 8 | 78)) == 0 { refused.append((dir + "/blk", "a block device")) }
        for (path, what) in refused {
            for option in ["--output", "--json"] {
                let bad = try run(try yoloBinary(), ["stream", "--input", clip, option, path, "--no-stats"] + modelArgs, in: dir)
                XCTAssertNotEqual(bad.status, 0, "\(option) \(path)")
                XCTAssertTrue(bad.stderr.contains("yolo: \(path): cannot write") && bad.stderr.contains("it is \(what); refusing to write there"),
                              "\(option) \(path): \(bad.stderr)")
            }
        }
    }
}
