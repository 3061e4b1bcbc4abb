import Foundation
import XCTest
@testable import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore

/// Bad cfgs, weights and inputs give a thrown error whose message names the problem.
final class BadInputTests: XCTestCase {
    let tiny = """
    [net]
    width=8
    height=8
    channels=3

    [convolutional]
    batch_normalize=1
    filters=4
    size=3
    stride=1
    pad=1
    activation=leaky

    [convolutional]
    filters=14
    size=1
    activation=linear

    [yolo]
    mask=0,1
    anchors=1,1, 2,2, 3,3
    classes=2
    num=3
    """
    /// 4 * (1 + 3) BN params + 4*3*9 weights + 14 biases + 14*4 weights.
    let tinyFloats = 16 + 108 + 14 + 56

    func expectError(_ body: () throws -> Void, contains parts: [String], file: StaticString = #filePath, line: UInt = #line) {
        do {
            try body()
            XCTFail("expected an error containing \(parts)", file: file, line: line)
        } catch {
            let text = "\(error)"
            for p in parts { XCTAssertTrue(text.contains(p), "'\(text)' should mention '\(p)'", file: file, line: line) }
        }
    }

    func testTinyNetworkLoads() throws {
        let n = try Network(cfgText: tiny, weights: weightsFile([Float](repeating: 0.5, count: tinyFloats)))
        XCTAssertEqual(n.heads.count, 1)
        n.forward()
        XCTAssertTrue(n.heads[0].activated.allSatisfy { $0.isFinite })
    }

    /// Issue #16, case 3: a cfg saved with Windows (CRLF) or old Mac (CR) line ends, or with a
    /// UTF-8 byte-order mark, parses as the LF original, with the same line numbers.
    func testCfgLineEndsAndByteOrderMark() throws {
        let reference = try DarknetConfig(text: tiny)
        func summary(_ c: DarknetConfig) -> [String] {
            c.sections.flatMap { s in ["\(s.line) [\(s.name)]"] + s.options.map { "\($0.line) \($0.key)=\($0.value)" } }
        }
        let crlf = tiny.replacingOccurrences(of: "\n", with: "\r\n")
        let variants = ["CRLF": crlf, "CR": tiny.replacingOccurrences(of: "\n", with: "\r"), "BOM": "\u{FEFF}" + tiny,
                        "BOM + CRLF": "\u{FEFF}" + crlf + "\r\n", "mixed": tiny.replacingOccurrences(of: "size", with: "\r\nsize")]
        for (label, text) in variants.sorted(by: { $0.key < $1.key }) where label != "mixed" {
            XCTAssertEqual(summary(try DarknetConfig(text: text)), summary(reference), label)
            let n = try Network(cfgText: text, weights: weightsFile([Float](repeating: 0.5, count: tinyFloats)))
            XCTAssertEqual(n.heads.count, 1, label)
        }
        // An error in a CRLF (or BOM) file names the line it names in the LF file.
        for text in [tiny, crlf, "\u{FEFF}" + crlf] {
            expectError({ _ = try DarknetConfig(text: text.replacingOccurrences(of: "filters=14", with: "filters 14"), file: "w.cfg") },
                        contains: ["w.cfg:15: expected key=value, found 'filters 14'"])
        }
        // A CR on its own before CRLF ends two lines: later line numbers count both.
        let mixed = try DarknetConfig(text: variants["mixed"]!)
        XCTAssertEqual(mixed.sections[1].options.first { $0.key == "size" }?.line, 10)
    }

    func testTruncatedWeights() {
        let bytes = weightsFile([Float](repeating: 0, count: tinyFloats - 3))
        expectError({ _ = try Network(cfgText: tiny, weights: bytes, weightsName: "w.weights") },
                    contains: ["w.weights", "\(bytes.count) bytes", "needs \(20 + 4 * tinyFloats)", "too short by 12 bytes"])
    }

    func testTrailingBytes() {
        let bytes = weightsFile([Float](repeating: 0, count: tinyFloats)) + [1, 2, 3]
        expectError({ _ = try Network(cfgText: tiny, weights: bytes) }, contains: ["too long by 3 bytes"])
    }

    func testOldHeaderWithInt32Seen() throws {
        // Version 0.1: `seen` is an int32, so the header is 16 bytes.
        let bytes = weightsFile([Float](repeating: 0, count: tinyFloats), major: 0, minor: 1)
        XCTAssertEqual(bytes.count, 16 + 4 * tinyFloats)
        _ = try Network(cfgText: tiny, weights: bytes)
    }

    func testWrongHeader() {
        let png: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] + [UInt8](repeating: 0, count: 800)
        expectError({ _ = try Network(cfgText: tiny, weights: png, weightsName: "photo.png") },
                    contains: ["photo.png", "not a Darknet weights file"])
        expectError({ _ = try Network(cfgText: tiny, weights: [1, 2, 3]) }, contains: ["too short for a Darknet weights header"])
        expectError({ _ = try Network(cfgText: tiny, weights: []) }, contains: ["is 0 bytes"])
    }

    func testUnknownSection() {
        let cfg = tiny.replacingOccurrences(of: "[yolo]", with: "[dropout]")
        expectError({ _ = try Network(cfgText: cfg, weights: [], cfgName: "my.cfg") },
                    contains: ["my.cfg:19:", "unknown section [dropout]"])
    }

    func testBadValue() {
        let cfg = tiny.replacingOccurrences(of: "filters=4", with: "filters=four")
        expectError({ _ = try Network(cfgText: cfg, weights: [], cfgName: "my.cfg") },
                    contains: ["my.cfg:8:", "filters=four is not an integer"])
        let cfg2 = tiny.replacingOccurrences(of: "activation=leaky", with: "activation=selu")
        expectError({ _ = try Network(cfgText: cfg2, weights: []) }, contains: [":12:", "activation=selu is not supported"])
        let cfg3 = tiny.replacingOccurrences(of: "size=3", with: "size=0")
        expectError({ _ = try Network(cfgText: cfg3, weights: []) }, contains: ["size=0 must be at least 1"])
        expectError({ _ = try DarknetConfig(text: "width=3\n[net]\n") }, contains: ["<cfg>:1:", "before any [section]"])
        expectError({ _ = try DarknetConfig(text: "[net]\nwidth 3\n") }, contains: [":2:", "expected key=value"])
        expectError({ _ = try DarknetConfig(text: "[convolutional]\nsize=3\n") }, contains: ["first section must be [net]"])
        expectError({ _ = try DarknetConfig(text: "# nothing\n") }, contains: ["no sections"])
        expectError({ _ = try Network(cfgText: "[net]\nwidth=8\nheight=8\n", weights: []) }, contains: ["missing required key 'channels'"])
    }

    func testFiltersClassesMismatch() {
        let cfg = tiny.replacingOccurrences(of: "filters=14", with: "filters=255")
        expectError({ _ = try Network(cfgText: cfg, weights: []) },
                    contains: ["[yolo]", "filters=255", "should be filters=(2+5)*2=14"])
        let cfg2 = tiny.replacingOccurrences(of: "anchors=1,1, 2,2, 3,3", with: "anchors=1,1, 2,2")
        expectError({ _ = try Network(cfgText: cfg2, weights: []) }, contains: ["anchors has 4 numbers but num=3 needs 6"])
        let cfg3 = tiny.replacingOccurrences(of: "mask=0,1", with: "mask=0,7")
        expectError({ _ = try Network(cfgText: cfg3, weights: []) }, contains: ["mask value 7 is out of range"])
    }

    func testLayerIndexOutOfRange() {
        let cfg = tiny + "\n[route]\nlayers=-9\n"
        expectError({ _ = try Network(cfgText: cfg, weights: []) }, contains: [":25:", "layers=-9 refers to layer -6"])
        let cfg2 = tiny + "\n[route]\nlayers=3\n"
        expectError({ _ = try Network(cfgText: cfg2, weights: []) }, contains: ["layers=3 refers to layer 3", "layer 3)"])
        let cfg3 = tiny + "\n[route]\nlayers=0,1\n[upsample]\n[route]\nlayers=-1,0\n"
        expectError({ _ = try Network(cfgText: cfg3, weights: []) }, contains: ["must share height and width"])
    }

    func testMissingFiles() {
        expectError({ _ = try Network(cfgPath: "/nonexistent/yolo.cfg", weightsPath: "x") },
                    contains: ["/nonexistent/yolo.cfg", "No such file"])
        expectError({ _ = try Network(cfgPath: repoRoot + "/weights/fetch.sh", weightsPath: "x") }, contains: ["fetch.sh:5:", "expected key=value"])
        expectError({ _ = try DarknetConfig(path: repoRoot) }, contains: ["is a directory"])
    }

    func testWrongInputSize() throws {
        let n = try Network(cfgText: tiny, weights: weightsFile([Float](repeating: 0, count: tinyFloats)))
        expectError({ try n.forward([1, 2, 3]) }, contains: ["input has 3 floats", "3x8x8 = 192"])
    }
}
