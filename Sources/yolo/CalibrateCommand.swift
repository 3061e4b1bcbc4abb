// `yolo calibrate`: runs the FP32 network on sample images and writes the INT8 calibration table
// (per convolution, the range its input is clipped to) that `--precision int8` reads.
import Foundation
import YOLO
import YOLOText
import YOLOImage

enum CalibrateCommand {
    static let usage = """
    usage: yolo calibrate IMAGE|DIR ... --out FILE [--method mse|percentile|minmax] [--percentile P]
                          [--max-effect E|none] [--fp32 LIST|none] [--a10 LIST] [--a12 LIST] [--gptq LIST]
                          [--cfg F] [--weights F] [--size WxH] [--threads N]

    Runs the FP32 network on the images (letterboxed as yolo detect does) and records, for each
    convolution, the values of its input; then runs each convolution alone in INT8 and measures its
    effect on the detections' confidences. Writes the INT8 calibration table: per convolution the
    range its input is clipped to when quantized to 8 bits, its effect, and whether it stays FP32
    (effect over --max-effect), with the method, the number of images and the fingerprints of the
    cfg and the weights (a table is refused for others). An image that cannot be read is left out
    with a line naming it; progress is on stderr. 'yolo detect --precision int8'
    finds FILE next to the weights when it is named like them with .int8 (weights/yolov3-tiny.int8),
    or takes it with --int8-table FILE. Use photos like those the model will see; a few dozen
    are plenty.

    options:
      --out FILE       the table to write (required)
      --method M       mse (default): the range with the least squared quantization error
                       (rounding inside, clipping outside) over the values seen; percentile:
                       clip the top and bottom (100 - P)% of the values; minmax: the smallest
                       and largest values seen
      --percentile P   for --method percentile, default \(defaultPercentile)
      --max-effect E   the largest mean change of confidences (over 0.05) one convolution may
                       cause in INT8; those above stay FP32 (default \(Int8Calibrator.defaultMaxEffect);
                       none: measure nothing)
      --fp32 LIST      convolutions (layer indices, comma-separated) that stay FP32 whatever
                       their effect; default: the first (it reads the image: the most sensitive
                       on the photos measured, and cheap in FP32); none: no such layer
      --a10 LIST       convolutions (layer indices) whose input is quantized to 10 bits where
                       the INT8 forms that sum them exactly run them (marked a10; the shipped
                       table: 2,4,6,8,13, where 8 bits lose the most); default: none
      --a12 LIST       1x1 convolutions (layer indices) whose input and weights are quantized to
                       12 bits, for the 16-bit pair product (marked a12, whatever their effect;
                       the shipped table: 15,22, the two before the heads); default: none
      --gptq LIST      convolutions (layer indices) whose INT8 weights are rounded by GPTQ
                       instead of to the nearest step: each rounding error spread over the
                       weights not yet rounded so that the layer's output on these images moves
                       least (the shipped table: 2,4,6,8); at most \(Int8Calibrator.gptqMaxColumns) channels x size x size
                       each; default: none
      --cfg F          Darknet cfg (default: \(defaultCfg))
      --weights F      Darknet weights (default: \(defaultWeights))
      --size WxH       network input size instead of the cfg's (multiples of 32)
      --threads N      threads (default: the number of cores)

    example:
      yolo calibrate samples/ --out weights/yolov3-tiny.int8
    """

    static let defaultPercentile = 99.99

    static func run(_ args: [String]) throws -> Int32 {
        let a = try Arguments(args, options: ["out", "method", "percentile", "max-effect", "fp32", "a10", "a12", "gptq", "cfg", "weights", "size", "threads"],
                              flags: ["help"], short: ["h": "help"])
        if a.has("help") { print(usage); return 0 }
        guard !a.positionals.isEmpty else { throw UsageError("calibrate needs at least one IMAGE or DIR") }
        guard let out = a.string("out"), !out.isEmpty else { throw UsageError("calibrate needs --out FILE") }
        let method: CalibrationMethod
        switch a.string("method") ?? "mse" {
        case "mse":
            if a.string("percentile") != nil { throw UsageError("--percentile is for --method percentile") }
            method = .mse
        case "minmax":
            if a.string("percentile") != nil { throw UsageError("--percentile is for --method percentile") }
            method = .minMax
        case "percentile":
            let p = a.string("percentile").map { Double($0) } ?? defaultPercentile
            guard let p, p > 50, p <= 100 else { throw UsageError("--percentile \(a.string("percentile")!): expected a number in (50, 100], e.g. 99.99") }
            method = .percentile(p)
        case let m: throw UsageError("--method \(m): expected mse, percentile or minmax")
        }
        let threads = try a.int("threads", default: MachineCores.available, range: 1...256)
        let cfgPath = a.string("cfg") ?? defaultCfg, weightsPath = a.string("weights") ?? defaultWeights
        let (inputs, _, failed) = DetectCommand.expandInputs(a.positionals, outputDirectory: nil)
        if failed { return 1 }
        try DetectCommand.checkOutputs([(out, "the calibration table")], inputs: inputs.map(\.path) + [cfgPath, weightsPath])
        let size = try a.inputSize("size")
        let maxEffect: Float? = a.string("max-effect") == "none" ? nil : try a.float("max-effect", default: Int8Calibrator.defaultMaxEffect, range: 0...1)
        let load = { (options: ModelOptions) throws(YOLOError) -> Model in
            var options = options
            options.inputSize = size
            return try Model(cfgPath: cfgPath, weightsPath: weightsPath, options: options)
        }
        func layers(_ option: String, example: String) throws -> Set<Int>? {
            guard let list = a.string(option) else { return nil }
            var set: Set<Int> = []
            for item in list == "none" ? [] : list.split(separator: ",", omittingEmptySubsequences: false) {
                guard let n = Int(item.trimmingCharacters(in: .whitespaces)), n >= 0 else {
                    throw UsageError("--\(option) \(list): expected layer indices, e.g. \(example), or none")
                }
                set.insert(n)
            }
            return set
        }
        let fp32 = try layers("fp32", example: "0,13"), tenBit = try layers("a10", example: "2,4,6") ?? []
        let gptq = try layers("gptq", example: "2,6,8") ?? [], twelveBit = try layers("a12", example: "15,22") ?? []
        let fp32Model = try load(ModelOptions())
        let detector = try Detector(model: fp32Model, threads: 1)
        // Checked before the images are run, not after.
        let convolutions = Set(detector.model.layers.filter { $0.kind == .convolutional }.map(\.index))
        for (option, set) in [("fp32", fp32 ?? []), ("a10", tenBit), ("a12", twelveBit), ("gptq", gptq)] {
            if let stray = set.subtracting(convolutions).min() {
                throw UsageError("--\(option): layer \(stray) is not a convolution of \(cfgPath)")
            }
        }
        for (option, set) in [("fp32", fp32 ?? []), ("a10", tenBit)] {
            if let both = twelveBit.intersection(set).min() { throw UsageError("--a12: layer \(both) is also in --\(option)") }
        }
        if let square = detector.model.layers.first(where: { twelveBit.contains($0.index) && ($0.size != 1 || $0.stride != 1) }) {
            throw UsageError("--a12: layer \(square.index) is a \(square.size)x\(square.size) convolution; 12-bit inputs are for 1x1 stride-1 ones")
        }
        if let both = gptq.intersection(fp32 ?? []).min() {
            throw UsageError("--gptq: layer \(both) is also in --fp32 (its weights stay FP32)")
        }
        if let wide = detector.model.layers.first(where: { gptq.contains($0.index) && $0.input.c * $0.size * $0.size > Int8Calibrator.gptqMaxColumns }) {
            throw UsageError("--gptq: layer \(wide.index) has \(wide.input.c * wide.size * wide.size) columns (channels x size x size); at most \(Int8Calibrator.gptqMaxColumns)")
        }
        // Each image is read once first: one that cannot be read or decoded is left out with a
        // line naming it (each usable one runs about 16 forward passes below).
        func prepare(_ path: String) throws {
            let image = try loadImage(path: path)
            try image.pixels.withUnsafeBytes { try detector.preprocess(pixels: $0, width: image.width, height: image.height) }
        }
        var images: [String] = []
        for input in inputs {
            do {
                try prepare(input.path)
                images.append(input.path)
            } catch {
                printError("yolo: calibrate: skipping \(DetectCommand.describe(error, path: input.path))")
            }
        }
        guard !images.isEmpty else {
            printError("yolo: calibrate: no usable image (\(inputs.count) skipped)")
            return 1
        }
        func fill(_ i: Int, _ buffer: UnsafeMutableBufferPointer<Float>) throws(YOLOError) {
            do {
                try prepare(images[i])
            } catch {
                throw .invalidArgument("\(DetectCommand.describe(error, path: images[i]))")
            }
            _ = buffer.update(fromContentsOf: detector.session.input)
        }
        var table = try Int8Calibrator.calibrate(inputs: images.count, method: method, threads: threads, maxEffect: maxEffect, fp32: fp32, twelveBit: twelveBit,
                                                 load: { (options: ModelOptions) throws(YOLOError) -> Model in
            // The detector's FP32 model serves the FP32 passes: a second copy of its weights
            // would double the peak memory (docs/precision.md, "Calibration").
            options == ModelOptions() ? fp32Model : try load(options)
        }, fill: fill, progress: { p in
            if let line = progressLine(p, image: images[p.input]) { printError("yolo: calibrate: \(line) (forward \(p.forwards)/\(p.totalForwards))") }
        })
        table.tenBitLayers = tenBit
        if !gptq.isEmpty {
            if let kept = gptq.intersection(table.fp32Layers).min() {
                throw UsageError("--gptq: layer \(kept) stays FP32 in the table (the first convolution does unless --fp32 says otherwise; any whose effect is over --max-effect does)")
            }
            table = try Int8Calibrator.round(table, layers: gptq, model: fp32Model, inputs: images.count, threads: threads, fill: fill,
                                             progress: { n in
                if n == images.count - 1 { printError("yolo: calibrate: GPTQ rounding of layer\(gptq.count == 1 ? "" : "s") \(gptq.sorted().map { "\($0)" }.joined(separator: ", "))") }
            })
        }
        table.weightsFingerprint = try Int8Calibration.weightsFingerprint(path: weightsPath)
        removeTemporaryFilesOnSignals()
        try writeOutputFile(Array(table.text.utf8), to: out)
        let fp32Text = table.fp32Layers.sorted().map { "\($0)" }.joined(separator: ", ")
        printError("yolo: calibrate: \(table.ranges.count) convolutions, \(images.count) image\(images.count == 1 ? "" : "s"), \(table.method)"
                   + (fp32Text.isEmpty ? "" : "; staying FP32: layer\(table.fp32Layers.count == 1 ? "" : "s") \(fp32Text)") + ": \(out)")
        return 0
    }

    /// What a progress line says after a forward pass: each image of the first pass, then each
    /// later pass once it is done (nil for the passes in between).
    static func progressLine(_ p: CalibrationProgress, image: String) -> String? {
        let last = p.input == p.inputs - 1
        switch p.step {
        case .ranges: return "image \(p.input + 1)/\(p.inputs): \(image)"
        case .histograms: return last ? "the values' histograms" : nil
        case .reference: return last ? "the FP32 confidences" : nil
        case .effect(let layer):
            return last ? "layer \(layer) alone in INT8: effect \(String(format: "%.2e", Double(p.effect ?? 0)))" : nil
        }
    }
}
