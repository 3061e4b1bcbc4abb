import Foundation
import XCTest

/// `yolo calibrate` on bad images and the tables it makes (progress, the weights they are for).
final class CLICalibrateTests: XCTestCase {
    func yolo(_ args: [String], in dir: String) throws -> Fixtures.Finished {
        try Fixtures.spawn([try yoloBinary()] + args, in: dir)
    }

    /// A corrupt image among the calibration images is skipped with a line naming it; each
    /// image's progress is on stderr; only when no image is usable does the run fail.
    func testCalibrateSkipsACorruptImageAndShowsProgress() throws {
        let dir = try temporaryDirectory()
        let model = Array(try Fixtures.tinyModel(in: dir).prefix(4))
        for (i, name) in ["a.png", "c.png"].enumerated() {
            try Fixtures.png(width: 40 + i, height: 30, Fixtures.noise).write(to: URL(fileURLWithPath: dir + "/" + name))
        }
        try Data("not a png".utf8).write(to: URL(fileURLWithPath: dir + "/b.png"))
        let r = try yolo(["calibrate", dir + "/a.png", dir + "/b.png", dir + "/c.png", "--out", dir + "/t.int8"] + model, in: dir)
        XCTAssertEqual(r.exitStatus, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("yolo: calibrate: skipping \(dir)/b.png: "), r.stderr)
        XCTAssertTrue(r.stderr.contains("image 1/2: \(dir)/a.png"), r.stderr)
        XCTAssertTrue(r.stderr.contains("image 2/2: \(dir)/c.png"), r.stderr)
        XCTAssertTrue(r.stderr.contains("forward 8/8"), r.stderr)  // 2 images x (ranges, histograms, FP32, 1 layer)
        let table = try String(contentsOfFile: dir + "/t.int8", encoding: .utf8)
        XCTAssertTrue(table.contains("\nimages 2\n"), table)

        let none = try yolo(["calibrate", dir + "/b.png", "--out", dir + "/u.int8"] + model, in: dir)
        XCTAssertEqual(none.exitStatus, 1, none.stderr)
        XCTAssertTrue(none.stderr.contains("yolo: calibrate: no usable image (1 skipped)"), none.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/u.int8"))
    }

    /// A table records the weights it was measured with: the same cfg with other weights is
    /// refused (the ranges are those of other activations), its own weights are fine.
    func testAnInt8TableIsForItsWeights() throws {
        let dir = try temporaryDirectory(), other = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        let cfg = try String(contentsOfFile: dir + "/model.cfg", encoding: .utf8)
        let otherModel = try Fixtures.model(in: other, cfg: cfg, floats: [0, 0, 0.5, -1, 4, 4, -4] + [Float](repeating: 0.01, count: 21),
                                            names: "thing\nother\n")
        try Fixtures.png(width: 40, height: 30, Fixtures.noise).write(to: URL(fileURLWithPath: dir + "/p.png"))
        let made = try yolo(["calibrate", dir + "/p.png", "--out", dir + "/t.int8", "--fp32", "none"] + model.prefix(4), in: dir)
        XCTAssertEqual(made.exitStatus, 0, made.stderr)
        let own = try yolo(["detect", dir + "/p.png", "--no-draw", "--precision", "int8", "--int8-table", dir + "/t.int8"] + model, in: dir)
        XCTAssertEqual(own.exitStatus, 0, own.stderr)
        let foreign = try yolo(["detect", dir + "/p.png", "--no-draw", "--precision", "int8", "--int8-table", dir + "/t.int8"] + otherModel,
                               in: dir)
        XCTAssertEqual(foreign.exitStatus, 1, foreign.stderr)
        XCTAssertTrue(foreign.stderr.contains("t.int8: this INT8 calibration table was made for other weights"), foreign.stderr)
    }

    /// `--gptq` writes the layers' rounding into the table (format 2), which detect takes; a
    /// layer that is no convolution, or that stays FP32, is refused before any image runs.
    func testGPTQRoundingGoesIntoTheTable() throws {
        let dir = try temporaryDirectory()
        let model = try Fixtures.tinyModel(in: dir)
        try Fixtures.png(width: 40, height: 30, Fixtures.noise).write(to: URL(fileURLWithPath: dir + "/p.png"))
        let made = try yolo(["calibrate", dir + "/p.png", "--out", dir + "/t.int8", "--fp32", "none", "--gptq", "0"] + model.prefix(4), in: dir)
        XCTAssertEqual(made.exitStatus, 0, made.stderr)
        XCTAssertTrue(made.stderr.contains("yolo: calibrate: GPTQ rounding of layer 0\n"), made.stderr)
        let table = try String(contentsOfFile: dir + "/t.int8", encoding: .utf8)
        XCTAssertTrue(table.hasPrefix("yolo-swift int8 2\n") && table.contains("\nrounding 0 0 21 "), table)
        let detect = try yolo(["detect", dir + "/p.png", "--no-draw", "--precision", "int8", "--int8-table", dir + "/t.int8"] + model, in: dir)
        XCTAssertEqual(detect.exitStatus, 0, detect.stderr)
        for (args, message) in [(["--gptq", "1"], "--gptq: layer 1 is not a convolution of"),
                                (["--gptq", "0", "--fp32", "0"], "--gptq: layer 0 is also in --fp32"),
                                (["--gptq", "x"], "--gptq x: expected layer indices")] {
            let r = try yolo(["calibrate", dir + "/p.png", "--out", dir + "/u.int8"] + args + model.prefix(4), in: dir)
            XCTAssertEqual(r.exitStatus, 64, r.stderr)
            XCTAssertTrue(r.stderr.contains(message), "\(r.stderr) should say \(message)")
            XCTAssertFalse(r.stderr.contains("image 1/1"), "refused before the images run: \(r.stderr)")
        }
        // The first convolution stays FP32 unless --fp32 says otherwise: nothing to round.
        let first = try yolo(["calibrate", dir + "/p.png", "--out", dir + "/v.int8", "--gptq", "0"] + model.prefix(4), in: dir)
        XCTAssertEqual(first.exitStatus, 64, first.stderr)
        XCTAssertTrue(first.stderr.contains("--gptq: layer 0 stays FP32 in the table"), first.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/v.int8"))
    }
}
