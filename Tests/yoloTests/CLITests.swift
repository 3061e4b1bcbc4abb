import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Runs the built `yolo` executable as a subprocess. Each test that detects loads the network
/// once and gives it several images, to keep the suite quick in debug builds.
final class CLITests: XCTestCase {
    static let repoRoot = repositoryRoot

    var modelArgs: [String] {
        let r = Self.repoRoot
        return ["--cfg", r + "/weights/yolov3-tiny.cfg", "--weights", r + "/weights/yolov3-tiny.weights",
                "--names", r + "/weights/coco.names", "--threads", "2"]
    }

    func sample(_ name: String) throws -> String {
        let path = Self.repoRoot + "/samples/" + name
        guard FileManager.default.fileExists(atPath: path) else {
            XCTFail("samples/\(name) is missing: run scripts/fetch-samples.sh (CI fetches the samples before testing)")
            throw XCTSkip("no samples")
        }
        guard FileManager.default.fileExists(atPath: Self.repoRoot + "/weights/yolov3-tiny.weights") else {
            XCTFail("weights/yolov3-tiny.weights is missing: run weights/fetch.sh")
            throw XCTSkip("no weights")
        }
        return path
    }

    typealias Result = ProcessOutput

    func yolo(_ args: [String], in cwd: String? = nil, environment: [String: String] = [:],
              timeout: Double = 300) throws -> Result {
        try runProcess(try yoloBinary(), args, in: try cwd ?? temporaryDirectory(), environment: environment, timeout: timeout)
    }

    /// Width and height from a PNG's IHDR, or nil if the bytes are not a complete PNG
    /// (signature, IHDR first, IEND last).
    func pngSize(_ path: String) -> (Int, Int)? {
        guard let d = FileManager.default.contents(atPath: path), d.count > 45 else { return nil }
        let b = [UInt8](d)
        guard b[0..<8] == [137, 80, 78, 71, 13, 10, 26, 10], String(decoding: b[12..<16], as: UTF8.self) == "IHDR",
              String(decoding: b[(b.count - 8)..<(b.count - 4)], as: UTF8.self) == "IEND" else { return nil }
        func be32(_ i: Int) -> Int { Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3]) }
        return (be32(16), be32(20))
    }

    func jsonLines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], "not a JSON object: \($0)")
        }
    }

    // MARK: No network needed

    func testHelp() throws {
        let main = try yolo(["--help"])
        XCTAssertEqual(main.status, 0)
        XCTAssertTrue(main.stdout.contains("detect"))
        XCTAssertTrue(main.stdout.contains("heads"))
        let detect = try yolo(["detect", "--help"])
        XCTAssertEqual(detect.status, 0)
        for text in ["Usage:", "Example:", "--thresh", "default 0.25", "--nms", "default 0.45", "--json", "--coco",
                     "--output", "predictions.png", "--no-draw", "--agnostic", "--stretch", "--no-exif", "--threads",
                     "--save-txt", "--save-conf", "--ext-output"] {
            XCTAssertTrue(detect.stdout.contains(text), "detect --help lacks \(text)")
        }
        XCTAssertEqual(try yolo(["detect", "-h"]).status, 0)
    }

    func testUsageErrors() throws {
        let cases: [([String], String)] = [
            (["detect"], "at least one IMAGE"),
            (["detect", "x.png", "--bogus"], "unknown option '--bogus'"),
            (["detect", "x.png", "--thresh", "abc"], "--thresh abc"),
            (["detect", "x.png", "--thresh", "1.5"], "--thresh 1.5"),
            (["detect", "x.png", "--nms", "-1"], "--nms -1"),
            (["detect", "x.png", "--threads", "0"], "--threads 0"),
            (["detect", "x.png", "--thresh"], "--thresh needs a value"),
            (["detect", "x.png", "--output", "out.txt"], "--output out.txt"),
            (["heads", "x.f32", "--out", "/nonexistent/heads", "--conv", "fft"], "--conv fft: expected winograd, winograd2, im2col"),
            (["frobnicate"], "unknown command 'frobnicate'"),
            ([], "Usage:"),
        ]
        for (args, message) in cases {
            let r = try yolo(args)
            XCTAssertEqual(r.status, 64, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(message), "\(args): stderr \(r.stderr)")
            XCTAssertEqual(r.stdout, "", "\(args)")
        }
    }

    func testMissingModelFilesFailClearly() throws {
        let r = try yolo(["detect", "x.png", "--weights", "/nonexistent/w.weights", "--cfg", Self.repoRoot + "/weights/yolov3-tiny.cfg"])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.hasPrefix("yolo: /nonexistent/w.weights: "), r.stderr)
    }

    // MARK: Hardening (no network needed: refused before it loads)

    /// An output that is an input, however spelled (same path, symbolic link, hard link, a
    /// directory given as its own --output), is refused before anything is written.
    func testOutputThatIsAnInputIsRefused() throws {
        let dir = try temporaryDirectory()
        let photo = dir + "/photo.jpg", original = Data([0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 1, count: 100))
        try original.write(to: URL(fileURLWithPath: photo))
        try FileManager.default.createSymbolicLink(atPath: dir + "/symlink.jpg", withDestinationPath: "photo.jpg")
        try FileManager.default.linkItem(atPath: photo, toPath: dir + "/hardlink.jpg")
        try FileManager.default.createDirectory(atPath: dir + "/album", withIntermediateDirectories: false)
        try original.write(to: URL(fileURLWithPath: dir + "/album/a.jpg"))
        let cases: [[String]] = [
            ["photo.jpg", "--output", "photo.jpg"],
            ["photo.jpg", "--output", dir + "/./photo.jpg"],
            ["photo.jpg", "--output", "symlink.jpg"],
            ["symlink.jpg", "--output", "photo.jpg"],
            ["photo.jpg", "--output", "hardlink.jpg"],
            ["album/", "--output", "album/"],
            ["album", "--output", "album"],
            ["photo.jpg", "--no-draw", "--coco", "hardlink.jpg"],
            ["album", "--output", "x/", "--coco", "album/a.jpg"],
            ["photo.jpg", "--output", "model.png", "--weights", "model.png"],
        ]
        try Data([0, 0, 0, 0]).write(to: URL(fileURLWithPath: dir + "/model.png"))
        for args in cases {
            let r = try yolo(["detect"] + args, in: dir)
            XCTAssertEqual(r.status, 64, "\(args): \(r.stderr)")
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.hasPrefix("yolo: "), r.stderr)
            XCTAssertTrue(r.stderr.contains("refusing to write"), "\(args): \(r.stderr)")
            XCTAssertEqual(FileManager.default.contents(atPath: photo), original, "\(args)")
            XCTAssertEqual(FileManager.default.contents(atPath: dir + "/album/a.jpg"), original, "\(args)")
        }
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: dir)).subtracting([".stdout", ".stderr"])
            .filter { !$0.hasPrefix(".std") }.sorted(), ["album", "hardlink.jpg", "model.png", "photo.jpg", "symlink.jpg"])
    }

    /// An output directory that cannot be made: one line, 'yolo: <path>: <what>', not a
    /// Foundation error dump per image.
    func testUnmakeableOutputDirectoryIsOneLine() throws {
        let coffee = try sample("coffee.png")
        let dir = try temporaryDirectory()
        _ = FileManager.default.createFile(atPath: dir + "/file.txt", contents: Data("x".utf8))
        try FileManager.default.copyItem(atPath: coffee, toPath: dir + "/a.png")
        try FileManager.default.copyItem(atPath: coffee, toPath: dir + "/b.png")
        let r = try yolo(["detect", "a.png", "b.png", "--output", "file.txt/annotated/"] + modelArgs, in: dir)
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(r.stderr, "yolo: file.txt/annotated: cannot create the directory: Not a directory\n")
        XCTAssertFalse(r.stderr.contains("NSCocoaErrorDomain"))
    }

    /// scripts/detect-sample.sh stops when the build fails instead of running an old binary.
    /// Hermetic: a copy of the script beside a stub bootstrap, a failing `swift` and a stale
    /// `.build/release/yolo`.
    func testDetectSampleStopsOnFailedBuild() throws {
        let dir = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/scripts", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/.build/release", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/bin", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.repoRoot + "/scripts/detect-sample.sh", toPath: dir + "/scripts/detect-sample.sh")
        let stubs = [
            "scripts/bootstrap.sh": "#!/bin/sh\nexit 0\n",
            "bin/swift": "#!/bin/sh\necho '[1/2] Compiling'\necho 'error: the build failed' >&2\nexit 1\n",
            ".build/release/yolo": "#!/bin/sh\necho 'STALE BINARY RAN'\n",
        ]
        for (path, text) in stubs {
            try Data(text.utf8).write(to: URL(fileURLWithPath: dir + "/" + path))
            XCTAssertEqual(chmod(dir + "/" + path, 0o755), 0)
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = [dir + "/scripts/detect-sample.sh"]
        var env = ProcessInfo.processInfo.environment
        env["PATH"] = dir + "/bin:/usr/bin:/bin"
        p.environment = env
        let out = dir + "/out.txt"
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        p.standardOutput = handle
        p.standardError = handle
        try p.run()
        p.waitUntilExit()
        let text = try String(contentsOfFile: out, encoding: .utf8)
        XCTAssertNotEqual(p.terminationStatus, 0, text)
        XCTAssertFalse(text.contains("STALE BINARY RAN"), text)
        XCTAssertTrue(text.contains("error: the build failed"), text)
    }

    // MARK: With the network (one load per test)

    /// FIFOs and devices among the images: each refused in one line, without blocking or reading
    /// forever; the good image is still processed. --max-pixels refuses large images.
    func testFIFOsDevicesAndPixelCap() throws {
        let coffee = try sample("coffee.png")
        let dir = try temporaryDirectory()
        XCTAssertEqual(mkfifo(dir + "/pipe.png", 0o600), 0)
        let r = try yolo(["detect", dir + "/pipe.png", "/dev/zero", coffee, "--no-draw"] + modelArgs, in: dir, timeout: 120)
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertEqual(r.stderr, "yolo: \(dir)/pipe.png: cannot read the file (not a regular file: it is a FIFO)\n"
                       + "yolo: /dev/zero: cannot read the file (not a regular file: it is a character device)\n")
        XCTAssertTrue(r.stdout.contains("cup: 64%"), r.stdout)
        let small = try yolo(["detect", coffee, "--no-draw", "--max-pixels", "239999"] + modelArgs, in: dir)
        XCTAssertEqual(small.status, 1)
        XCTAssertTrue(small.stderr.contains("image too large (600 x 400 = 240000 pixels; the limit is 239999)"), small.stderr)
        // A FIFO as the cfg: refused, not a hang.
        let cfg = try yolo(["detect", coffee, "--cfg", dir + "/pipe.png"], in: dir, timeout: 60)
        XCTAssertEqual(cfg.status, 1)
        XCTAssertTrue(cfg.stderr.contains("FIFO"), cfg.stderr)
    }



    func testDefaultOutputLikeDarknet() throws {
        let coffee = try sample("coffee.png")
        let dir = try temporaryDirectory()
        let r = try yolo(["detect", coffee] + modelArgs, in: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 2, r.stdout)
        guard lines.count == 2 else { return }   // (a run that printed nothing must not trap the suite)
        XCTAssertTrue(lines[0].hasPrefix("\(coffee): Predicted in "), lines[0])
        XCTAssertTrue(lines[0].hasSuffix(" ms."), lines[0])
        XCTAssertEqual(lines.dropFirst().first, "cup: 64%")   // Darknet: 0.640437961
        // The annotated image: predictions.png in the current directory, the input's size.
        XCTAssertNotNil(pngSize(dir + "/predictions.png"), "predictions.png is not a complete PNG")
        XCTAssertTrue(pngSize(dir + "/predictions.png").map { $0 == (600, 400) } ?? false)
    }

    func testJSONCOCOAndOutputDirectory() throws {
        let coffee = try sample("coffee.png"), motorcycle = try sample("motorcycle_left.png")
        let dir = try temporaryDirectory()
        let coco = dir + "/results.json"
        let r = try yolo(["detect", coffee, motorcycle, "--json", "--thresh", "0.1", "--output", dir + "/annotated",
                          "--coco", coco] + modelArgs, in: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stderr, "yolo: 2 annotated images in \(dir)/annotated/\n")
        let objects = try jsonLines(r.stdout)
        XCTAssertEqual(objects.count, 2)
        XCTAssertEqual(objects.map { $0["image"] as? String }, [coffee, motorcycle])
        XCTAssertEqual(objects.map { $0["width"] as? Int }, [600, 741])
        XCTAssertEqual(objects.map { $0["height"] as? Int }, [400, 500])
        XCTAssertNotNil(objects[0]["inference_ms"] as? Double)
        let dets = objects.map { ($0["detections"] as? [[String: Any]]) ?? [] }
        // Darknet at 0.1: coffee -> diningtable 0.111, cup 0.640, bowl 0.140; motorbike x3 (Darknet's coco.names spelling).
        XCTAssertEqual(dets[0].compactMap { $0["class"] as? String }, ["diningtable", "cup", "bowl"])
        XCTAssertEqual(dets[0].compactMap { $0["class_index"] as? Int }, [60, 41, 45])
        XCTAssertEqual(dets[1].compactMap { $0["class"] as? String }, ["motorbike", "motorbike", "motorbike"])
        let cup = dets[0][1]
        XCTAssertEqual(try XCTUnwrap(cup["confidence"] as? Double), 0.640437961, accuracy: 1e-4)
        let box = try XCTUnwrap(cup["box"] as? [String: Double])
        // Darknet's rel [0.48248595, 0.412764758, 0.461220324, 0.709284127] on 600x400.
        XCTAssertEqual(box["left"]!, (0.48248595 - 0.461220324 / 2) * 600, accuracy: 0.1)
        XCTAssertEqual(box["top"]!, (0.412764758 - 0.709284127 / 2) * 400, accuracy: 0.1)
        XCTAssertEqual(box["right"]!, (0.48248595 + 0.461220324 / 2) * 600, accuracy: 0.1)
        XCTAssertEqual(box["bottom"]!, (0.412764758 + 0.709284127 / 2) * 400, accuracy: 0.1)

        // Annotated images, one per input, under the input's name.
        XCTAssertTrue(pngSize(dir + "/annotated/coffee.png").map { $0 == (600, 400) } ?? false)
        XCTAssertTrue(pngSize(dir + "/annotated/motorcycle_left.png").map { $0 == (741, 500) } ?? false)

        // COCO results: one entry per detection, COCO category ids, pixel bbox inside the image.
        let results = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: coco))) as? [[String: Any]])
        XCTAssertEqual(results.count, 6)
        XCTAssertEqual(results.compactMap { $0["category_id"] as? Int }, [67, 47, 51, 4, 4, 4])
        XCTAssertEqual(results.compactMap { $0["image_id"] as? Int }, [0, 0, 0, 1, 1, 1])
        for entry in results {
            let bbox = try XCTUnwrap(entry["bbox"] as? [Double])
            XCTAssertEqual(bbox.count, 4)
            XCTAssertTrue(bbox.allSatisfy { $0 >= 0 } && bbox[0] + bbox[2] <= 741.001)
            XCTAssertNotNil(entry["score"] as? Double)
        }
    }

    func testDirectoryWithBadFiles() throws {
        let coffee = try sample("coffee.png")
        let dir = try temporaryDirectory()
        let images = dir + "/images"
        try FileManager.default.createDirectory(atPath: images + "/sub", withIntermediateDirectories: true)
        let good = try Data(contentsOf: URL(fileURLWithPath: coffee))
        try good.write(to: URL(fileURLWithPath: images + "/000000000042.PNG"))
        try good.prefix(good.count / 2).write(to: URL(fileURLWithPath: images + "/b_truncated.png"))
        try (Data([137, 80, 78, 71, 13, 10, 26, 10]) + Data(repeating: 0x5A, count: 300))
            .write(to: URL(fileURLWithPath: images + "/c_corrupt.png"))
        try Data().write(to: URL(fileURLWithPath: images + "/d_empty.jpg"))
        try Data("just some text\n".utf8).write(to: URL(fileURLWithPath: images + "/sub/e_text.jpeg"))
        try Data("ignored: not an image extension\n".utf8).write(to: URL(fileURLWithPath: images + "/notes.txt"))

        let r = try yolo(["detect", images, dir + "/missing.png", "--json", "--no-draw", "--coco", dir + "/coco.json"] + modelArgs,
                         in: dir)
        XCTAssertEqual(r.status, 1, r.stderr)
        // The good image is still processed.
        let objects = try jsonLines(r.stdout)
        XCTAssertEqual(objects.count, 1, r.stdout)
        XCTAssertEqual(objects.first?["image"] as? String, images + "/000000000042.PNG")
        let classes = ((objects.first?["detections"] as? [[String: Any]]) ?? []).compactMap { $0["class"] as? String }
        XCTAssertEqual(classes, ["cup"])
        // One clear line per bad file, each naming it.
        let errors = r.stderr.split(separator: "\n").map(String.init)
        XCTAssertEqual(errors.count, 5, r.stderr)
        for name in ["images/b_truncated.png", "images/c_corrupt.png", "images/d_empty.jpg", "images/sub/e_text.jpeg", "missing.png"] {
            XCTAssertTrue(errors.contains { $0.hasPrefix("yolo: \(dir)/\(name): ") }, "no error for \(name): \(r.stderr)")
        }
        XCTAssertFalse(r.stderr.contains("notes.txt"))
        // A numeric file name is the COCO image id.
        let coco = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/coco.json"))) as? [[String: Any]])
        XCTAssertEqual(coco.compactMap { $0["image_id"] as? Int }, [42])
        XCTAssertEqual(coco.compactMap { $0["category_id"] as? Int }, [47])
        // Nothing drawn with --no-draw.
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/predictions"))
    }
}
