import Foundation
import YOLO
import YOLOImage

enum DetectCommand {
    static let usage = """
    Usage:   yolo detect [options] IMAGE|DIR ...
    Example: yolo detect samples/astronaut.png
             yolo detect photos/ --json --no-draw > detections.jsonl
             yolo detect a.jpg b.png --thresh 0.1 --output annotated/
             yolo detect val2017/ --thresh 0.005 --no-draw --coco results.json

    Finds objects in JPEG and PNG images with YOLOv3-tiny, as the original Darknet
    (pjreddie) does: letterboxed input, per-class NMS, one line per (box, class).
    A DIR is searched recursively for .jpg, .jpeg and .png files (any case), in sorted order.

    Options:
      --cfg F          Darknet cfg, default \(defaultCfg)
      --weights F      Darknet weights, default \(defaultWeights)
      --names F        class names, one per line, default \(defaultNames)
      --thresh T       report a (box, class) when its confidence > T, default 0.25
      --nms T          NMS IoU threshold, default 0.45
      --agnostic       NMS across classes: a box that overlaps a better box of any class is
                       dropped (default: only boxes of the same class suppress each other); a
                       kept box still reports every class above --thresh (e.g. car and truck)
      --classes LIST   report only these classes: names from --names (or indices), comma-
                       separated, e.g. person,car
      --max-det N      report at most N detections per image (the most confident)
      --conv ALGO      3x3 convolutions: winograd (default, fastest: F(4x4) or F(2x2) per
                       layer), winograd2 (F(2x2) only) or im2col (least memory: no
                       transformed kernels)
      --size WxH       network input size instead of the cfg's width and height (multiples
                       of 32, e.g. 608x352 for wide images)
      --stretch        stretch images to the network size instead of letterboxing
                       (AlexeyAB's default; boxes then differ from pjreddie's)
      --no-exif        ignore the EXIF orientation (as Darknet does), default: apply it
      --max-pixels N   refuse images of more than N pixels (before decoding), default
                       \(defaultMaxPixels) (2^27)
      --threads N      threads, default the number of cores (\(ProcessInfo.processInfo.activeProcessorCount) here)
      --output PATH    annotated image: for one IMAGE a file (.png, .jpg, .jpeg; default
                       predictions.png), for several (or a DIR, or PATH ending in /) a directory
                       that receives one image per input under its own name (default predictions/)
      --no-draw        write no annotated images
      --json           print one JSON object per image per line instead of Darknet's text:
                       {"image", "width", "height", "inference_ms", "detections": [{"class",
                       "class_index", "confidence", "objectness", "box": {"left", "top",
                       "right", "bottom"} (pixels, unclamped), "rel": [x, y, w, h], "box_index"}]}
      --coco FILE      also write COCO-style results [{"image_id", "category_id", "bbox":
                       [x, y, w, h], "score"}]; image_id from a numeric file name, else the
                       image's position in the input list (0-based); category_id is COCO's id
                       for an 80-class model, else the class index (0-based) for custom models
      -h, --help       show this help

    The default cfg, weights and names come from $YOLO_WEIGHTS (a directory), else weights/.
    No output (annotated image, --coco file) may replace an input file (an image, the cfg,
    weights or names; also through symbolic or hard links): such a run is refused before
    anything is written. Outputs are written to a temporary file renamed into place.

    Output: results on stdout, errors on stderr as 'yolo: <path>: <message>'.
    Exit status: 0 all images processed, 1 if any image failed (the others are still
    processed), 64 usage error.
    """

    static func run(_ args: [String]) throws -> Int32 {
        let a = try Arguments(args, options: ["cfg", "weights", "names", "thresh", "nms", "threads", "output", "coco",
                                        "classes", "max-det", "size", "conv", "max-pixels"],
                              flags: ["agnostic", "stretch", "no-exif", "json", "no-draw", "help"], short: ["h": "help"])
        if a.has("help") { print(usage); return 0 }
        guard !a.positionals.isEmpty else { throw UsageError("detect needs at least one IMAGE or DIR") }
        var options = DetectorOptions()
        options.threshold = try a.float("thresh", default: 0.25, range: 0...1)
        options.nmsThreshold = try a.float("nms", default: 0.45, range: 0...1)
        options.classAgnostic = a.has("agnostic")
        options.resize = a.has("stretch") ? .stretch : .letterbox
        if a.string("max-det") != nil { options.maxDetections = try a.int("max-det", default: 0, range: 0...1_000_000) }
        var modelOptions = ModelOptions(inputSize: try a.inputSize("size"))
        if let conv = a.string("conv") {
            guard let c = ModelOptions.Convolution(rawValue: conv) else { throw UsageError("--conv \(conv): expected winograd, winograd2 or im2col") }
            modelOptions.convolution = c
        }
        let threads = try a.int("threads", default: ProcessInfo.processInfo.activeProcessorCount, range: 1...256)
        let maxPixels = try a.int("max-pixels", default: defaultMaxPixels, range: 1...Int.max)
        let json = a.has("json")
        let draw = !a.has("no-draw")
        if let coco = a.string("coco"), coco.isEmpty { throw UsageError("--coco needs a file name") }

        // Inputs: files as given, directories expanded. Nonexistent paths stay in the list and
        // fail when loaded, so the error names them.
        var failed = false
        var inputs: [(path: String, outputName: String)] = []
        var sawDirectory = false
        for arg in a.positionals {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: arg, isDirectory: &isDir), isDir.boolValue {
                sawDirectory = true
                let found = imageFiles(in: arg)
                if found.isEmpty {
                    printError("yolo: \(arg): no .jpg, .jpeg or .png files in this directory")
                    failed = true
                }
                let prefix = arg.hasSuffix("/") ? arg : arg + "/"
                inputs += found.map { (prefix + $0, $0) }
            } else {
                inputs.append((arg, (arg as NSString).lastPathComponent))
            }
        }

        // Where annotated images go.
        var outputs: [String?] = Array(repeating: nil, count: inputs.count)
        if draw && !inputs.isEmpty {
            let given = a.string("output")
            var isDir: ObjCBool = false
            let givenIsDir = given.map { $0.hasSuffix("/") || (FileManager.default.fileExists(atPath: $0, isDirectory: &isDir) && isDir.boolValue) } ?? false
            if inputs.count == 1 && !sawDirectory && !givenIsDir {
                let path = given ?? "predictions.png"
                let ext = (path as NSString).pathExtension.lowercased()
                guard ["png", "jpg", "jpeg"].contains(ext) else {
                    throw UsageError("--output \(path): name a .png, .jpg or .jpeg file (or a directory, ending in /)")
                }
                outputs[0] = path
            } else {
                let dir = given ?? "predictions"
                var used = Set<String>()
                for (i, input) in inputs.enumerated() {
                    var name = input.outputName
                    let ext = (name as NSString).pathExtension.lowercased()
                    if !["png", "jpg", "jpeg"].contains(ext) { name += ".png" }
                    var candidate = (dir as NSString).appendingPathComponent(name)
                    var n = 2
                    while used.contains(candidate) {
                        let stem = (name as NSString).deletingPathExtension, e = (name as NSString).pathExtension
                        candidate = (dir as NSString).appendingPathComponent("\(stem)-\(n).\(e)")
                        n += 1
                    }
                    used.insert(candidate)
                    outputs[i] = candidate
                }
            }
        }

        // No output may replace an input (an image, or a model file), however its path is spelled.
        let cfgPath = a.string("cfg") ?? defaultCfg, weightsPath = a.string("weights") ?? defaultWeights
        let namesPath = a.string("names") ?? defaultNames
        var inputFiles = InputFiles()
        for path in inputs.map(\.path) + [cfgPath, weightsPath, namesPath] { inputFiles.add(path) }
        for case let out? in outputs { try inputFiles.checkOutput(out, option: "an annotated image") }
        if let coco = a.string("coco") {
            try inputFiles.checkOutput(coco, option: "the COCO results")
            if outputs.contains(coco) {
                throw UsageError("\(coco): both the COCO results and an annotated image would go there", hint: false)
            }
        }
        // Output directories, made before any work so that a failure is reported once.
        var made = Set<String>()
        for case let out? in outputs {
            let dir = parentDirectory(out)
            if !dir.isEmpty, made.insert(dir).inserted { try makeDirectories(dir) }
        }

        removeTemporaryFilesOnSignals()

        let detector = try Detector(cfgPath: cfgPath, weightsPath: weightsPath, namesPath: namesPath,
                                    options: options, threads: threads, modelOptions: modelOptions)
        if let list = a.string("classes") { detector.options.classFilter = try classFilter(list, names: detector) }

        var progress = ProgressBar(total: inputs.count, enabled: sawDirectory)
        var cocoResults: [String] = []
        let stdout = FileHandle.standardOutput
        for (index, input) in inputs.enumerated() {
            progress.show(done: index, current: input.path)
            let result: (image: RGBImage, detections: [Detection])
            do {
                let image = try loadImage(path: input.path, applyEXIFOrientation: !a.has("no-exif"), maxPixels: maxPixels)
                let detections = try detector.detect(rgb: image.pixels, width: image.width, height: image.height)
                result = (image, detections)
            } catch {
                progress.clear()
                printError("yolo: \(describe(error, path: input.path))")
                failed = true
                continue
            }
            let ms = Double(detector.lastTiming.inference) / 1e6
            var text: String
            if json {
                text = detectionsJSON(image: input.path, width: result.image.width, height: result.image.height,
                                      inferenceMilliseconds: ms, detections: result.detections) + "\n"
            } else {
                text = "\(input.path): Predicted in \(String(format: "%.1f", ms)) ms.\n"
                text += darknetLines(result.detections).map { $0 + "\n" }.joined()
            }
            progress.clear()
            stdout.write(text.data(using: .utf8)!)
            if a.string("coco") != nil {
                cocoResults += cocoEntries(result.detections, imageID: cocoImageID(path: input.path) ?? index,
                                           width: result.image.width, height: result.image.height,
                                           classCount: detector.classCount)
            }
            if let out = outputs[index] {
                var annotated = result.image
                drawDetections(result.detections, on: &annotated, classCount: detector.classCount)
                do {
                    try writeImage(annotated, to: out)
                } catch {
                    printError("yolo: \(describe(error, path: out))")
                    failed = true
                }
            }
        }
        progress.clear()

        if let coco = a.string("coco") {
            let text = "[\n" + cocoResults.joined(separator: ",\n") + (cocoResults.isEmpty ? "]\n" : "\n]\n")
            do {
                try writeOutputFile(Array(text.utf8), to: coco)
            } catch {
                printError("yolo: \(error)")
                failed = true
            }
        }
        return failed ? 1 : 0
    }

    /// Class indices from `--classes`: names (as in the names file) or indices, comma-separated.
    static func classFilter(_ list: String, names detector: Detector) throws -> Set<Int> {
        var filter = Set<Int>()
        for item in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
            if let k = detector.classNames.firstIndex(of: item) ?? Int(item).flatMap({ (0..<detector.classCount).contains($0) ? $0 : nil }) {
                filter.insert(k)
            } else {
                throw UsageError("--classes: '\(item)' is not a class name of this model (nor an index in 0..<\(detector.classCount)); names: \(detector.classNames.prefix(detector.classCount).joined(separator: ","))")
            }
        }
        guard !filter.isEmpty else { throw UsageError("--classes needs at least one class name") }
        return filter
    }

    /// The image files under `dir`, as paths relative to it, sorted; hidden files are skipped.
    static func imageFiles(in dir: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: dir) else { return [] }
        var found: [String] = []
        while let rel = walker.nextObject() as? String {
            let name = (rel as NSString).lastPathComponent
            if name.hasPrefix(".") { walker.skipDescendants(); continue }
            let ext = (name as NSString).pathExtension.lowercased()
            guard ["jpg", "jpeg", "png"].contains(ext) else { continue }
            var isDir: ObjCBool = false
            let full = (dir as NSString).appendingPathComponent(rel)
            if FileManager.default.fileExists(atPath: full, isDirectory: &isDir), !isDir.boolValue { found.append(rel) }
        }
        return found.sorted()
    }

    /// "<path>: <message>" for an error, unless its description already starts with the path.
    static func describe(_ error: Error, path: String) -> String {
        let text = "\(error)"
        return text.hasPrefix(path + ":") ? text : "\(path): \(text)"
    }
}
