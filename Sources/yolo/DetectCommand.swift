// `yolo detect`: its options and help, and the run over the images (paths: DetectPlan.swift;
// what is written: Output.swift).
import Foundation
import YOLO
import YOLOText
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
    \(DetectionOptions.help(threads: "threads, default the number of cores (\(ProcessInfo.processInfo.activeProcessorCount) here)"))
      --no-exif        ignore the EXIF orientation (as Darknet does), default: apply it
      --max-pixels N   refuse images of more than N pixels (before decoding), default
                       \(defaultMaxPixels) (2^27)
      --output PATH    annotated image: for one IMAGE a file (.png, .jpg, .jpeg; default
                       predictions.png), for several (or a DIR, or PATH ending in /) a directory
                       that receives one image per input under its own name (default predictions/)
      --no-draw        write no annotated images
      --save-txt DIR   also write YOLO-format labels: DIR/<image name>.txt per image (under its
                       path relative to a DIR searched), one line per detection, 'class cx cy w h'
                       (the box clamped to the image, divided by its size; as Ultralytics'
                       save_txt); an image without detections gets an empty file
      --save-conf      with --save-txt: the confidence as a sixth number on each line
      --ext-output     Darknet's text lines with the box in pixels (as its -ext_output):
                       'dog: 99%\\t(left_x:  128   top_y:  224   width:  185   height:  303)'
      --json           print one JSON object per image per line instead of Darknet's text:
                       {"image", "width", "height", "inference_ms", "detections": [{"class",
                       "class_index", "confidence", "objectness", "box": {"left", "top",
                       "right", "bottom"} (pixels, unclamped), "rel": [x, y, w, h], "box_index"}]}
      --coco FILE      also write COCO-style results [{"image_id", "category_id", "bbox":
                       [x, y, w, h], "score"}]; image_id from a numeric file name, else the
                       image's position in the input list (0-based); category_id is COCO's id
                       for an 80-class model, else the class index (0-based) for custom models
      -h, --help       show this help

    The default cfg, weights and names come from $YOLO_WEIGHTS (a directory), else weights/
    under the current directory.
    No output (annotated image, label file, --coco file) may replace an input file (an image,
    the cfg, weights or names; also through symbolic or hard links): such a run is refused
    before anything is written. Outputs are written to a temporary file renamed into place;
    SIGINT, SIGTERM or SIGHUP remove the one being written. A DIR given as a symbolic link is
    followed (links to directories inside it are not); the output directory inside a DIR is
    not searched (so a run can be repeated). Stderr says where annotated images and labels went.

    Output: results on stdout, errors on stderr as 'yolo: <path>: <message>'.
    Exit status: 0 all images processed, 1 if any image failed (the others are still
    processed), 64 usage error.
    """

    static func run(_ args: [String]) throws -> Int32 {
        let a = try Arguments(args, options: DetectionOptions.optionNames.union(["output", "coco", "max-pixels", "save-txt"]),
                              flags: DetectionOptions.flagNames.union(["no-exif", "json", "no-draw", "help", "ext-output", "save-conf"]),
                              short: ["h": "help"])
        if a.has("help") { print(usage); return 0 }
        guard !a.positionals.isEmpty else { throw UsageError("detect needs at least one IMAGE or DIR") }
        let detection = try DetectionOptions(a)
        let threads = detection.threads ?? ProcessInfo.processInfo.activeProcessorCount
        let maxPixels = try a.int("max-pixels", default: defaultMaxPixels, range: 1...Int.max)
        let json = a.has("json")
        let draw = !a.has("no-draw")
        let extOutput = a.has("ext-output")
        if extOutput && json { throw UsageError("--ext-output adds pixel boxes to Darknet's text lines; --json has them already") }
        if let coco = a.string("coco"), coco.isEmpty { throw UsageError("--coco needs a file name") }
        let labelsDirectory = a.string("save-txt")
        if labelsDirectory?.isEmpty == true { throw UsageError("--save-txt needs a directory") }
        if a.has("save-conf") && labelsDirectory == nil { throw UsageError("--save-conf adds the confidence to --save-txt's labels: give --save-txt DIR") }

        // Inputs: files as given, directories searched (with a directory among the inputs,
        // annotated images go to a directory, which is then not searched).
        let given = a.string("output")
        var (inputs, sawDirectory, failed) = expandInputs(a.positionals, outputDirectory: draw ? given ?? "predictions" : nil)

        // Where annotated images go.
        var outputs: [String?] = Array(repeating: nil, count: inputs.count)
        var outputTarget = ""
        if draw && !inputs.isEmpty {
            var isDir: ObjCBool = false
            let givenIsDir = given.map { $0.hasSuffix("/") || (FileManager.default.fileExists(atPath: $0, isDirectory: &isDir) && isDir.boolValue) } ?? false
            if inputs.count == 1 && !sawDirectory && !givenIsDir {
                let path = given ?? "predictions.png"
                guard hasImageExtension(path) else {
                    throw UsageError("--output \(path): name a .png, .jpg or .jpeg file (or a directory, ending in /)")
                }
                outputs[0] = path
                outputTarget = path
            } else {
                let dir = given ?? "predictions"
                outputs = uniquePaths(inputs.map { hasImageExtension($0.outputName) ? $0.outputName : $0.outputName + ".png" }, in: dir)
                outputTarget = dir.hasSuffix("/") ? dir : dir + "/"
            }
        }
        // Where labels go: the image's name with .txt for its extension.
        let labels: [String?] = labelsDirectory.map { dir in
            uniquePaths(inputs.map { ($0.outputName as NSString).deletingPathExtension + ".txt" }, in: dir)
        } ?? Array(repeating: nil, count: inputs.count)

        // No output may replace an input (an image, or a model file), however its path is
        // spelled, nor another output.
        let planned = outputs.compactMap { $0.map { ($0, "an annotated image") } } + labels.compactMap { $0.map { ($0, "a label file") } }
            + (a.string("coco").map { [($0, "the COCO results")] } ?? [])
        try checkOutputs(planned, inputs: inputs.map(\.path) + detection.modelFiles)
        // Output directories, made before any work so that a failure is reported once.
        var made = Set<String>()
        for case let out? in outputs + labels {
            let dir = parentDirectory(out)
            if !dir.isEmpty, made.insert(dir).inserted { try makeDirectories(dir) }
        }
        removeTemporaryFilesOnSignals()

        let loaded = try detection.load(threads: threads)
        let detector = try Detector(model: loaded.model, classNames: loaded.classNames, options: loaded.detector,
                                    threads: threads)

        var progress = ProgressBar(total: inputs.count, enabled: sawDirectory)
        var cocoResults: [String] = []
        var drawn = 0, labelled = 0
        let stdout = FileHandle.standardOutput
        for (index, input) in inputs.enumerated() {
            progress.show(done: index, current: input.path)
            let image: RGBImage, detections: [Detection]
            do {
                image = try loadImage(path: input.path, applyEXIFOrientation: !a.has("no-exif"), maxPixels: maxPixels)
                detections = try detector.detect(rgb: image.pixels, width: image.width, height: image.height)
            } catch {
                progress.clear()
                printError("yolo: \(describe(error, path: input.path))")
                failed = true
                continue
            }
            let ms = Double(detector.lastTiming.inference) / 1e6
            var text: String
            if json {
                text = detectionsJSON(image: input.path, width: image.width, height: image.height,
                                      inferenceMilliseconds: ms, detections: detections) + "\n"
            } else {
                text = "\(input.path): Predicted in \(String(format: "%.1f", ms)) ms.\n"
                text += darknetLines(detections, pixelBoxesIn: extOutput ? (image.width, image.height) : nil)
                    .map { $0 + "\n" }.joined()
            }
            progress.clear()
            stdout.write(text.data(using: .utf8)!)
            if a.string("coco") != nil {
                cocoResults += cocoEntries(detections, imageID: cocoImageID(path: input.path) ?? index,
                                           width: image.width, height: image.height, classCount: detector.classCount)
            }
            if let path = labels[index] {
                let lines = yoloLabelLines(detections, width: image.width, height: image.height, confidence: a.has("save-conf"))
                do {
                    try writeOutputFile(Array(lines.map { $0 + "\n" }.joined().utf8), to: path)
                    labelled += 1
                } catch {
                    printError("yolo: \(error)")
                    failed = true
                }
            }
            if let out = outputs[index] {
                var annotated = image
                drawDetections(detections, on: &annotated, classCount: detector.classCount)
                do {
                    try writeImage(annotated, to: out)
                    drawn += 1
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
        if drawn > 0 {
            printError(outputTarget.hasSuffix("/") ? "yolo: \(drawn) annotated image\(drawn == 1 ? "" : "s") in \(outputTarget)"
                                                   : "yolo: annotated image: \(outputTarget)")
        }
        if labelled > 0, let dir = labelsDirectory {
            printError("yolo: \(labelled) label file\(labelled == 1 ? "" : "s") in \(dir.hasSuffix("/") ? dir : dir + "/")")
        }
        return failed ? 1 : 0
    }

    /// "<path>: <message>" for an error, unless its description already starts with the path.
    static func describe(_ error: Error, path: String) -> String {
        let text = "\(error)"
        return text.hasPrefix(path + ":") ? text : "\(path): \(text)"
    }
}
