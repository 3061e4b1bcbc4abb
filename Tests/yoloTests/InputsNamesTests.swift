import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Every file a folder scan finds is detected or reported (a line naming it, exit 1), whatever
/// its name: not UTF-8, or under a path longer than PATH_MAX; and `--coco` gives every distinct
/// file its own image id.
final class InputsNamesTests: XCTestCase {
    func yolo(_ args: [String], in dir: String) throws -> ProcessOutput {
        try runProcess(try yoloBinary(), args, in: dir, timeout: 300)
    }

    func writePNG(_ path: String) throws {
        try Fixtures.png(width: 40, height: 30, Fixtures.noise).write(to: URL(fileURLWithPath: path))
    }

    /// Writes a PNG at `name` (raw bytes) under the directory `dirFD`.
    func writePNG(_ name: [UInt8], in dirFD: Int32) throws {
        let bytes = [UInt8](Fixtures.png(width: 40, height: 30, Fixtures.noise))
        let fd = (name + [0]).withUnsafeBufferPointer {
            openat(dirFD, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        }
        XCTAssertGreaterThanOrEqual(fd, 0, String(cString: strerror(errno)))
        XCTAssertEqual(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }, bytes.count)
        close(fd)
    }

    func testANameThatIsNotUTF8IsReportedNotSkipped() throws {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        try FileManager.default.createDirectory(atPath: dir + "/images", withIntermediateDirectories: true)
        try writePNG(dir + "/images/a.png")
        let images = open(dir + "/images", O_RDONLY | O_DIRECTORY)
        defer { close(images) }
        try writePNG(Array("b".utf8) + [0xFF, 0xFE] + Array(".png".utf8), in: images)
        let r = try yolo(["detect", dir + "/images", "--json", "--no-draw"] + model, in: dir)
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertEqual(r.stdout.split(separator: "\n").count, 1, r.stdout)
        XCTAssertTrue(r.stderr.contains("yolo: \(dir)/images/b\\xFF\\xFE.png: the file name is not valid UTF-8"), r.stderr)
    }

    func testAPathLongerThanPathMaxIsReportedNotDropped() throws {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        try writePNG(dir + "/a.png")
        // Directories of 200-byte names down to just under PATH_MAX (4096), each made relative
        // to the one above (a path that long cannot be given whole); then a file and a directory
        // whose paths are over it.
        var fd = open(dir, O_RDONLY | O_DIRECTORY)
        var length = dir.utf8.count
        let part = String(repeating: "d", count: 200)
        while length < 4000 {
            let name = length + 201 <= 4000 ? part : String(repeating: "e", count: 4000 - length - 1)
            XCTAssertEqual(mkdirat(fd, name, 0o755), 0)
            let next = openat(fd, name, O_RDONLY | O_DIRECTORY)
            close(fd)
            fd = next
            length += name.utf8.count + 1
        }
        defer { close(fd) }
        try writePNG(Array((String(repeating: "f", count: 200) + ".png").utf8), in: fd)
        XCTAssertEqual(mkdirat(fd, String(repeating: "s", count: 200), 0o755), 0)
        addTeardownBlock { _ = try? runProcess("rm", ["-rf", dir], in: "/") }  // (FileManager stops at PATH_MAX)
        let r = try yolo(["detect", dir, "--json", "--no-draw"] + model, in: dir)
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertEqual(r.stdout.split(separator: "\n").count, 1, r.stdout)
        let errors = r.stderr.split(separator: "\n")
        XCTAssertEqual(errors.filter { $0.contains("File name too long") }.count, 2, r.stderr)
        XCTAssertTrue(errors.contains { $0.hasSuffix("ffff.png: File name too long (the path is longer than PATH_MAX, 4096 bytes)") }, r.stderr)
    }

    func testCOCOImageIDsAreDistinctForDistinctFiles() throws {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        try FileManager.default.createDirectory(atPath: dir + "/i/sub", withIntermediateDirectories: true)
        for name in ["2.png", "a.png", "b.png", "7.png", "sub/7.png", "07.png", "COCO_val2014_000000000042.png"] {
            try writePNG(dir + "/i/" + name)
        }
        let r = try yolo(["detect", dir + "/i", dir + "/i/a.png", "--no-draw", "--json", "--coco", dir + "/coco.json"] + model, in: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        let entries = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/coco.json"))) as? [[String: Any]])
        let ids = entries.compactMap { $0["image_id"] as? Int }
        // Sorted scan: 07, 2, 7, COCO_..42, a, b, sub/7; then a.png again (the same file: the same id).
        XCTAssertEqual(ids.count, 8, "\(entries)")
        XCTAssertEqual(Set(ids.prefix(7)).count, 7, "ids \(ids)")
        XCTAssertEqual(ids[7], ids[4], "a.png given twice is one image: \(ids)")
        XCTAssertEqual(ids[1], 2, "a numeric name that no other file claims keeps its number: \(ids)")
        XCTAssertEqual(ids[3], 42, "\(ids)")
        XCTAssertFalse([ids[0], ids[2], ids[6]].contains(7), "07, 7 and sub/7 all claim 7: none takes it over the others: \(ids)")
    }
}
