import Foundation
import YOLO

enum HeadsCommand {
    static let usage = """
    usage: yolo heads INPUT.f32 --out DIR [--cfg F] [--weights F] [--size WxH] [--threads N] [--all-layers]

    Runs the network on a raw input tensor and writes its raw YOLO heads.
    INPUT.f32 holds little-endian float32 CHW values at the network's input size
    (3x416x416 for yolov3-tiny: RGB planes, byte/255, letterboxed; 3xHxW with --size WxH).

    Writes DIR/head0.f32, DIR/head1.f32, ... (the conv outputs feeding each [yolo] layer,
    in cfg order, CHW) and with --all-layers also DIR/layerNN.f32 for every layer.

    options:
      --out DIR        output directory (created if missing)
      --cfg F          Darknet cfg (default: \(defaultCfg))
      --weights F      Darknet weights (default: \(defaultWeights))
      --size WxH       network input size instead of the cfg's width and height
                       (multiples of 32, e.g. 608x352)
      --threads N      threads (default: 1)
      --all-layers     also write every layer's output

    example:
      yolo heads dog_input_416.f32 --out /tmp/heads
    """

    static func run(_ args: [String]) throws -> Int32 {
        let a = try Arguments(args, options: ["out", "cfg", "weights", "threads", "size"], flags: ["all-layers", "help"], short: ["h": "help"])
        if a.has("help") { print(usage); return 0 }
        guard a.positionals.count == 1 else { throw UsageError("heads takes exactly one INPUT.f32") }
        guard let out = a.string("out") else { throw UsageError("heads needs --out DIR") }
        let threads = try a.int("threads", default: 1, range: 1...256)
        // With --all-layers, every layer's exact output (no conv + max pool fusion).
        let network = try Network(cfgPath: a.string("cfg") ?? defaultCfg, weightsPath: a.string("weights") ?? defaultWeights,
                                  threads: threads, options: ModelOptions(fusesLayers: !a.has("all-layers"),
                                                                        inputSize: try a.inputSize("size")))
        let path = a.positionals[0]
        guard let data = FileManager.default.contents(atPath: path) else {
            throw YOLOError.file(path: path, reason: "cannot read")
        }
        guard data.count == network.input.count * 4 else {
            throw YOLOError.invalidArgument("\(path): \(data.count) bytes, but the network takes \(network.inputChannels)x\(network.inputHeight)x\(network.inputWidth) float32 = \(network.input.count * 4) bytes")
        }
        data.withUnsafeBytes { raw in
            for i in 0..<network.input.count {
                network.input[i] = Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)))
            }
        }
        network.forward()
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        for (i, head) in network.heads.enumerated() {
            try writeFloats(head.raw, to: "\(out)/head\(i).f32")
        }
        if a.has("all-layers") {
            for i in network.layers.indices {
                try writeFloats(network.output(ofLayer: i), to: "\(out)/layer\(i < 10 ? "0" : "")\(i).f32")
            }
        }
        return 0
    }

    static func writeFloats(_ values: UnsafeBufferPointer<Float>, to path: String) throws {
        var le = values.map { $0.bitPattern.littleEndian }
        let data = Data(bytes: &le, count: le.count * 4)
        guard FileManager.default.createFile(atPath: path, contents: data) else {
            throw YOLOError.file(path: path, reason: "cannot write")
        }
    }
}
