import Foundation
import XCTest
import YOLO
import YOLOImage

/// INT8 (`--precision int8` with the table shipped in weights/yolov3-tiny.int8) against FP32 on
/// the sample photos, as issue #20 measures it: a detection matches one of the other precision
/// with the same class and IoU >= 0.5; recall and precision pooled over the photos >= 0.97. And
/// INT8 heads the same, bit for bit, at every kernel level (the integer sums are exact everywhere).
final class Int8AccuracyTests: XCTestCase {
    func paths() throws -> (cfg: String, weights: String, names: String) { try PrecisionAccuracy.paths() }
    func samples() throws -> [RGBImage] { try PrecisionAccuracy.samples() }

    /// FP32's and INT8's detections of each photo (2-thread detectors at `threshold`), with the
    /// INT8 detector for its plan.
    func detections(_ photos: [RGBImage], threshold: Float, int8 options: ModelOptions = ModelOptions(precision: .int8))
        throws -> (results: [([Detection], [Detection])], int8: Detector) {
        let (cfg, weights, names) = try paths()
        let o = DetectorOptions(threshold: threshold)
        let fp32 = try Detector(cfgPath: cfg, weightsPath: weights, namesPath: names, options: o, threads: 2)
        let int8 = try Detector(cfgPath: cfg, weightsPath: weights, namesPath: names, options: o, threads: 2, modelOptions: options)
        let results = try photos.map { p in
            (try fp32.detect(rgb: p.pixels, width: p.width, height: p.height), try int8.detect(rgb: p.pixels, width: p.width, height: p.height))
        }
        return (results, int8)
    }

    func testInt8DetectionsMatchFP32OnTheSamples() throws {
        let (results, int8) = try detections(try samples(), threshold: 0.1)
        // The table next to the weights was found, and most of the network runs in INT8 (the
        // shipped table keeps the first of the 13 convolutions FP32, and the two before the heads
        // where the level's pair product does not outrun FP32: `a12`).
        let int8Steps = int8.model.plan.entries.filter { $0.precision == .int8 }.count
        XCTAssertGreaterThanOrEqual(int8Steps, 8, int8.model.plan.description)
        // (Above 0.25: the detections above 0.1 that pass it; NMS lets no weaker box suppress them.)
        // The samples have too few boxes for a ratio of 0.97 (one borderline box moves it by more
        // than 0.03): at most one box may differ, and at 0.25 only one the other precision finds
        // just under the threshold (astronaut.png's bottle: FP32 0.239, INT8 0.251 with the GPTQ
        // table, 0.217 before it); the 0.97 is held on issue #49's evaluation photos
        // (testInt8OnTheEvaluationPhotos).
        for threshold: Float in [0.25, 0.1] {
            let f = PrecisionAccuracy.compare(results, threshold: threshold)
            let summary = "INT8 at threshold \(threshold): \(f)"
            XCTAssertGreaterThanOrEqual(f.reference, threshold < 0.2 ? 10 : 4, summary)
            XCTAssertLessThanOrEqual(f.oneSided, 1, summary + ": detections in one precision only")
            if threshold > 0.2 { XCTAssertEqual(f.oneSided, f.borderline, summary + ": a box in one precision only that is not borderline") }
            XCTAssertLessThan(f.maxDrift, 0.1, summary + ": the largest confidence change of a matched detection")
        }
    }

    /// The issue's first set, the samples and Darknet's images in ../shared/images (where this
    /// checkout has them), at its threshold (0.25), with the fixed table's plan (what `yolo detect
    /// --precision int8` runs on a machine without `yolo tune`). Its 28 boxes are too few for the
    /// issue's 0.97 (one box is 0.035), which its evaluation photos hold
    /// (testInt8OnTheEvaluationPhotos): here at most one box may be found in one precision only,
    /// and only one the other finds just under the threshold. With 8-bit inputs everywhere one
    /// box crossed it by far, person.jpg's sheep on the horse (FP32 0.216, INT8 0.261: 28 / 29 /
    /// 28); the shipped table's 10-bit inputs keep it under. With the GPTQ table astronaut.png's
    /// bottle crosses it by a hair (FP32 0.239, INT8 0.251: 28 / 29 / 28, drift 0.0107 against
    /// 0.0177 before, 2026-12-06).
    func testInt8OnTheIssuesPhotoSet() throws {
        let darknet = try PrecisionAccuracy.darknetImages()
        guard !darknet.isEmpty else { throw XCTSkip("no ../shared/images beside this checkout") }
        let photos = try samples() + darknet
        let (results, _) = try detections(photos, threshold: 0.2)
        let f = PrecisionAccuracy.compare(results, threshold: 0.25)
        let summary = "INT8 on \(photos.count) photos at 0.25: \(f)"
        XCTAssertGreaterThanOrEqual(f.reference, 20, summary)
        XCTAssertLessThanOrEqual(f.oneSided, 1, summary + ": detections in one precision only")
        XCTAssertEqual(f.oneSided, f.borderline, summary + ": a box in one precision only that is not borderline")
        XCTAssertLessThan(f.meanDrift, 0.02, summary)
    }

    /// Issue #49: the evaluation part of the photo set (eval-photos/eval, photos no calibration saw:
    /// the shipped table is made from eval-photos/calib), at the issue's threshold (0.25) with the
    /// fixed table's plan: recall and precision >= 0.97. Skipped where the photos are not fetched.
    func testInt8OnTheEvaluationPhotos() throws {
        let (all, missing) = try PrecisionAccuracy.evalPhotoPaths(split: "eval")
        XCTAssertGreaterThanOrEqual(all.count, 150, "the manifest's eval part")
        guard missing == 0 else {
            throw XCTSkip("\(missing) of the \(all.count) photos of eval-photos/eval are missing: run python3 scripts/eval-photos.py")
        }
        // Under a sanitizer every 8th photo, the same code over fewer pixels (90 s of ASan's run
        // for the whole set), and a looser floor: the set's accuracy is scripts/test's to check.
        let sanitized = ProcessInfo.processInfo.environment["YOLO_TEST_SANITIZER"] != nil
        let photos = sanitized ? all.enumerated().filter { $0.offset % 8 == 0 }.map(\.element) : all
        let floor = sanitized ? 0.9 : 0.97
        let (cfg, weights, names) = try paths()
        let o = DetectorOptions(threshold: 0.25)
        let fp32 = try Detector(cfgPath: cfg, weightsPath: weights, namesPath: names, options: o, threads: 2)
        let int8 = try Detector(cfgPath: cfg, weightsPath: weights, namesPath: names, options: o, threads: 2,
                                modelOptions: ModelOptions(precision: .int8))
        // One photo at a time: the set decoded at once would hold a few hundred MiB.
        let results = try photos.map { path -> ([Detection], [Detection]) in
            let p = try loadImage(path: path)
            return (try fp32.detect(rgb: p.pixels, width: p.width, height: p.height), try int8.detect(rgb: p.pixels, width: p.width, height: p.height))
        }
        XCTAssertTrue(results.allSatisfy { !$0.0.isEmpty }, "every photo of the set has an FP32 detection at 0.25")
        let f = PrecisionAccuracy.compare(results, threshold: 0.25)
        let summary = "INT8 on the \(photos.count) evaluation photos at 0.25: \(f)"
        XCTAssertGreaterThanOrEqual(f.recall, floor, summary)
        XCTAssertGreaterThanOrEqual(f.precision, floor, summary)
        XCTAssertLessThan(f.meanDrift, 0.02, summary)
    }

    /// The manifest of issue #49's set: every photo line is a split, a sha256, a package with a
    /// source line and a path; the local names are unique; the eval part has at least 150 photos.
    func testEvalPhotoManifest() throws {
        let manifest = try String(contentsOfFile: PrecisionAccuracy.root + "/Tests/IntegrationTests/Fixtures/eval-photos.txt", encoding: .utf8)
        let lines = manifest.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("#") }
        let sources = Set(lines.filter { $0.hasPrefix("source ") }.map { $0.split(separator: " ")[2] })
        for line in lines where !line.hasPrefix("source ") {
            let f = line.split(separator: " ")
            XCTAssertEqual(f.count, 4, String(line))
            guard f.count == 4 else { continue }
            XCTAssertTrue(f[0] == "calib" || f[0] == "eval", String(line))
            XCTAssertTrue(f[1].count == 64 && f[1].allSatisfy { $0.isHexDigit }, String(line))
            XCTAssertTrue(sources.contains(f[2]), "no source line for \(f[2])")
        }
        let (calib, eval) = (PrecisionAccuracy.evalPhotoNames(manifest: manifest, split: "calib"),
                             PrecisionAccuracy.evalPhotoNames(manifest: manifest, split: "eval"))
        XCTAssertEqual(Set(calib + eval).count, calib.count + eval.count, "unique local names")
        XCTAssertGreaterThanOrEqual(eval.count, 150)
        XCTAssertGreaterThan(calib.count, 0)
        XCTAssertEqual(calib.count + eval.count, lines.count - sources.count)
        XCTAssertEqual(PrecisionAccuracy.evalPhotoNames(manifest: "eval \(String(repeating: "0", count: 64)) pkg usr/share/a/b.jpg\n", split: "eval"),
                       ["pkg__b.jpg"])
    }

    /// scripts/eval-photos.py reads the same manifest: `--list` names each photo's split and local
    /// path as the tests find them (fetching needs Debian's and PyPI's servers: not run here).
    func testEvalPhotosScriptListsTheManifest() throws {
        let manifest = try String(contentsOfFile: PrecisionAccuracy.root + "/Tests/IntegrationTests/Fixtures/eval-photos.txt", encoding: .utf8)
        let process = Process(), pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", PrecisionAccuracy.root + "/scripts/eval-photos.py", "--list", "--dest", "/d"]
        process.standardOutput = pipe
        do { try process.run() } catch { throw XCTSkip("no python3: \(error)") }
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        let expected = ["calib", "eval"].flatMap { split in
            PrecisionAccuracy.evalPhotoNames(manifest: manifest, split: split).map { "\(split) /d/\(split)/\($0)" }
        }
        XCTAssertEqual(output.split(separator: "\n").map(String.init).sorted(), expected.sorted())
    }

    /// yolov3-tiny's 3x3 convolutions of 32 or more input channels: where INT8 Winograd applies
    /// and pays (`yolo tune` picks it there on an AVX2 Zen 3).
    static let winogradLayers: [Int: ConvAlgorithm] = Dictionary(uniqueKeysWithValues: [4, 6, 8, 10, 12, 14, 21].map {
        ($0, ConvAlgorithm(.winograd4, .int8))
    })

    /// The same with INT8 Winograd F(4x4) on those layers (8-bit inputs: the shipped table without
    /// its `a10` marks, which F(4x4) cannot take, and with those layers in INT8), at the issue's
    /// threshold (0.25).
    func testInt8WinogradDetectionsMatchFP32OnTheSamples() throws {
        let weights = try paths().weights
        var table = try Int8Calibration(path: Int8Calibration.defaultPath(weights: weights))
        table.tenBitLayers = []
        table.fp32Layers.subtract(Self.winogradLayers.keys)   // (the shipped table keeps other layers FP32)
        let (results, int8) = try detections(try samples(), threshold: 0.1,
                                             int8: ModelOptions(algorithms: Self.winogradLayers, precision: .int8, calibration: table))
        XCTAssertEqual(int8.model.plan.entries.filter { $0.algorithm.hasPrefix("winograd4-int8") }.count, 7, int8.model.plan.description)
        let f = PrecisionAccuracy.compare(results, threshold: 0.25)
        let summary = "INT8 Winograd at threshold 0.25: \(f)"
        XCTAssertGreaterThanOrEqual(f.reference, 4, summary)
        XCTAssertGreaterThanOrEqual(f.recall, 0.97, summary)
        XCTAssertGreaterThanOrEqual(f.precision, 0.97, summary)
        XCTAssertLessThan(f.maxDrift, 0.1, summary + ": the largest confidence change of a matched detection")
        // At 0.1 two borderline boxes of coffee.png and horses.jpg fall under (0.111 -> 0.097,
        // 0.103 -> 0.095): the drift is held, not the counts.
        XCTAssertLessThan(PrecisionAccuracy.compare(results, threshold: 0.1).meanDrift, 0.03, summary)
    }

    func testInt8HeadsAreTheSameAtEveryKernelLevel() throws {
        let (cfg, weights, _) = try paths()
        let photo = try samples()[3]
        let shipped = try Int8Calibration(path: Int8Calibration.defaultPath(weights: weights))
        var allInt8 = shipped
        allInt8.fp32Layers = []
        allInt8.twelveBitLayers = []
        // Its 3x3 layers with 10-bit inputs (2-8, as F(2x2), which every level has): a 1x1 one's
        // runs as two INT8 passes only where the level prefers them to FP32 (ChoicePolicy).
        var tenBit = allInt8
        tenBit.tenBitLayers = tenBit.tenBitLayers.filter { $0 <= 8 }
        allInt8.tenBitLayers = []
        // Each level's precision of each convolution (by its first layer), from the last heads() call.
        var precisions: [KernelLevel: [Int: Precision]] = [:]
        func heads(_ level: KernelLevel, _ table: Int8Calibration, algorithms: [Int: ConvAlgorithm] = [:]) throws -> [[Float]] {
            // (At 160x160: the same kernels, partial tiles and panels as at 416x416, a seventh of the work.)
            let model = try Model(cfgPath: cfg, weightsPath: weights,
                                  options: ModelOptions(inputSize: .init(width: 160, height: 160), kernelLevel: level,
                                                        algorithms: algorithms, precision: .int8, calibration: table))
            precisions[level] = Dictionary(model.plan.entries.filter { $0.what.contains("conv") }.map { ($0.layers.lowerBound, $0.precision) },
                                           uniquingKeysWith: { a, _ in a })
            let detector = try Detector(model: model, threads: 2)
            try photo.pixels.withUnsafeBytes { try detector.preprocess(pixels: $0, width: photo.width, height: photo.height) }
            detector.session.forward()
            return detector.session.heads.map { Array($0.raw) }
        }
        func differ(_ a: [[Float]], _ b: [[Float]]) -> (count: Int, worst: Float) {
            let pairs = zip(a, b).flatMap { zip($0, $1) }
            return (pairs.filter { $0.bitPattern != $1.bitPattern }.count, pairs.map { abs($0 - $1) }.max() ?? 0)
        }
        // Every convolution in INT8: the same bits at every level (exact integer sums, the same
        // float operations around them).
        let levels = KernelLevel.supported
        let reference = try heads(levels[0], allInt8)
        for level in levels.dropFirst() {
            XCTAssertEqual(differ(reference, try heads(level, allInt8)).count, 0, "\(level) vs \(levels[0]): every convolution INT8")
        }
        // With the shipped table's 10-bit inputs (F(2x2) on layers 2-8, which every level has): the
        // same bits at every level too, and not those of 8 bits.
        let tenBitReference = try heads(levels[0], tenBit)
        XCTAssertGreaterThan(differ(tenBitReference, reference).count, 0, "10-bit inputs are not 8-bit ones")
        for level in levels.dropFirst() {
            XCTAssertEqual(differ(tenBitReference, try heads(level, tenBit)).count, 0, "\(level) vs \(levels[0]): 10-bit inputs")
        }
        // INT8 Winograd where it applies: exact int32 sums per block of 128 channels, the same
        // float operations after them, so the same bits at every level with the pair GEMM.
        // (A level without the pair GEMM would refuse the forced algorithm: it is left out. Every
        // level has one today: the vpdpbusd and sdot levels take the level below's.)
        let winograd = levels.compactMap { level in (try? heads(level, allInt8, algorithms: Self.winogradLayers)).map { (level, $0) } }
        XCTAssertFalse(winograd.isEmpty, "some level runs INT8 Winograd")
        for (level, h) in winograd {
            XCTAssertGreaterThan(differ(h, reference).count, 0, "\(level): INT8 Winograd is not INT8 im2col")
            XCTAssertEqual(differ(h, winograd[0].1).count, 0, "\(level) vs \(winograd[0].0): INT8 Winograd")
        }
        // The pair 1x1 form of the table's `a12` layers, forced at every level (the fixed table takes
        // it only where the pair product outruns FP32): exact int32 sums per block of 128 channels,
        // the same float operations after them, so the same bits everywhere, and not 8-bit ones.
        var twelveBit = allInt8
        twelveBit.twelveBitLayers = shipped.twelveBitLayers
        let pairLayers = Dictionary(uniqueKeysWithValues: shipped.twelveBitLayers.map { ($0, ConvAlgorithm(.gemm1x1, .int8)) })
        XCTAssertFalse(pairLayers.isEmpty, "the shipped table marks a12 layers")
        let pairReference = try heads(levels[0], twelveBit, algorithms: pairLayers)
        XCTAssertGreaterThan(differ(pairReference, reference).count, 0, "12-bit 1x1 layers are not 8-bit ones")
        for level in levels.dropFirst() {
            XCTAssertEqual(differ(pairReference, try heads(level, twelveBit, algorithms: pairLayers)).count, 0,
                           "\(level) vs \(levels[0]): the pair 1x1 form")
        }
        // The shipped table keeps the first convolution FP32 (the direct conv + pool), whose sums
        // round as each level's FMA does or, at the x86 baseline, as a multiply then an add (a few
        // inputs of the next layer then quantize one step apart), and two 1x1 convolutions,
        // whose GEMM sums round with each level's tiles: the heads (values up to ~20) stay within
        // 0.3 (measured at 416x416: 0.24 at the baseline, under 1e-5 between the FMA levels), where
        // the two levels' plans put each layer in the same precision (layer 13's 10-bit input is
        // FP32 where the level ranks two INT8 passes below it).
        var shippedHeads: [(level: KernelLevel, heads: [[Float]], precisions: [Int: Precision]?)] = []
        for level in levels {
            let h = try heads(level, shipped)
            shippedHeads.append((level, h, precisions[level]))
        }
        var compared = 0
        for (i, a) in shippedHeads.enumerated() {
            for b in shippedHeads[(i + 1)...] where a.precisions == b.precisions {
                XCTAssertLessThanOrEqual(differ(a.heads, b.heads).worst, 0.3, "\(a.level) vs \(b.level)")
                compared += 1
            }
        }
        if levels.count > 2 {
            XCTAssertGreaterThan(compared, 0, "levels whose plans agree on every layer's precision: \(precisions)")
        }
    }
}
