// `yolo heads`: the raw [yolo] heads (and optionally every layer) for a raw input tensor.
import Foundation
import YOLO

enum HeadsCommand {
    static let usage = """
    usage: yolo heads INPUT.f32 --out DIR [--cfg F] [--weights F] [--size WxH] [--threads N] [--all-layers]
                      [--conv ALGO] [--precision P] [--int8-table F] [--int8-fallback P]

    Runs the network on a raw input tensor and writes its raw YOLO heads.
    INPUT.f32 holds little-endian float32 CHW values at the network's input size
    (3x416x416 for yolov3-tiny: RGB planes, byte/255, letterboxed, or stretched where the cfg
    says [net] letter_box=0; 3xHxW with --size WxH). Prints the heads' shapes and that choice.

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
      --conv ALGO      which algorithms convolutions may use: winograd (default: all),
                       winograd2 (no F(4x4)) or im2col (no Winograd)
    \(precisionUsage)

    example:
      yolo heads dog_input_416.f32 --out /tmp/heads
    """

    static func run(_ args: [String]) throws -> Int32 {
        let a = try Arguments(args, options: Set(["out", "cfg", "weights", "threads", "size", "conv"]).union(precisionOptionNames),
                              flags: ["all-layers", "help"], short: ["h": "help"])
        if a.has("help") { print(usage); return 0 }
        guard a.positionals.count == 1 else { throw UsageError("heads takes exactly one INPUT.f32") }
        guard let out = a.string("out") else { throw UsageError("heads needs --out DIR") }
        let threads = try a.int("threads", default: 1, range: 1...256)
        let cfgPath = a.string("cfg") ?? defaultCfg, weightsPath = a.string("weights") ?? defaultWeights
        // With --all-layers, every layer's exact output (no conv + max pool fusion).
        var options = ModelOptions(fusesLayers: !a.has("all-layers"), inputSize: try a.inputSize("size"))
        if let c = try a.convolution() { options.convolution = c }
        try applyPrecisionOptions(a, to: &options)
        let network = try Network(cfgPath: cfgPath, weightsPath: weightsPath, threads: threads, options: options)
        let path = a.positionals[0]
        let data = try readInputFile(path, maxBytes: FileLimits.imageBytes)
        guard data.count == network.input.count * 4 else {
            throw YOLOError.invalidArgument("\(path): \(data.count) bytes, but the network takes \(network.inputChannels)x\(network.inputHeight)x\(network.inputWidth) float32 = \(network.input.count * 4) bytes")
        }
        data.withUnsafeBytes { raw in
            for i in 0..<network.input.count {
                network.input[i] = Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)))
            }
        }
        network.forward()
        var inputs = InputFiles()
        for input in [path, cfgPath, weightsPath] { inputs.add(input) }
        let headPaths = network.heads.indices.map { "\(out)/head\($0).f32" }
        let layerPaths = a.has("all-layers") ? network.layers.indices.map { "\(out)/layer\($0 < 10 ? "0" : "")\($0).f32" } : []
        for file in headPaths + layerPaths { try inputs.checkOutput(file, option: "a tensor") }
        try makeDirectories(out)
        removeTemporaryFilesOnSignals()
        for (i, head) in network.heads.enumerated() { try writeFloats(head.raw, to: headPaths[i]) }
        for (i, file) in layerPaths.enumerated() { try writeFloats(network.output(ofLayer: i), to: file) }
        let letterBox = network.model.letterBox.map { "cfg letter_box=\($0 ? 1 : 0)" } ?? "no letter_box in the cfg"
        let shapes = network.heads.map { "\($0.info.region ? "region" : "yolo") \($0.raw.count / ($0.gridWidth * $0.gridHeight))x\($0.gridHeight)x\($0.gridWidth)" }
        print("heads: \(shapes.joined(separator: ", ")); input preprocessing: \(network.model.defaultResize.rawValue) (\(letterBox))")
        return 0
    }

    static func writeFloats(_ values: UnsafeBufferPointer<Float>, to path: String) throws {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(values.count * 4)
        for v in values { withUnsafeBytes(of: v.bitPattern.littleEndian) { bytes += $0 } }
        try writeOutputFile(bytes, to: path)
    }
}
