// The Detector end to end on hand-made and real models: letterbox sizes and pixels, pixel formats
// and row strides, input validation, class-name files, overflowing boxes, odd sizes, and the
// detections on Darknet's dog and person (DetectDecodeTests holds the decode and NMS tests).
import Foundation
import XCTest
@testable import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore
import YOLOReference

extension DetectDecodeTests {
    func testLetterboxSize() {
        XCTAssert(letterboxSize(width: 768, height: 576, netWidth: 416, netHeight: 416) == (416, 312))
        XCTAssert(letterboxSize(width: 640, height: 424, netWidth: 416, netHeight: 416) == (416, 275))
        XCTAssert(letterboxSize(width: 352, height: 448, netWidth: 416, netHeight: 416) == (326, 416))
        XCTAssert(letterboxSize(width: 416, height: 416, netWidth: 416, netHeight: 416) == (416, 416))
        XCTAssert(letterboxSize(width: 100_000, height: 1, netWidth: 416, netHeight: 416) == (416, 1))
    }

    func testLetterboxMatchesTheFormulaExactly() throws {
        for (w, h, nw, nh) in [(7, 5, 12, 10), (5, 7, 12, 10), (3, 3, 12, 10), (40, 9, 16, 16), (1, 6, 8, 8), (6, 1, 8, 8), (12, 10, 12, 10)] {
            let detector = try Detector(model: tinyModel(width: nw, height: nh))
            let rgb = randomBytes(w * h * 3, seed: UInt64(w * 100 + h))
            for stretch in [false, true] {
                detector.options.resize = stretch ? .stretch : .letterbox
                try rgb.withUnsafeBytes { try detector.preprocess(pixels: $0, width: w, height: h) }
                let expected = Naive.letterbox(rgb: rgb, width: w, height: h, netWidth: nw, netHeight: nh, stretch: stretch)
                XCTAssertEqual(Array(detector.session.input), expected, "\(w)x\(h) in \(nw)x\(nh) stretch \(stretch)")
            }
        }
    }

    func testPixelFormatsAndRowStride() throws {
        let (w, h) = (9, 6)
        let detector = try Detector(model: tinyModel(width: 8, height: 8))
        let rgb = randomBytes(w * h * 3, seed: 3)
        try rgb.withUnsafeBytes { try detector.preprocess(pixels: $0, width: w, height: h) }
        let expected = Array(detector.session.input)
        for format in [PixelFormat.rgba, .bgr, .bgra] {
            let stride = w * format.bytesPerPixel + 5
            var bytes = [UInt8](repeating: 77, count: stride * h)
            for y in 0..<h { for x in 0..<w {
                let (r, g, b) = (rgb[(y * w + x) * 3], rgb[(y * w + x) * 3 + 1], rgb[(y * w + x) * 3 + 2])
                let o = y * stride + x * format.bytesPerPixel
                switch format {
                case .rgba: bytes[o] = r; bytes[o + 1] = g; bytes[o + 2] = b; bytes[o + 3] = 9
                case .bgr: bytes[o] = b; bytes[o + 1] = g; bytes[o + 2] = r
                case .bgra: bytes[o] = b; bytes[o + 1] = g; bytes[o + 2] = r; bytes[o + 3] = 200
                default: break
                }
            } }
            detector.session.input.update(repeating: -1)
            try bytes.withUnsafeBytes { try detector.preprocess(pixels: $0, width: w, height: h, rowStride: stride, format: format) }
            XCTAssertEqual(Array(detector.session.input), expected, "\(format)")
        }
        // Grey = the same byte in R, G and B.
        let grey = randomBytes(w * h, seed: 4)
        try grey.withUnsafeBytes { try detector.preprocess(pixels: $0, width: w, height: h, format: .gray) }
        let viaGrey = Array(detector.session.input)
        try grey.flatMap { [$0, $0, $0] }.withUnsafeBytes { try detector.preprocess(pixels: $0, width: w, height: h) }
        XCTAssertEqual(viaGrey, Array(detector.session.input))
    }

    func testDetectorValidatesItsInputs() throws {
        let detector = try Detector(model: tinyModel(width: 8, height: 8))
        let bytes = [UInt8](repeating: 0, count: 100)
        func message(_ body: () throws -> Void) -> String {
            do { try body(); return "no error" } catch let e as YOLOError { return e.description } catch { return "\(error)" }
        }
        bytes.withUnsafeBytes { raw in
            XCTAssertTrue(message { _ = try detector.detect(pixels: raw, width: 0, height: 3) }.contains("must be positive"))
            XCTAssertTrue(message { _ = try detector.detect(pixels: raw, width: 3, height: -1) }.contains("must be positive"))
            XCTAssertTrue(message { _ = try detector.detect(pixels: raw, width: 5, height: 2, rowStride: 14) }.contains("row stride 14"))
            XCTAssertTrue(message { _ = try detector.detect(pixels: raw, width: 6, height: 6) }.contains("needs 108"))
            XCTAssertTrue(message { _ = try detector.detect(pixels: raw, width: 5, height: 5, rowStride: 20, format: .rgba) }.contains("no error"))
            XCTAssertTrue(message { _ = try detector.detect(pixels: raw, width: 5, height: 6, rowStride: 20, format: .rgba) }.contains("needs 120"))
            XCTAssertTrue(message { _ = try detector.detect(pixels: UnsafeRawBufferPointer(start: nil, count: 0), width: 1, height: 1) }.contains("needs 3"))
        }
        detector.options.threshold = 1.5
        XCTAssertTrue(message { _ = try detector.detect(rgb: [1, 2, 3], width: 1, height: 1) }.contains("threshold"))
        detector.options = DetectorOptions(classFilter: [2])
        XCTAssertTrue(message { _ = try detector.detect(rgb: [1, 2, 3], width: 1, height: 1) }.contains("class 2"))
        // Too few names: both counts in the message.
        XCTAssertTrue(message { _ = try Detector(model: tinyModel(width: 8, height: 8), classNames: ["a"]) }.contains("1 class names given, but the network has 2 classes"))
        let names = NSTemporaryDirectory() + "detect-names-\(getpid()).txt"
        try "only\n".write(toFile: names, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: names) }
        let paths = try officialPaths()
        let msg = message { _ = try Detector(cfgPath: paths.cfg, weightsPath: paths.weights, namesPath: names) }
        XCTAssertTrue(msg.contains("has 1 class names") && msg.contains("80 classes"), msg)
    }

    func testReadClassNames() throws {
        let path = NSTemporaryDirectory() + "detect-names2-\(getpid()).txt"
        try "person\r\ntraffic light\n\nzebra".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        XCTAssertEqual(try Detector.readClassNames(path: path), ["person", "traffic light", "", "zebra"])
        XCTAssertEqual(try Detector.readClassNames(path: repoRoot + "/weights/coco.names").count, 80)
    }

    /// Issue #16, case 3: names files with CRLF, CR or mixed line ends and a UTF-8 byte-order
    /// mark give the same names (class 0 is "person", not "\u{FEFF}person").
    func testClassNamesLineEndsAndByteOrderMark() throws {
        let path = NSTemporaryDirectory() + "detect-names3-\(getpid()).txt"
        defer { try? FileManager.default.removeItem(atPath: path) }
        for text in ["person\ncar\n", "person\r\ncar\r\n", "person\rcar\r", "person\r\ncar", "\u{FEFF}person\ncar\n",
                     "\u{FEFF}person\r\ncar\r\n", "\u{FEFF}person\rcar"] {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            XCTAssertEqual(try Detector.readClassNames(path: path), ["person", "car"], text.debugDescription)
        }
    }

    /// Issue #16, case 2: finite weights whose boxes overflow when decoded (a 3-class network
    /// with weights uniform in [0, 0.05]: the raw tw reaches ~100, exp(tw) is infinite) fail
    /// the frame with an error naming the [yolo] layer, instead of boxes of infinite size.
    func testOverflowingBoxesFailNamingTheHead() throws {
        let (cfg, count) = overflowingNetwork()
        var rng = SeededRandom(seed: 16)
        let model = try Model(cfgText: cfg, weights: weightsFile((0..<count).map { _ in rng.float(0, 0.05) }))
        let detector = try Detector(model: model, classNames: ["a", "b", "c"])
        let frame = randomBytes(40 * 30 * 3, seed: 3)
        XCTAssertThrowsError(try detector.detect(rgb: frame, width: 40, height: 30)) { error in
            guard case .numeric(let message)? = error as? YOLOError else { return XCTFail("\(error)") }
            XCTAssertTrue(message.hasPrefix("the [yolo] layer 4 decodes a box to "), message)
            XCTAssertTrue(message.contains("overflow"), message)
        }
        // The raw heads are finite: this is the decoded boxes' check, not the heads'.
        XCTAssertTrue(detector.session.rawHeads[0].raw.allSatisfy(\.isFinite))
        XCTAssertGreaterThan(detector.session.rawHeads[0].raw.max()!, 89)
        // Stretched, the same.
        detector.options.resize = .stretch
        XCTAssertThrowsError(try detector.detect(rgb: frame, width: 40, height: 30))
    }

    func testTinyNetworkDetectsOnOddSizesWithoutCrashing() throws {
        // Biases: objectness and class 0 high: every cell reports class 0, NMS keeps few.
        let detector = try Detector(model: tinyModel(width: 8, height: 8), classNames: ["thing", "other"])
        for (w, h) in [(1, 1), (1, 50), (50, 1), (3000, 2), (8, 8), (13, 7)] {
            let dets = try detector.detect(rgb: randomBytes(w * h * 3, seed: UInt64(w + h)), width: w, height: h)
            XCTAssertFalse(dets.isEmpty, "\(w)x\(h)")
            XCTAssertTrue(dets.allSatisfy { $0.className == "thing" && $0.confidence > 0.9 })
        }
    }

    // MARK: Darknet end to end

    func testMatchesDarknetOnDogAndPerson() throws {
        let paths = try officialPaths()
        let detector = try Detector(cfgPath: paths.cfg, weightsPath: paths.weights, namesPath: repoRoot + "/weights/coco.names")
        let reference = try referenceDetections("detect_darknet_detections.txt")
        XCTAssertEqual(reference.map(\.image), ["dog.jpg", "person.jpg"])
        // Under qemu, dog alone (the arm64 detect step compares every sample with x86's).
        let emulated = ProcessInfo.processInfo.environment["YOLO_TEST_EMULATED"] != nil
        for entry in emulated ? Array(reference.prefix(1)) : reference {
            let image = entry.image
            let name = image.replacingOccurrences(of: ".jpg", with: "")
            let input = try readGzipFloats(fixturePath("\(name)_input_416.f32.gz"))
            _ = try input.withUnsafeBufferPointer { try detector.session.forward($0) }
            for (t, rows) in entry.thresholds {
                detector.options.threshold = t
                let dets = try detector.decodeHeads(imageWidth: entry.width, imageHeight: entry.height)
                let result = compare(dets.map(ReferenceDetection.init), rows)
                XCTAssertTrue(result.passed(tolerance: 1e-4), "\(image) at \(t): \(result)")
                print("\(image) t=\(t): \(result)")
            }
            // The same via detectFromInput (runs the network on network.input).
            detector.options.threshold = 0.25
            _ = input.withUnsafeBufferPointer { detector.session.input.update(fromContentsOf: $0) }
            let again = try detector.detectFromInput(imageWidth: entry.width, imageHeight: entry.height)
            XCTAssertEqual(again.map(\.classIndex), entry.thresholds.first { $0.threshold == 0.25 }?.detections.map(\.classIndex))
            XCTAssertEqual(again.first?.className, image == "dog.jpg" ? "dog" : "horse")
        }
    }
}
