// `yolo calibrate`: runs the FP32 network on sample images and writes the INT8 calibration table
// (per convolution, the range its input is clipped to) that `--precision int8` reads.
import Foundation
import YOLO
import YOLOImage

enum CalibrateCommand {
    static let usage = """
    usage: yolo calibrate IMAGE|DIR ... --out FILE [--method percentile|minmax] [--percentile P]
                          [--cfg F] [--weights F] [--size WxH] [--threads N]

    Runs the FP32 network on the images (letterboxed as yolo detect does) and records, for each
    convolution, the values of its input; writes the INT8 calibration table: per convolution the
    range its input is clipped to when quantized to 8 bits, with the method, the number of images
    and the cfg's fingerprint (a table is refused for another cfg). 'yolo detect --precision int8'
    finds FILE next to the weights when it is named like them with .int8 (weights/yolov3-tiny.int8),
    or takes it with --int8-table FILE. Use photos like those the model will see; a few dozen
    are plenty.

    options:
      --out FILE       the table to write (required)
      --method M       percentile (default): clip the top and bottom (100 - P)% of the values;
                       minmax: the smallest and largest values seen
      --percentile P   for --method percentile, default \(defaultPercentile)
      --cfg F          Darknet cfg (default: \(defaultCfg))
      --weights F      Darknet weights (default: \(defaultWeights))
      --size WxH       network input size instead of the cfg's (multiples of 32)
      --threads N      threads (default: the number of cores)

    example:
      yolo calibrate samples/ --out weights/yolov3-tiny.int8
    """

    static let defaultPercentile = 99.99

    static func run(_ args: [String]) throws -> Int32 {
        let a = try Arguments(args, options: ["out", "method", "percentile", "cfg", "weights", "size", "threads"],
                              flags: ["help"], short: ["h": "help"])
        if a.has("help") { print(usage); return 0 }
        guard !a.positionals.isEmpty else { throw UsageError("calibrate needs at least one IMAGE or DIR") }
        guard let out = a.string("out"), !out.isEmpty else { throw UsageError("calibrate needs --out FILE") }
        let method: CalibrationMethod
        switch a.string("method") ?? "percentile" {
        case "minmax":
            if a.string("percentile") != nil { throw UsageError("--percentile is for --method percentile") }
            method = .minMax
        case "percentile":
            let p = a.string("percentile").map { Double($0) } ?? defaultPercentile
            guard let p, p > 50, p <= 100 else { throw UsageError("--percentile \(a.string("percentile")!): expected a number in (50, 100], e.g. 99.99") }
            method = .percentile(p)
        case let m: throw UsageError("--method \(m): expected percentile or minmax")
        }
        let threads = try a.int("threads", default: ProcessInfo.processInfo.activeProcessorCount, range: 1...256)
        let cfgPath = a.string("cfg") ?? defaultCfg, weightsPath = a.string("weights") ?? defaultWeights
        let (inputs, _, failed) = DetectCommand.expandInputs(a.positionals, outputDirectory: nil)
        if failed { return 1 }
        try DetectCommand.checkOutputs([(out, "the calibration table")], inputs: inputs.map(\.path) + [cfgPath, weightsPath])
        let model = try Model(cfgPath: cfgPath, weightsPath: weightsPath, options: ModelOptions(inputSize: try a.inputSize("size")))
        let detector = try Detector(model: model, threads: 1)
        let table = try Int8Calibrator.calibrate(model: model, inputs: inputs.count, method: method, threads: threads) { i, buffer throws(YOLOError) in
            let path = inputs[i].path
            do {
                let image = try loadImage(path: path)
                try image.pixels.withUnsafeBytes { try detector.preprocess(pixels: $0, width: image.width, height: image.height) }
            } catch {
                throw .invalidArgument("\(DetectCommand.describe(error, path: path))")
            }
            _ = buffer.update(fromContentsOf: detector.session.input)
        }
        removeTemporaryFilesOnSignals()
        try writeOutputFile(Array(table.text.utf8), to: out)
        printError("yolo: calibrate: \(table.ranges.count) convolutions, \(inputs.count) image\(inputs.count == 1 ? "" : "s"), \(table.method): \(out)")
        return 0
    }
}
