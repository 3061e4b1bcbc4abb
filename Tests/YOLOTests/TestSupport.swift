import Foundation
import XCTest
@testable import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore

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

/// A `.samples` fixture: sampled (index, value) pairs and per-channel sums of a reference tensor.
struct SampledTensor {
    var shape: Shape
    var samples: [(index: Int, value: Float)] = []
    var channelSums: [Double] = []

    init(path: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        shape = Shape(c: 0, h: 0, w: 0)
        for line in text.split(separator: "\n") {
            let p = line.split(separator: " ")
            if p[0] == "#" { shape = Shape(c: Int(p[2])!, h: Int(p[3])!, w: Int(p[4])!) }
            else if p[0] == "sum" { channelSums.append(Double(p[2])!) }
            else { samples.append((Int(p[0])!, Float(p[1])!)) }
        }
    }

    /// Max abs difference over the samples, and the max relative difference of channel sums
    /// (relative to the channel's sum of |values| scale, approximated by max(|sum|, plane size)).
    func compare(_ values: UnsafeBufferPointer<Float>) -> (maxAbs: Float, maxSumDiff: Double) {
        var maxAbs: Float = 0
        for (i, v) in samples { maxAbs = max(maxAbs, abs(values[i] - v)) }
        let plane = shape.h * shape.w
        var maxSum = 0.0
        for c in 0..<shape.c {
            var s = 0.0
            for i in 0..<plane { s += Double(values[c * plane + i]) }
            maxSum = max(maxSum, abs(s - channelSums[c]) / Double(plane))
        }
        return (maxAbs, maxSum)
    }
}

/// Deterministic pseudo-random numbers (xorshift), so failures reproduce.
struct SeededRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        return state
    }
    /// Uniform in [lo, hi).
    mutating func float(_ lo: Float = -1, _ hi: Float = 1) -> Float {
        lo + (hi - lo) * Float(next() >> 40) / Float(1 << 24)
    }
}

/// Bytes of a weights file: Darknet 0.2.0 header, then `floats`.
func weightsFile(_ floats: [Float], major: Int32 = 0, minor: Int32 = 2) -> [UInt8] {
    var bytes: [UInt8] = []
    func put32(_ v: UInt32) { for s in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8((v >> UInt32(s)) & 0xff)) } }
    put32(UInt32(bitPattern: major)); put32(UInt32(bitPattern: minor)); put32(0)
    if major * 10 + minor >= 2 { put32(0); put32(0) } else { put32(0) }
    for f in floats { put32(f.bitPattern) }
    return bytes
}
