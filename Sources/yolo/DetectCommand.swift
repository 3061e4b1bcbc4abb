// `yolo detect`: its options and help, and the run over the images (paths: DetectPlan.swift;
// what is written: Output.swift).
import Foundation
import YOLO
import YOLOText
import YOLOImage

enum DetectCommand {
    static let usage = """
    Usage:   yolo detect [options] IMAGE|DIR ...
             yolo detect [options] --files-from FILE|- [--shard K/N] [--resume OUT.jsonl]
    Example: yolo detect samples/astronaut.png
             yolo detect photos/ --json --no-draw > detections.jsonl
             yolo detect a.jpg b.png --thresh 0.1 --output annotated/
             yolo detect val2017/ --thresh 0.005 --no-draw --coco results.json
             find photos -name '*.jpg' | yolo detect --files-from - --json > detections.jsonl

    Finds objects in JPEG and PNG images with YOLOv3-tiny, as the original Darknet
    (pjreddie) does: letterboxed input, per-class NMS, one line per (box, class).
    A DIR is searched recursively for .jpg, .jpeg and .png files (any case), in sorted order.

    Options:
    \(DetectionOptions.help(threads: "threads, default the number of cores (\(MachineCores.available) here)"))
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
                       [x, y, w, h], "score"}]; image_id from a numeric file name (000139.jpg:
                       139) that no other file claims, else the smallest ids no file's number
                       takes, in input order (0, 1, ...): distinct files, distinct ids;
                       category_id is COCO's id for an 80-class model, else the class index
                       (0-based) for custom models
      --files-from F   the images to detect, one path per line, from file F or stdin (-), read
                       as they arrive; results in the list's order, each written as soon as
                       its turn comes; with --json an image that fails is also a line
                       {"image", "error"} (every path gets its line); no annotated images
      --shard K/N      only every N-th image from the K-th (1 <= K <= N): N workers with
                       1/N ... N/N together do each image once
      --resume OUT     append the JSON lines to OUT (not stdout), skipping the images OUT
                       already answers: a killed run started again does the rest, once
      --sessions N     images in flight at once, default: one per core (one with every core
                       for a single IMAGE); --threads is then per session, default 1
      --stats          at the end, images per second and where the time went, on stderr
      -h, --help       show this help

    The default cfg, weights and names come from $YOLO_WEIGHTS (a directory), else weights/
    under the current directory.
    No output (annotated image, label file, --coco file) may replace an input file (an image,
    the cfg, weights or names; also through symbolic or hard links): such a run is refused
    before anything is written. Outputs are written to a temporary file renamed into place
    (through a symbolic link: over the file it leads to; a FIFO or character device is written
    as a stream; a block device, socket or directory is refused); SIGINT, SIGTERM or SIGHUP
    remove the one being written. A DIR given as a symbolic link is
    followed (links to directories inside it are not); the output directory inside a DIR is
    not searched (so a run can be repeated). Stderr says where annotated images and labels went.

    Output: results on stdout, errors on stderr as 'yolo: <path>: <message>'.
    Exit status: 0 all images processed, 1 if any image failed (the others are still
    processed), 64 usage error.
    """

    static func run(_ args: [String]) throws -> Int32 {
        let a = try Arguments(args, options: DetectionOptions.optionNames.union(["output", "coco", "max-pixels", "save-txt",
                                                                                 "files-from", "shard", "resume", "sessions"]),
                              flags: DetectionOptions.flagNames.union(["no-exif", "json", "no-draw", "help", "ext-output",
                                                                       "save-conf", "stats"]),
                              short: ["h": "help"])
        if a.has("help") { print(usage); return 0 }
        let filesFrom = a.string("files-from")
        if let filesFrom {
            if filesFrom.isEmpty { throw UsageError("--files-from needs a file name (or - for stdin)") }
            if !a.positionals.isEmpty { throw UsageError("give IMAGE|DIR arguments or --files-from, not both") }
            for option in ["output", "save-txt", "coco"] where a.string(option) != nil {
                throw UsageError("--\(option) needs IMAGE|DIR arguments; with --files-from, each image's results are one line on stdout (or in --resume's file)")
            }
        } else if a.positionals.isEmpty {
            throw UsageError("detect needs at least one IMAGE or DIR (or --files-from FILE)")
        }
        let detection = try DetectionOptions(a)
        let resume = a.string("resume")
        if resume?.isEmpty == true { throw UsageError("--resume needs the results file (JSON lines, appended to)") }
        let shard = try a.string("shard").map(Shard.init)
        var settings = DetectSettings(detection: detection, sessions: 1, threadsPerSession: 1,
                                      maxPixels: try a.int("max-pixels", default: defaultMaxPixels, range: 1...Int.max),
                                      applyEXIF: !a.has("no-exif"), json: a.has("json") || resume != nil,
                                      extOutput: a.has("ext-output"), errorLines: (filesFrom != nil && a.has("json")) || resume != nil,
                                      saveConfidence: a.has("save-conf"), coco: a.string("coco"),
                                      labelsDirectory: a.string("save-txt"), stats: a.has("stats"))
        let draw = !a.has("no-draw") && filesFrom == nil
        if settings.extOutput && settings.json {
            throw UsageError(a.has("json") ? "--ext-output adds pixel boxes to Darknet's text lines; --json has them already"
                                           : "--ext-output is for Darknet's text lines; --resume writes JSON lines")
        }
        if let coco = settings.coco, coco.isEmpty { throw UsageError("--coco needs a file name") }
        let labelsDirectory = settings.labelsDirectory
        if labelsDirectory?.isEmpty == true { throw UsageError("--save-txt needs a directory") }
        if settings.saveConfidence && labelsDirectory == nil { throw UsageError("--save-conf adds the confidence to --save-txt's labels: give --save-txt DIR") }

        // Inputs: files as given, directories searched (with a directory among the inputs,
        // annotated images go to a directory, which is then not searched); or a path list.
        let given = a.string("output")
        var (inputs, sawDirectory, failed) = filesFrom != nil ? ([], false, false)
            : expandInputs(a.positionals, outputDirectory: draw ? given ?? "predictions" : nil)

        // Sessions: one with every core for one image; else every core busy, one thread each
        // (the most images per second), unless --sessions or --threads say otherwise.
        let cores = MachineCores.available
        let single = filesFrom == nil && inputs.count == 1
        settings.sessions = try a.int("sessions", default: single ? 1 : max(1, cores / (detection.threads ?? 1)), range: 1...256)
        settings.threadsPerSession = detection.threads ?? (single && a.string("sessions") == nil ? cores : max(1, cores / settings.sessions))

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

        // No output may replace an input (an image, the path list or a model file), however its
        // path is spelled, nor another output; the --resume file is appended to, never replaced,
        // but may not be an input either.
        let planned = outputs.compactMap { $0.map { ($0, "an annotated image") } } + labels.compactMap { $0.map { ($0, "a label file") } }
            + (settings.coco.map { [($0, "the COCO results")] } ?? []) + (resume.map { [($0, "the results (--resume)")] } ?? [])
        try checkOutputs(planned, inputs: inputs.map(\.path) + detection.modelFiles + (filesFrom.map { $0 == "-" ? [] : [$0] } ?? []))
        // Output directories, made before any work so that a failure is reported once.
        var made = Set<String>()
        for case let out? in outputs + labels {
            let dir = parentDirectory(out)
            if !dir.isEmpty, made.insert(dir).inserted { try makeDirectories(dir) }
        }
        removeTemporaryFilesOnSignals()
        // A reader that goes away ('| head -3') stops the run cleanly (EPIPE), as in 'yolo stream'.
        signal(SIGPIPE, SIG_IGN)

        // The path list and the results so far, before the model loads (their errors come first).
        let lines = try filesFrom.map(openPathList)
        let log = try resume.map(ResumeLog.init)
        defer { if let log { close(log.fd) } }
        if let log, log.cutBytes > 0 {
            printError("yolo: \(log.path): cut off an unterminated last line (\(log.cutBytes) bytes) left by an interrupted run; its image is detected again")
        }
        let jobs = lines.map { DetectJobs(lines: $0, shard: shard, resume: log) } ?? DetectJobs(inputs: inputs, shard: shard, resume: log)

        let loaded = try detection.load(threads: settings.threadsPerSession)
        let run = DetectRun(settings: settings, loaded: loaded, outputs: outputs, labels: labels, outputTarget: outputTarget,
                            out: log?.fd ?? 1, outName: log?.path ?? "stdout",
                            progress: ProgressBar(total: jobs.count ?? 0, enabled: sawDirectory))
        if !(try run.run(jobs)) { failed = true }
        return failed ? 1 : 0
    }

    /// "<path>: <message>" for an error, unless its description already starts with the path.
    static func describe(_ error: Error, path: String) -> String {
        let text = "\(error)"
        return text.hasPrefix(path + ":") ? text : "\(path): \(text)"
    }
}
