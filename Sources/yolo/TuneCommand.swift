// yolo tune: measures every candidate algorithm of each convolution on this CPU, prints the table
// of candidates and choices, and stores the plan in the plan cache, where yolo detect, yolo stream
// and yolo-bench find it at their next load.
import Foundation
import YOLO
import YOLOText

enum TuneCommand {
    static let usage = """
    usage: yolo tune [--cfg F] [--weights F] [--size WxH] [--threads LIST] [--conv ALGO] [--precision P] [--int8-table F]
                     [--int8-fallback P] [--cache DIR | --no-cache]

    Measures, on this CPU, how fast each algorithm computes each convolution of the network
    (im2col + GEMM, Winograd F(2x2) and F(4x4), the direct 3x3 conv + max pool, 1x1 GEMM; with
    --precision int8 also the INT8 GEMM and INT8 Winograd F(2x2) and F(4x4) where the calibration
    table covers the layer; with --precision bf16 or fp16 the BF16 or FP16 forms of im2col, 1x1 and
    Winograd F(2x2)), with the threads the sessions will use, and keeps the fastest per layer. Prints the table of candidates
    (ms) and choices. The plan is stored in the plan cache (one small text file per CPU, kernel
    level, thread count, cfg and input size); 'yolo detect', 'yolo stream' and 'yolo-bench' use it
    when they load the same model with the same threads on this machine.

    options:
      --cfg F          Darknet cfg (default: \(defaultCfg))
      --weights F      Darknet weights (default: \(defaultWeights))
      --size WxH       network input size instead of the cfg's (multiples of 32)
      --threads LIST   thread counts to tune for, comma-separated (default: 1,\(MachineCores.available):
                       'yolo stream' runs one-thread sessions, 'yolo detect' one session of all cores)
      --conv ALGO      which algorithms may be used: winograd (all, default), winograd2 (no F(4x4)),
                       im2col (no Winograd: the least memory)
    \(precisionUsage)
      --cache DIR      the plan cache (default: \(PlanCache.defaultDirectory ?? "$XDG_CACHE_HOME/yolo-swift/plans"))
      --no-cache       measure and print, store nothing

    example:
      yolo tune --threads 1,2
    """

    static func run(_ args: [String]) throws -> Int32 {
        let a = try Arguments(args, options: Set(["cfg", "weights", "size", "threads", "conv", "cache"]).union(precisionOptionNames),
                              flags: ["no-cache", "help"],
                              short: ["h": "help"])
        if a.has("help") { print(usage); return 0 }
        guard a.positionals.isEmpty else { throw UsageError("tune takes no positional arguments") }
        let cores = MachineCores.available
        var threads: [Int] = []
        for item in (a.string("threads") ?? "1,\(cores)").split(separator: ",", omittingEmptySubsequences: false) {
            guard let n = Int(item), (1...256).contains(n) else {
                throw UsageError("--threads \(a.string("threads")!): expected thread counts in 1...256, e.g. 1,2")
            }
            if !threads.contains(n) { threads.append(n) }
        }
        let convolution = try a.convolution() ?? .winograd
        if a.has("no-cache") && a.string("cache") != nil { throw UsageError("--cache and --no-cache exclude each other") }
        let directory = a.has("no-cache") ? nil : a.string("cache") ?? PlanCache.defaultDirectory
        if !a.has("no-cache") && directory == nil {
            throw UsageError("no plan cache directory: set HOME or XDG_CACHE_HOME, or pass --cache DIR (or --no-cache)", hint: false)
        }
        let cfg = a.string("cfg") ?? defaultCfg, weights = a.string("weights") ?? defaultWeights
        let size = try a.inputSize("size")
        for count in threads {
            let start = Date()
            var options = ModelOptions(convolution: convolution, inputSize: size, planning: .remeasure(cacheDirectory: directory),
                                       tuningThreads: count)
            try applyPrecisionOptions(a, to: &options)
            let model = try Model(cfgPath: cfg, weightsPath: weights, options: options)
            let seconds = Date().timeIntervalSince(start)
            let plan = model.plan
            print("yolo tune: \(cfg) at \(model.inputWidth)x\(model.inputHeight), \(plan.kernels) kernels\(plan.halfGemm.map { " (\($0))" } ?? ""), \(count) thread\(count == 1 ? "" : "s")")
            print(plan.description)
            print("measured in \(String(format: "%.2f", plan.tuningSeconds)) s (load and measurement \(String(format: "%.2f", seconds)) s)"
                  + (plan.cacheFile.map { "; stored in \($0)" } ?? "; not stored (--no-cache)"))
            for warning in plan.warnings { printError("yolo: tune: \(warning)") }
            print("")
        }
        return 0
    }
}
