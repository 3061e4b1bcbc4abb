import Foundation
import XCTest
import YOLOReference
#if canImport(Glibc)
import Glibc
#endif

/// Issue #16 ("Nothing lost, round two") through the `yolo` binary: hostile PNG chunk lengths,
/// overflowing boxes, text files from other systems, directories given as links, repeated runs,
/// killed writes, missing default files, and what Darknet and Ultralytics users expect.
/// Models are made by the tests (Fixtures.tinyModel), so most of these need no weights.
extension CLITests {
    /// Case 1: three 137-byte PNGs whose text chunk (tEXt, iTXt, zTXt) claims 2^31 - 1 bytes.
    /// Each fails with one line naming the chunk, within a 512 MiB limit on the process's data
    /// (`ulimit -d`: heap and private mappings), far below the 2 GiB libpng would have allocated
    /// and cleared. (Not wait4's ru_maxrss: Linux gives a posix_spawn'ed child the peak of the
    /// test process it was spawned from, so that measured the whole test bundle.)
    func testCraftedPNGChunkLengthsTakeNoMemory() throws {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        var files: [String] = []
        for type in ["tEXt", "iTXt", "zTXt"] {
            // In parts: Swift 6.0's type checker gives up on the whole sum ("unable to type-check
            // this expression in reasonable time").
            let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
            let header: [UInt8] = Fixtures.bigEndian(4) + Fixtures.bigEndian(4) + [8, 2, 0, 0, 0]
            let text: [UInt8] = Fixtures.bigEndian(0x7FFF_FFFF) + Array(type.utf8) + Array("Comment\0".utf8)
            let png = signature + Fixtures.chunk("IHDR", header) + text + [UInt8](repeating: 0x78, count: 88)
            XCTAssertEqual(png.count, 137)
            files.append(dir + "/\(type).png")
            try Data(png).write(to: URL(fileURLWithPath: files.last!))
        }
        // A sanitizer reserves terabytes of shadow memory at start-up, which the limit forbids: under
        // one, the messages are checked without the limit.
        let limit = ProcessInfo.processInfo.environment["YOLO_TEST_SANITIZER"] == nil ? "ulimit -d \(512 << 10) && " : ""
        let r = try Fixtures.spawn(["/bin/bash", "-c", limit + "exec \"$@\"", "bash", try yoloBinary(), "detect"]
                                   + files + ["--no-draw"] + model, in: dir)
        XCTAssertEqual(r.exitStatus, 1, r.stderr)
        let lines = r.stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, 3, r.stderr)
        for (line, type) in zip(lines, ["tEXt", "iTXt", "zTXt"]) {
            XCTAssertEqual(String(line), "yolo: \(dir)/\(type).png: corrupt PNG data: the \(type) chunk at byte 33 claims 2147483647 bytes, but the file has 96 bytes after its header (a corrupt length, or a truncated file)")
        }
    }

    /// Under a data-size limit the run ends. Linked OpenBLAS used to start a thread per core at
    /// process start, each reserving 128 MiB at once: under `ulimit -d 192 MiB` that thread spun on
    /// the failing allocation and `yolo` hung at exit joining it (also when OpenBLAS was never
    /// called). OpenBLAS is now loaded on first use, with one thread, and not used at all under a
    /// data-size limit unless asked for: at the best level and at the baseline level, the run
    /// finishes.
    func testADataSizeLimitDoesNotHangTheRun() throws {
        if ProcessInfo.processInfo.environment["YOLO_TEST_SANITIZER"] != nil {
            throw XCTSkip("a sanitizer's shadow memory cannot start under a data-size limit")
        }
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        try Fixtures.png(width: 40, height: 30, Fixtures.noise).write(to: URL(fileURLWithPath: dir + "/p.png"))
        for level in ["", "baseline"] {
            let r = try Fixtures.spawn(["/bin/bash", "-c", "ulimit -d \(192 << 10) && exec \"$@\"", "bash", try yoloBinary(),
                                        "detect", dir + "/p.png", "--json", "--no-draw"] + model,
                                       environment: level.isEmpty ? [:] : ["YOLO_KERNEL_LEVEL": level], in: dir, timeout: 60)
            XCTAssertEqual(r.exitStatus, 0, "level \(level): \(r.stderr)")
            XCTAssertTrue(r.stdout.contains("p.png\""), "level \(level): \(r.stdout)")
        }
        // OpenBLAS maps 128 MiB for each thread on its first GEMM and retries forever when that
        // fails (0.3.29, Debian 13, on a Zen 3: the run above hung at the baseline level, where
        // OpenBLAS was used). Asked for explicitly, under a limit that cannot hold that buffer:
        // refused, naming the limit.
        let r = try Fixtures.spawn(["/bin/bash", "-c", "ulimit -d \(128 << 10) && exec \"$@\"", "bash",
                                    try builtExecutable("yolo-bench"), "--gemm", "openblas", "--threads", "1", "--runs", "1",
                                    "--warmup", "0", "--no-layers", "--inflight", "0", "--image", dir + "/p.png"] + model.prefix(4),
                                   environment: ["YOLO_KERNEL_LEVEL": "baseline"], in: dir, timeout: 60)
        XCTAssertEqual(r.exitStatus, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("--gemm openblas: OpenBLAS's buffers for 1 thread needs 130 MiB, but the process's data-size limit (ulimit -d) of 128 MiB leaves"), r.stderr)
        // Loading OpenBLAS at all (0.3.29's constructor maps the buffer) hung `yolo --version`
        // under that limit; now it is not loaded, and says why.
        let version = try Fixtures.spawn(["/bin/bash", "-c", "ulimit -d \(128 << 10) && exec \"$@\"", "bash", try yoloBinary(),
                                          "--version"], in: dir, timeout: 60)
        XCTAssertEqual(version.exitStatus, 0, version.stderr)
        XCTAssertTrue(version.stdout.contains("OpenBLAS: core not loaded"), version.stdout)
    }

    /// A data-size limit too small for the model is a one-line error naming it, not Swift's
    /// "failed to allocate" abort (exit 134): the parameters are checked against the limit before
    /// they are read, and each layer's prepared weights (Winograd's are 16/9 or 36/9 the size)
    /// before they are made.
    func testADataSizeLimitTooSmallForTheModelIsAnError() throws {
        if ProcessInfo.processInfo.environment["YOLO_TEST_SANITIZER"] != nil {
            throw XCTSkip("a sanitizer's shadow memory cannot start under a data-size limit")
        }
        let image = try sample("horse.png")
        let dir = try temporaryDirectory()
        for (mebibytes, what) in [(40, "loading the parameters"), (96, "preparing layer ")] {
            let r = try Fixtures.spawn(["/bin/bash", "-c", "ulimit -d \(mebibytes << 10) && exec \"$@\"", "bash", try yoloBinary(),
                                        "detect", image, "--no-draw", "--plan", "table", "--size", "416"] + modelArgs,
                                       in: dir, timeout: 120)
            XCTAssertEqual(r.exitStatus, 1, "\(mebibytes) MiB: \(r.stderr)")
            let lines = r.stderr.split(separator: "\n")
            XCTAssertEqual(lines.count, 1, "\(mebibytes) MiB: \(r.stderr)")
            XCTAssertTrue(r.stderr.hasPrefix("yolo: ") && r.stderr.contains(what)
                          && r.stderr.contains("the process's data-size limit (ulimit -d) of \(mebibytes) MiB"),
                          "\(mebibytes) MiB: \(r.stderr)")
        }
    }

    /// Under a data-size limit, an image too large to decode, or to draw on, is that image's
    /// one-line error (the run goes on; exit 1) instead of an abort: a 6000 x 5000 PNG (86 MiB of
    /// pixels) under 64 MiB, and drawn under a limit that holds the decoded image only once.
    func testAnImageTooLargeForTheDataSizeLimitIsAnError() throws {
        if ProcessInfo.processInfo.environment["YOLO_TEST_SANITIZER"] != nil {
            throw XCTSkip("a sanitizer's shadow memory cannot start under a data-size limit")
        }
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        let made = try Fixtures.spawn(["/usr/bin/env", "ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i",
                                       "color=c=gray:s=6000x5000", "-frames:v", "1", dir + "/big.png"], in: dir)
        XCTAssertEqual(made.exitStatus, 0, made.stderr)
        try Fixtures.png(width: 40, height: 30, Fixtures.noise).write(to: URL(fileURLWithPath: dir + "/small.png"))
        let binary = try yoloBinary()
        let limited = { (mebibytes: Int, args: [String]) throws -> Fixtures.Finished in
            try Fixtures.spawn(["/bin/bash", "-c", "ulimit -d \(mebibytes << 10) && exec \"$@\"", "bash", binary,
                                "detect"] + args + model, in: dir, timeout: 120)
        }
        let r = try limited(64, [dir + "/big.png", dir + "/small.png", "--json", "--no-draw"])
        XCTAssertEqual(r.exitStatus, 1, r.stderr)
        XCTAssertTrue(r.stderr.hasPrefix("yolo: \(dir)/big.png: cannot read the file (decoding 6000 x 5000 pixels needs 86 MiB, "
                                          + "but the process's data-size limit (ulimit -d) of 64 MiB leaves "), r.stderr)
        XCTAssertTrue(r.stderr.hasSuffix(" MiB: raise the limit)\n"), r.stderr)
        XCTAssertTrue(r.stdout.contains("small.png\""), "the run went on: \(r.stdout)")
        // Decoded, but no room for the copy the boxes are drawn on: a limit of what the process
        // used before decoding (64 MiB less what it left), the image, and 40 MiB.
        let left = r.stderr.components(separatedBy: "of 64 MiB leaves ").last?.prefix(while: { $0.isNumber })
        let used = 64 - (Int(left ?? "") ?? 64)
        let drawn = try limited(used + 86 + 40, [dir + "/big.png", "--output", dir + "/out.png"])
        XCTAssertEqual(drawn.exitStatus, 1, drawn.stderr)
        XCTAssertTrue(drawn.stderr.hasPrefix("yolo: \(dir)/out.png: drawing on a copy of the image needs 86 MiB, but the process's "
                                             + "data-size limit (ulimit -d) of \(used + 86 + 40) MiB leaves "), drawn.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.png"))
    }

    /// Case 2: finite weights whose decoded boxes overflow (3 classes, weights uniform in
    /// [0, 0.05]): the image fails with an error naming the [yolo] layer; no JSON with null
    /// boxes, no COCO entries with whole-image boxes.
    func testOverflowingBoxesGiveAnErrorNotNullOrFakeBoxes() throws {
        let dir = try temporaryDirectory()
        let conv = "[convolutional]\nfilters=64\nsize=3\nstride=1\npad=1\nactivation=leaky\n\n"
        let cfg = "[net]\nwidth=32\nheight=32\nchannels=3\n\n" + String(repeating: conv, count: 3)
            + "[convolutional]\nfilters=24\nsize=1\nstride=1\npad=1\nactivation=linear\n\n"
            + "[yolo]\nmask=0,1,2\nanchors=10,14,23,27,37,58\nclasses=3\nnum=3\n"
        var rng = SeededRandom(seed: 16)
        let floats = rng.floats(64 + 64 * 27 + 2 * (64 + 64 * 576) + 24 + 24 * 64, 0, 0.05)
        let model = try Fixtures.model(in: dir, cfg: cfg, floats: floats, names: "a\nb\nc\n")
        try Fixtures.png(width: 76, height: 57, Fixtures.noise).write(to: URL(fileURLWithPath: dir + "/frame.png"))
        let r = try yolo(["detect", "frame.png", "--json", "--no-draw", "--coco", "coco.json"] + model, in: dir)
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertTrue(r.stderr.hasPrefix("yolo: frame.png: the [yolo] layer 4 decodes a box to "), r.stderr)
        XCTAssertTrue(r.stderr.contains("overflow"), r.stderr)
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
        XCTAssertFalse(r.stdout.contains("null"), r.stdout)
        XCTAssertEqual(r.stdout, "")
        let coco = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/coco.json"))) as? [Any])
        XCTAssertTrue(coco.isEmpty, "\(coco.count) COCO entries")
    }

    /// Cases 3 and 8: a names file with a byte-order mark and CRLF line ends, and --classes
    /// matched ignoring case (names first, then indices); the text, JSON and label outputs.
    func testNamesWithBOMAndCRLFAndClassesIgnoringCase() throws {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir, names: "\u{FEFF}Thing\r\nOther\r\n")
        try Fixtures.png(width: 64, height: 48) { _, _ in [90, 120, 150] }.write(to: URL(fileURLWithPath: dir + "/a.png"))
        for list in ["thing", "THING", "Thing", "0", "thing,1"] {
            let r = try yolo(["detect", "a.png", "--json", "--no-draw", "--classes", list] + model, in: dir)
            XCTAssertEqual(r.status, 0, "\(list): \(r.stderr)")
            let detections = try jsonLines(r.stdout).first?["detections"] as? [[String: Any]] ?? []
            XCTAssertEqual(detections.compactMap { $0["class"] as? String }, ["Thing"], list)
        }
        let bad = try yolo(["detect", "a.png", "--no-draw", "--classes", "thingy"] + model, in: dir)
        XCTAssertEqual(bad.status, 64)
        XCTAssertTrue(bad.stderr.contains("names: Thing,Other"), bad.stderr)
    }

    /// Case 8: --ext-output (Darknet's pixel boxes: unclamped, rounded), --save-txt (Ultralytics'
    /// labels: clamped to the image, normalised) with and without --save-conf, an empty label
    /// file for an image without detections, and where the outputs went on stderr.
    func testExtOutputSaveTxtAndWhereOutputsWent() throws {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        try Fixtures.png(width: 64, height: 48) { _, _ in [90, 120, 150] }.write(to: URL(fileURLWithPath: dir + "/a.png"))
        // The box: centre (32, 24); width e^0.5 * 64 (wider than the image), height e^-1 * 48 * 32/24.
        let w = exp(0.5) * 64, h = exp(-1.0) * 32 / 24 * 48
        let r = try yolo(["detect", "a.png", "--ext-output", "--save-txt", "labels", "--save-conf"] + model, in: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        let expected = String(format: "thing: 96%%\t(left_x: %4.0f   top_y: %4.0f   width: %4.0f   height: %4.0f)",
                              (32 - w / 2).rounded(), (24 - h / 2).rounded(), w.rounded(), h.rounded())
        XCTAssertEqual(r.stdout.split(separator: "\n").dropFirst().map(String.init), [expected])
        XCTAssertEqual(expected, "thing: 96%\t(left_x:  -21   top_y:   12   width:  106   height:   24)")
        XCTAssertEqual(r.stderr, "yolo: annotated image: predictions.png\nyolo: 1 label file in labels/\n")
        let label = try String(contentsOfFile: dir + "/labels/a.txt", encoding: .utf8)
        let fields = label.split(separator: " ").map { Double($0.trimmingCharacters(in: .whitespacesAndNewlines))! }
        XCTAssertTrue(label.hasSuffix("\n") && label.split(separator: "\n").count == 1, label)
        XCTAssertEqual(fields.count, 6, label)
        let sigmoid4: Double = 1 / (1 + exp(-4.0))  // (a name of its own: Swift 6.0 cannot type-check the literal in time)
        for (got, want) in zip(fields, [0, 0.5, 0.5, 1, h / 48, sigmoid4 * sigmoid4]) {
            XCTAssertEqual(got, want, accuracy: 2e-6, label)
        }
        // Without --save-conf: five numbers; with no detection: an empty file (replacing the old one).
        let plain = try yolo(["detect", "a.png", "--no-draw", "--save-txt", "labels"] + model, in: dir)
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertEqual(try String(contentsOfFile: dir + "/labels/a.txt", encoding: .utf8).split(separator: " ").count, 5)
        let none = try yolo(["detect", "a.png", "--no-draw", "--save-txt", "labels", "--classes", "other"] + model, in: dir)
        XCTAssertEqual(none.status, 0, none.stderr)
        XCTAssertEqual(try String(contentsOfFile: dir + "/labels/a.txt", encoding: .utf8), "")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir + "/labels"), ["a.txt"])
        // Usage: --ext-output with --json, --save-conf alone, a label file that would replace an input.
        for (args, message) in [(["--json", "--ext-output"], "--ext-output"), (["--save-conf"], "--save-txt DIR"),
                                (["--save-txt", ""], "--save-txt needs a directory"),
                                (["--save-txt", dir, "--names", dir + "/a.txt"], "refusing to write a label file there")] {
            try Data("thing\nother\n".utf8).write(to: URL(fileURLWithPath: dir + "/a.txt"))
            let u = try yolo(["detect", "a.png", "--no-draw"] + model + args, in: dir)
            XCTAssertEqual(u.status, 64, "\(args): \(u.stderr)")
            XCTAssertTrue(u.stderr.contains(message), "\(args): \(u.stderr)")
            XCTAssertEqual(try String(contentsOfFile: dir + "/a.txt", encoding: .utf8), "thing\nother\n")
        }
    }

    /// Case 4: a symbolic link to a directory, given as the argument (with or without a final
    /// slash), is searched; links to directories inside it are still not followed (no cycles).
    func testSymbolicLinkToDirectoryIsSearched() throws {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        let fm = FileManager.default
        try fm.createDirectory(atPath: dir + "/photos/sub", withIntermediateDirectories: true)
        let png = Fixtures.png(width: 40, height: 30) { x, y in [UInt8(x), UInt8(y), 9] }
        try png.write(to: URL(fileURLWithPath: dir + "/photos/a.png"))
        try png.write(to: URL(fileURLWithPath: dir + "/photos/sub/b.PNG"))
        try fm.createSymbolicLink(atPath: dir + "/photos/sub/loop", withDestinationPath: "..")
        try fm.createSymbolicLink(atPath: dir + "/photos/alias.png", withDestinationPath: "a.png")
        try fm.createSymbolicLink(atPath: dir + "/link", withDestinationPath: "photos")
        for arg in ["link", "link/", "photos"] {
            let r = try yolo(["detect", arg, "--no-draw"] + model, in: dir)
            XCTAssertEqual(r.status, 0, "\(arg): \(r.stderr)")
            let prefix = arg.hasSuffix("/") ? arg : arg + "/"
            XCTAssertEqual(r.stdout.split(separator: "\n").filter { $0.contains("Predicted") }.map { String($0.split(separator: ":")[0]) },
                           ["a.png", "alias.png", "sub/b.PNG"].map { prefix + $0 }, arg)
        }
    }

    /// Case 5: the same command twice: the second run does not read the first one's annotated
    /// images as inputs (it says so, once) and writes the same files again.
    func testRepeatedRunSkipsItsOutputDirectory() throws {
        let top = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: top)
        for output in [["--output", "annotated/"], []] {
            let target = output.isEmpty ? "predictions" : "annotated"
            let dir = top + "/" + target + "-run"
            try FileManager.default.createDirectory(atPath: dir + "/photos", withIntermediateDirectories: true)
            for name in ["a.png", "b.png"] {
                try Fixtures.png(width: 40, height: 30) { x, _ in [UInt8(x), 50, 60] }.write(to: URL(fileURLWithPath: dir + "/photos/" + name))
            }
            let first = try yolo(["detect", "."] + output + model, in: dir)
            XCTAssertEqual(first.status, 0, first.stderr)
            let second = try yolo(["detect", "."] + output + model, in: dir)
            XCTAssertEqual(second.status, 0, second.stderr)
            XCTAssertEqual(second.stdout.split(separator: "\n").filter { $0.contains("Predicted") }.count, 2, second.stdout)
            let skipped = second.stderr.split(separator: "\n").filter { $0.contains("not searched") }
            XCTAssertEqual(skipped, ["yolo: ./\(target): not searched: it is the output directory (--output), which holds annotated images"])
            XCTAssertEqual(try FileManager.default.subpathsOfDirectory(atPath: dir + "/" + target).sorted(),
                           ["photos", "photos/a.png", "photos/b.png"])
        }
    }

    /// Case 6: past `ulimit -f`, writing the annotated image fails with one line (EFBIG) instead
    /// of SIGXFSZ killing yolo, and its temporary file is gone. (The limit, 1 MiB, leaves room
    /// for what ThreadSanitizer's runtime writes; the annotated image is about 2 MB of noise.)
    func testFileSizeLimitLeavesNoTemporaryFile() throws {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        try Fixtures.png(width: 1000, height: 700, Fixtures.noise).write(to: URL(fileURLWithPath: dir + "/p.png"))
        let r = try Fixtures.spawn(["/bin/bash", "-c", "ulimit -f 1024 && exec \"$@\"", "bash", try yoloBinary(), "detect", dir + "/p.png",
                                    "--output", dir + "/out/"] + model, in: dir)
        XCTAssertNil(r.signal, "killed by signal \(r.signal ?? 0)")
        XCTAssertEqual(r.exitStatus, 1, r.stderr)
        XCTAssertEqual(r.stderr, "yolo: \(dir)/out/p.png: cannot write the image (File too large)\n")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir + "/out"), [])
    }

    /// Case 6: SIGINT, SIGTERM or SIGHUP while an output is being written remove its temporary
    /// file, and still end yolo by that signal. The signal is raised from inside the write (an
    /// LD_PRELOAD'ed fsync), so it lands there every time.
    func testSignalsDuringAWriteRemoveTheTemporaryFile() throws {
        let dir = try temporaryDirectory()
        guard let cc = Fixtures.cCompiler() else { return XCTFail("no C compiler (clang, cc, gcc) to build the fsync shim") }
        let source = """
        #include <signal.h>
        #include <stdlib.h>
        #include <unistd.h>
        #include <sys/syscall.h>
        int fsync(int fd) {
            const char *s = getenv("YOLO_TEST_SIGNAL_IN_FSYNC");
            if (s) raise(atoi(s));
            return (int)syscall(SYS_fsync, fd);
        }
        """
        try Data(source.utf8).write(to: URL(fileURLWithPath: dir + "/raise.c"))
        let build = try Fixtures.spawn(cc + ["-shared", "-fPIC", "-o", dir + "/raise.so", dir + "/raise.c"], in: dir)
        XCTAssertEqual(build.exitStatus, 0, build.stderr)
        let model = try Fixtures.tinyModel(in: dir)
        try Fixtures.png(width: 40, height: 30, Fixtures.noise).write(to: URL(fileURLWithPath: dir + "/p.png"))
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            let out = dir + "/out\(sig)"
            let r = try Fixtures.spawn([try yoloBinary(), "detect", dir + "/p.png", "--output", out + "/"] + model,
                                       environment: ["LD_PRELOAD": dir + "/raise.so", "YOLO_TEST_SIGNAL_IN_FSYNC": "\(sig)"], in: dir)
            XCTAssertEqual(r.signal, sig, "signal \(sig): \(r.stderr)")
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: out), [], "signal \(sig)")
        }
    }

    /// Case 7: run from another directory, a missing default file says how to point yolo at
    /// the model files (--cfg, YOLO_WEIGHTS), in one line.
    func testMissingDefaultModelFilesSayHowToPointAtThem() throws {
        let dir = try temporaryDirectory()
        let plain = try yolo(["detect", "x.png"], in: dir)
        XCTAssertEqual(plain.status, 1)
        XCTAssertTrue(plain.stderr.hasPrefix("yolo: weights/yolov3-tiny.cfg: No such file or directory (the default model files are looked for in weights/ under the current directory, "), plain.stderr)
        for text in ["give --cfg F", "set YOLO_WEIGHTS to the directory holding yolov3-tiny.cfg, yolov3-tiny.weights and coco.names"] {
            XCTAssertTrue(plain.stderr.contains(text), plain.stderr)
        }
        XCTAssertEqual(plain.stderr.split(separator: "\n").count, 1, plain.stderr)
        let env = try yolo(["detect", "x.png", "--cfg", Self.repoRoot + "/weights/yolov3-tiny.cfg"], in: dir,
                           environment: ["YOLO_WEIGHTS": dir + "/nowhere"])
        XCTAssertEqual(env.status, 1)
        XCTAssertTrue(env.stderr.hasPrefix("yolo: \(dir)/nowhere/yolov3-tiny.weights: No such file or directory (the default model files are looked for in YOLO_WEIGHTS=\(dir)/nowhere; give --weights F"), env.stderr)
        // A file given explicitly gets no hint about defaults.
        let given = try yolo(["detect", "x.png", "--cfg", dir + "/my.cfg"], in: dir)
        XCTAssertEqual(given.stderr, "yolo: \(dir)/my.cfg: No such file or directory\n")
    }

    /// Case 8: `yolo --version` and `yolo version`: the version and the kernel levels.
    func testVersion() throws {
        let a = try yolo(["--version"]), b = try yolo(["version"])
        XCTAssertEqual(a.status, 0, a.stderr)
        XCTAssertEqual(a.stdout, b.stdout)
        let lines = a.stdout.split(separator: "\n").map(String.init)
        XCTAssertNotNil(lines.first?.range(of: #"^yolo \(yolo-swift\) [0-9]+\.[0-9]+\.[0-9]+$"#, options: .regularExpression), a.stdout)
        XCTAssertTrue(lines.contains { $0.hasPrefix("GEMM kernel levels: built ") && $0.contains("this CPU runs ") && $0.contains("selected ") }, a.stdout)
        XCTAssertTrue(lines.contains { $0.hasPrefix("OpenBLAS: core ") }, a.stdout)
        XCTAssertEqual(try yolo(["version", "x"]).status, 64)
    }
}
