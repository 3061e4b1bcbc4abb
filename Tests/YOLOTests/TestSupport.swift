import Foundation
import XCTest
@testable import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore
import YOLOReference

/// The repository root, found from this file's path (Tests/YOLOTests/TestSupport.swift).
let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

/// The real yolov3-tiny files fetched by weights/fetch.sh. Tests that need them fail with a hint.
func officialPaths() throws -> (cfg: String, weights: String) {
    let cfg = repoRoot + "/weights/yolov3-tiny.cfg", weights = repoRoot + "/weights/yolov3-tiny.weights"
    guard FileManager.default.fileExists(atPath: weights), FileManager.default.fileExists(atPath: cfg) else {
        XCTFail("weights/yolov3-tiny.weights is missing: run weights/fetch.sh (the README's test command does)")
        throw XCTSkip("no weights")
    }
    return (cfg, weights)
}

func fixturePath(_ name: String) -> String {
    Bundle.module.path(forResource: "Fixtures/" + name, ofType: nil) ?? (repoRoot + "/Tests/YOLOTests/Fixtures/" + name)
}

/// Reads a gzip'd little-endian float32 file.
func readGzipFloats(_ path: String) throws -> [Float] {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["gzip", "-dc", path]
    let pipe = Pipe()
    p.standardOutput = pipe
    try p.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    XCTAssertEqual(p.terminationStatus, 0, "gzip -dc \(path)")
    return data.withUnsafeBytes { raw in
        (0..<data.count / 4).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self))) }
    }
}

/// A `.samples` fixture of this target (parsed by YOLOReference).
func sampledTensor(_ name: String) throws -> SampledTensor {
    try SampledTensor(parsing: [UInt8](Data(contentsOf: URL(fileURLWithPath: fixturePath(name)))))
}

/// Darknet's detections fixture of this target (parsed by YOLOReference).
func referenceDetections(_ name: String) throws -> [ReferenceImageDetections] {
    try parseReferenceDetections([UInt8](Data(contentsOf: URL(fileURLWithPath: fixturePath(name)))))
}

extension SampledTensor {
    var shape: Shape { Shape(c: channels, h: height, w: width) }
}

extension ReferenceDetection {
    /// The engine's detection in the fixtures' terms.
    init(_ d: Detection) {
        self.init(boxIndex: d.boxIndex, classIndex: d.classIndex, prob: d.confidence, objectness: d.objectness,
                  box: [d.x, d.y, d.width, d.height])
    }
}

extension Naive.Tensor {
    init(_ shape: Shape, _ values: [Float]) { self.init(channels: shape.c, height: shape.h, width: shape.w, values: values) }
    var shape: Shape { Shape(c: channels, h: height, w: width) }
}

/// The C library's functions for YOLOReference's activations.
let libm = Libm(exp: { Foundation.exp($0) }, tanh: { Foundation.tanh($0) }, log1p: { Foundation.log1p($0) })

/// Bytes of a weights file: Darknet 0.2.0 header, then `floats`.
func weightsFile(_ floats: [Float], major: Int32 = 0, minor: Int32 = 2) -> [UInt8] {
    var bytes: [UInt8] = []
    func put32(_ v: UInt32) { for s in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8((v >> UInt32(s)) & 0xff)) } }
    put32(UInt32(bitPattern: major)); put32(UInt32(bitPattern: minor)); put32(0)
    if major * 10 + minor >= 2 { put32(0); put32(0) } else { put32(0) }
    for f in floats { put32(f.bitPattern) }
    return bytes
}
