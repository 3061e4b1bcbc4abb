import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// What an output path may be (docs/hardening.md: "Outputs ..."): a regular file or nothing is
/// replaced atomically; a symbolic link is written through (the link stays); a FIFO or a
/// character device is written as a stream (it stays what it is); a block device, a socket or a
/// directory is refused with a line naming the path and what it is. Through `yolo detect`'s
/// --coco and --output (the annotated image), `yolo calibrate --out` and `yolo heads --out`.
final class WriteTargetTests: XCTestCase {
    func yolo(_ args: [String], in dir: String) throws -> ProcessOutput {
        try runProcess(try yoloBinary(), args, in: dir, timeout: 300)
    }

    /// The kind of what is at `path` (not following a link): S_IFREG, S_IFLNK, ...
    func kind(_ path: String) -> mode_t? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode & S_IFMT : nil
    }

    /// glibc's makedev (a macro, not imported) for majors under 4096 and minors under 256.
    func deviceNumber(_ major: UInt, _ minor: UInt) -> dev_t { dev_t(major << 8 | minor) }

    /// A tiny model and one image in a new directory.
    func setUpRun() throws -> (dir: String, model: [String], image: String) {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        try Fixtures.png(width: 40, height: 30, Fixtures.noise).write(to: URL(fileURLWithPath: dir + "/p.png"))
        return (dir, model, dir + "/p.png")
    }

    /// Reads a FIFO on a thread of its own until its writer closes it (bounded: 300 s).
    final class FIFOReader: @unchecked Sendable {
        private var bytes: [UInt8] = []
        private let done = DispatchSemaphore(value: 0)
        private let lock = NSLock()

        init(_ path: String) {
            Thread.detachNewThread { [self] in
                // Non-blocking open: a reader is there at once, whoever writes first.
                let fd = open(path, O_RDONLY | O_NONBLOCK)
                let deadline = Date().addingTimeInterval(300)
                var sawData = false, buffer = [UInt8](repeating: 0, count: 1 << 16)
                while fd >= 0 && Date() < deadline {
                    let n = read(fd, &buffer, buffer.count)
                    if n > 0 {
                        sawData = true
                        lock.lock(); bytes += buffer[..<n]; lock.unlock()
                    } else if n == 0 && sawData {
                        break  // the writer closed it
                    } else {
                        usleep(5_000)  // no writer yet (0), or nothing to read yet (EAGAIN)
                    }
                }
                if fd >= 0 { close(fd) }
                done.signal()
            }
        }

        /// What was read, once the writer closed the FIFO (or after `seconds`).
        func result(seconds: Double) -> [UInt8] {
            _ = done.wait(timeout: .now() + seconds)
            lock.lock(); defer { lock.unlock() }
            return bytes
        }
    }

    func testAFIFOGetsTheBytesAndStaysAFIFO() throws {
        let (dir, model, image) = try setUpRun()
        let coco = dir + "/coco.fifo", annotated = dir + "/annotated.png"
        XCTAssertEqual(mkfifo(coco, 0o600), 0)
        XCTAssertEqual(mkfifo(annotated, 0o600), 0)
        let cocoReader = FIFOReader(coco), imageReader = FIFOReader(annotated)
        let r = try yolo(["detect", image, "--coco", coco, "--output", annotated] + model, in: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        let json = cocoReader.result(seconds: 10), png = imageReader.result(seconds: 10)
        XCTAssertTrue(String(decoding: json, as: UTF8.self).hasPrefix("[\n{\"image_id\": "), String(decoding: json, as: UTF8.self))
        XCTAssertEqual(Array(png.prefix(8)), [137, 80, 78, 71, 13, 10, 26, 10], "the annotated PNG came through the FIFO")
        XCTAssertEqual(kind(coco), S_IFIFO)
        XCTAssertEqual(kind(annotated), S_IFIFO)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.contains(".tmp-") }, [])
    }

    func testASymbolicLinkStaysAndItsTargetGetsTheContent() throws {
        let (dir, model, image) = try setUpRun()
        try FileManager.default.createDirectory(atPath: dir + "/real", withIntermediateDirectories: true)
        try Data("old".utf8).write(to: URL(fileURLWithPath: dir + "/real/coco.json"))
        XCTAssertEqual(symlink("real/coco.json", dir + "/coco.json"), 0)          // relative, to a file
        XCTAssertEqual(symlink(dir + "/real/new.png", dir + "/out.png"), 0)      // absolute, dangling
        XCTAssertEqual(symlink("coco.json", dir + "/chain.json"), 0)             // a link to a link
        let r = try yolo(["detect", image, "--coco", dir + "/coco.json", "--output", dir + "/out.png"] + model, in: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(kind(dir + "/coco.json"), S_IFLNK)
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: dir + "/coco.json"), "real/coco.json")
        XCTAssertTrue(try String(contentsOfFile: dir + "/real/coco.json", encoding: .utf8).hasPrefix("[\n{\"image_id\""))
        XCTAssertEqual(kind(dir + "/out.png"), S_IFLNK)
        XCTAssertEqual(kind(dir + "/real/new.png"), S_IFREG, "a dangling link's target is made")
        // Through two links: the file at the end gets it, both links stay.
        try Data("old".utf8).write(to: URL(fileURLWithPath: dir + "/real/coco.json"))
        let chained = try yolo(["detect", image, "--no-draw", "--coco", dir + "/chain.json"] + model, in: dir)
        XCTAssertEqual(chained.status, 0, chained.stderr)
        XCTAssertEqual(kind(dir + "/chain.json"), S_IFLNK)
        XCTAssertEqual(kind(dir + "/coco.json"), S_IFLNK)
        XCTAssertTrue(try String(contentsOfFile: dir + "/real/coco.json", encoding: .utf8).hasPrefix("[\n{\"image_id\""))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir + "/real").sorted(), ["coco.json", "new.png"])
    }

    /// /dev/fd/N and /proc/self/fd/N (what /dev/stdout and /dev/stderr lead to) are written to
    /// that descriptor as it is, as a shell does: the COCO results join the text on stdout (a file
    /// here), not replace the file stdout is open on. (Not /dev/stdout itself: a regression to
    /// renaming over a link must not be able to touch the machine's /dev.)
    func testOwnDescriptorsAreWrittenAsTheyAre() throws {
        let (dir, model, image) = try setUpRun()
        let out = try yolo(["detect", image, "--no-draw", "--coco", "/dev/fd/1"] + model, in: dir)
        XCTAssertEqual(out.status, 0, out.stderr)
        XCTAssertTrue(out.stdout.contains(": Predicted in ") && out.stdout.contains("[\n{\"image_id\": "), out.stdout)
        let err = try yolo(["detect", image, "--no-draw", "--coco", "/proc/self/fd/2"] + model, in: dir)
        XCTAssertEqual(err.status, 0, err.stderr)
        XCTAssertTrue(err.stdout.contains(": Predicted in "), err.stdout)
        XCTAssertTrue(err.stderr.hasPrefix("[\n{\"image_id\": "), err.stderr)
    }

    /// A character device node (1,3: what /dev/null is) made in a temporary directory, so a
    /// regression replaces that node, never the system's /dev/null.
    func testACharacterDeviceStaysADevice() throws {
        let (dir, model, image) = try setUpRun()
        let null = dir + "/null"
        guard getuid() == 0, mknod(null, S_IFCHR | 0o666, deviceNumber(1, 3)) == 0 else {
            throw XCTSkip("making a device node needs root")
        }
        let probe = open(null, O_WRONLY)
        guard probe >= 0 else { throw XCTSkip("device nodes do not open here (a nodev mount): \(String(cString: strerror(errno)))") }
        close(probe)
        let r = try yolo(["detect", image, "--no-draw", "--coco", null] + model, in: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(kind(null), S_IFCHR)
        // A symbolic link to it: written through, both stay.
        XCTAssertEqual(symlink(null, dir + "/to-null.json"), 0)
        let linked = try yolo(["detect", image, "--no-draw", "--coco", dir + "/to-null.json"] + model, in: dir)
        XCTAssertEqual(linked.status, 0, linked.stderr)
        XCTAssertEqual(kind(dir + "/to-null.json"), S_IFLNK)
        XCTAssertEqual(kind(null), S_IFCHR)
    }

    /// A block device, a socket, a directory (also behind a link): one line naming the path and
    /// what it is, exit 1, and the node left as it was.
    func testBlockDevicesSocketsAndDirectoriesAreRefused() throws {
        let (dir, model, image) = try setUpRun()
        var targets: [(path: String, kind: mode_t, what: String)] = []
        // (A major number of the experimental range: no driver behind it, nothing to harm.)
        if getuid() == 0, mknod(dir + "/blk", S_IFBLK | 0o600, deviceNumber(240, 77)) == 0 {
            targets.append((dir + "/blk", S_IFBLK, "a block device"))
        }
        let sock = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(sock) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let socketPath = dir + "/sock"
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in socketPath.utf8.prefix(raw.count - 1).enumerated() { raw[i] = b }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(sock, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if bound == 0 { targets.append((socketPath, S_IFSOCK, "a socket")) }
        try FileManager.default.createDirectory(atPath: dir + "/adir", withIntermediateDirectories: true)
        targets.append((dir + "/adir", S_IFDIR, "a directory"))
        XCTAssertEqual(symlink(dir + "/adir", dir + "/to-dir.json"), 0)
        targets.append((dir + "/to-dir.json", S_IFLNK, "a directory"))
        for t in targets {
            let r = try yolo(["detect", image, "--no-draw", "--coco", t.path] + model, in: dir)
            XCTAssertEqual(r.status, 1, "\(t.path): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("yolo: \(t.path): cannot write the file: ") && r.stderr.contains(t.what), "\(t.path): \(r.stderr)")
            XCTAssertEqual(kind(t.path), t.kind, t.path)
            // --resume's file (appended to, read back) is refused alike, before it is opened.
            let resume = try yolo(["detect", image, "--no-draw", "--resume", t.path] + model, in: dir)
            XCTAssertEqual(resume.status, 1, "--resume \(t.path): \(resume.stderr)")
            XCTAssertTrue(resume.stderr.contains("yolo: \(t.path): ") && resume.stderr.contains(t.what), "--resume \(t.path): \(resume.stderr)")
            XCTAssertEqual(kind(t.path), t.kind, t.path)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir + "/adir"), [])
    }

    /// `yolo calibrate --out` and `yolo heads --out DIR` (its files) take the same rules.
    func testCalibrateAndHeadsOutputsFollowTheRules() throws {
        let (dir, model, image) = try setUpRun()
        XCTAssertEqual(mkfifo(dir + "/table.fifo", 0o600), 0)
        let reader = FIFOReader(dir + "/table.fifo")
        let cfgAndWeights = Array(model.prefix(4))
        let made = try yolo(["calibrate", image, "--out", dir + "/table.fifo", "--method", "minmax", "--max-effect", "none"]
                            + cfgAndWeights, in: dir)
        XCTAssertEqual(made.status, 0, made.stderr)
        XCTAssertTrue(String(decoding: reader.result(seconds: 10), as: UTF8.self).hasPrefix("yolo-swift int8 1\n"))
        XCTAssertEqual(kind(dir + "/table.fifo"), S_IFIFO)

        try Data(count: 3 * 32 * 32 * 4).write(to: URL(fileURLWithPath: dir + "/input.f32"))
        try FileManager.default.createDirectory(atPath: dir + "/heads/elsewhere", withIntermediateDirectories: true)
        XCTAssertEqual(symlink("elsewhere/h0", dir + "/heads/head0.f32"), 0)
        let heads = try yolo(["heads", dir + "/input.f32", "--out", dir + "/heads"] + cfgAndWeights, in: dir)
        XCTAssertEqual(heads.status, 0, heads.stderr)
        XCTAssertTrue(heads.stdout.contains("input preprocessing: letterbox (no letter_box in the cfg)"), heads.stdout)
        XCTAssertEqual(kind(dir + "/heads/head0.f32"), S_IFLNK)
        XCTAssertEqual(kind(dir + "/heads/elsewhere/h0"), S_IFREG)
    }
}
