import Foundation
import XCTest

/// A `--files-from` line over the 64 KiB a path may take is one bad path like any other: its own
/// error line (naming the line and the limit), the paths after it are still detected, and
/// `--resume` goes past it (the next run finds it answered and adds nothing).
extension BatchTests {
    func testAnOverlongListLineIsAnErrorLineAndTheBatchGoesOn() throws {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        let imgs = try images(3, in: dir)
        let long = String(repeating: "x", count: 70_000), longer = String(repeating: "y", count: 300_000)
        // The last line over the limit has no newline: the end of the list ends it.
        try Data((imgs[0] + "\n" + long + "\n" + imgs[1] + "\n" + longer + "\n" + imgs[2] + "\n" + long).utf8)
            .write(to: URL(fileURLWithPath: dir + "/list.txt"))

        let r = try yolo(["detect", "--json", "--files-from", "list.txt"] + model, in: dir)
        XCTAssertEqual(r.status, 1, r.stderr)
        let lines = try jsonLines(r.stdout)
        guard lines.count == 6 else { return XCTFail("\(lines.count) lines, not 6: \(r.stdout.prefix(2000))\n\(r.stderr.prefix(2000))") }
        for (i, n) in [(0, 0), (2, 1), (4, 2)] { XCTAssertEqual(lines[i]["image"] as? String, imgs[n]); XCTAssertNil(lines[i]["error"]) }
        for (i, lineNumber) in [(1, 2), (3, 4), (5, 6)] {
            let error = lines[i]["error"] as? String ?? ""
            XCTAssertTrue(error.contains("line \(lineNumber) of list.txt is longer than 65536 bytes"), "\(lines[i])")
            XCTAssertLessThan((lines[i]["image"] as? String ?? "").utf8.count, 1000, "the error line holds a short prefix")
        }
        let errors = r.stderr.split(separator: "\n")
        XCTAssertEqual(errors.count, 3, r.stderr)
        XCTAssertTrue(errors.allSatisfy { $0.contains("is longer than 65536 bytes") && $0.utf8.count < 1000 }, r.stderr)

        // Darknet's text: the same errors on stderr, every image detected.
        let text = try yolo(["detect", "--files-from", "list.txt"] + model, in: dir)
        XCTAssertEqual(text.status, 1, text.stderr)
        XCTAssertEqual(text.stdout.split(separator: "\n").filter { $0.contains(": Predicted in ") }.count, 3, text.stdout)

        // --resume: every line answered in one run; the next run adds nothing and exits 0.
        let first = try yolo(["detect", "--files-from", "list.txt", "--resume", "out.jsonl"] + model, in: dir)
        XCTAssertEqual(first.status, 1, first.stderr)
        let written = try String(contentsOfFile: dir + "/out.jsonl", encoding: .utf8)
        XCTAssertEqual(written.split(separator: "\n").count, 6)
        let again = try yolo(["detect", "--files-from", "list.txt", "--resume", "out.jsonl"] + model, in: dir)
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(try String(contentsOfFile: dir + "/out.jsonl", encoding: .utf8), written)
    }
}
