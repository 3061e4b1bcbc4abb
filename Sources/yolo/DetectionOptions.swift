// The options of every command that detects (`yolo detect`, `yolo stream`, and commands to come),
// parsed, validated and documented in one place: the model files, how the network runs (input
// size, convolution algorithm, threads) and what is reported (threshold, NMS, classes, count,
// letterbox or stretch); and the model they load.
import Foundation
import YOLO
import YOLOText

struct DetectionOptions {
    /// The options and flags to hand `Arguments` (with the command's own).
    static let optionNames = Set(["cfg", "weights", "names", "thresh", "nms", "classes", "max-det", "conv", "size",
                                  "threads", "cores", "plan"]).union(precisionOptionNames)
    static let flagNames: Set<String> = ["agnostic", "stretch", "letterbox"]

    /// Their help, in the usage text of each command; `threads` says what --threads means there.
    static func help(threads: String) -> String {
        """
          --cfg F          Darknet cfg, default \(defaultCfg)
          --weights F      Darknet weights, default \(defaultWeights)
          --names F        class names, one per line, default \(defaultNames)
          --thresh T       report a (box, class) when its confidence > T, default 0.25
          --nms T          NMS IoU threshold, default 0.45
          --agnostic       NMS across classes: a box that overlaps a better box of any class is
                           dropped (default: only boxes of the same class suppress each other); a
                           kept box still reports every class above --thresh (e.g. car and truck)
          --classes LIST   report only these classes, comma-separated: names from --names (exactly,
                           else in any case), else indices; e.g. person,car
          --max-det N      report at most N detections per image or frame (the most confident)
          --conv ALGO      which algorithms convolutions may use: winograd (default: all, the
                           plan picks per layer: Winograd F(4x4) or F(2x2), im2col, direct),
                           winograd2 (no F(4x4)) or im2col (no Winograd: the least memory)
          --size WxH       network input size instead of the cfg's width and height (multiples
                           of 32, e.g. 608x352 for wide images; 320x320 is faster)
          --stretch        stretch images to the network size instead of letterboxing
                           (AlexeyAB's default; boxes then differ from pjreddie's)
          --letterbox      letterbox images (keep the aspect ratio, pad with grey). Default: as
                           the cfg's [net] letter_box says (0 stretch, 1 letterbox), else letterbox
          --threads N      \(threads)
          --cores C        run on these CPUs only: big (the fastest cores, where Linux tells them
                           apart: big.LITTLE boards), little, all (default), or a list such as
                           0-3,6; the default thread count is then theirs
          --plan P         each layer's algorithm: cached (default: the plan 'yolo tune' measured on
                           this machine for this model and thread count, else the fixed table),
                           table, or measure (now, if nothing is cached; stored for the next run)
        \(precisionUsage)
        """
    }

    var cfg: String
    var weights: String
    var names: String
    /// Threshold, NMS, maximum count, letterbox or stretch; the class filter is set by `load`.
    var detector = DetectorOptions()
    /// --classes as given (resolved against the names by `load`).
    var classes: String?
    var model = ModelOptions()
    /// --threads; nil when not given (each command has its default).
    var threads: Int?
    /// --cores, resolved: the CPUs this process now runs on; nil when not given.
    var cores: [Int]?

    init(_ a: Arguments) throws {
        cfg = a.string("cfg") ?? defaultCfg
        weights = a.string("weights") ?? defaultWeights
        names = a.string("names") ?? defaultNames
        detector.threshold = try a.float("thresh", default: 0.25, range: 0...1)
        detector.nmsThreshold = try a.float("nms", default: 0.45, range: 0...1)
        detector.classAgnostic = a.has("agnostic")
        if a.has("stretch") && a.has("letterbox") { throw UsageError("--stretch and --letterbox exclude each other: give one") }
        // Neither: the model's own (its cfg's letter_box, else letterbox).
        detector.resize = a.has("stretch") ? .stretch : a.has("letterbox") ? .letterbox : nil
        if a.string("max-det") != nil { detector.maxDetections = try a.int("max-det", default: 0, range: 0...1_000_000) }
        classes = a.string("classes")
        if let classes, classes.split(separator: ",").allSatisfy({ $0.trimmingCharacters(in: .whitespaces).isEmpty }) {
            throw UsageError("--classes needs at least one class name")
        }
        model.inputSize = try a.inputSize("size")
        if let c = try a.convolution() { model.convolution = c }
        if a.string("threads") != nil { threads = try a.int("threads", default: 1, range: 1...256) }
        // Before any session starts a thread: they take this thread's CPU set.
        if let spec = a.string("cores") {
            do { cores = try runOnCores(spec) } catch { throw UsageError(error.description) }
        }
        try applyPrecisionOptions(a, to: &model)
        let cache = PlanCache.defaultDirectory
        switch a.string("plan") ?? "cached" {
        case "cached": model.planning = cache.map { .cached(cacheDirectory: $0) } ?? .table
        case "table": model.planning = .table
        case "measure": model.planning = .measure(cacheDirectory: cache)
        case let p: throw UsageError("--plan \(p): expected cached, table or measure")
        }
    }

    /// The files the model is read from (no output may replace them).
    var modelFiles: [String] { [cfg, weights, names] }

    /// What `load` gives: the model, its class names (at least one per class of the model) and
    /// the detector options with the class filter.
    struct Loaded {
        var model: Model
        var classNames: [String]
        var classCount: Int
        var detector: DetectorOptions
    }

    /// Loads the model for sessions of `threads` threads (the plan is made, or was cached, for
    /// that count) and the names, and resolves --classes against them.
    func load(threads: Int) throws -> Loaded {
        var options = self.model
        options.tuningThreads = threads
        let model = try Model(cfgPath: cfg, weightsPath: weights, options: options)
        for warning in model.plan.warnings { printError("yolo: plan: \(warning)") }
        let names = try Detector.readClassNames(path: self.names)
        let classCount = model.heads.first?.classes ?? 0
        if names.count < classCount {
            throw YOLOError.invalidArgument("\(self.names): has \(names.count) class names, but \(cfg) has \(classCount) classes")
        }
        var detector = self.detector
        if let classes { detector.classFilter = try Self.classFilter(classes, names: Array(names.prefix(classCount))) }
        return Loaded(model: model, classNames: names, classCount: classCount, detector: detector)
    }

    /// Class indices from `--classes` (names first, then indices: `parseClassList`).
    static func classFilter(_ list: String, names: [String]) throws -> Set<Int> {
        do { return try parseClassList(list, names: names, classCount: names.count, option: "--classes") }
        catch { throw UsageError(error.description) }
    }
}
