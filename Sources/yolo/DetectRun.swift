// One run of `yolo detect` once its inputs and outputs are planned: the images through an
// ImagePipeline (every session busy, each image read, decoded and detected on a worker), a
// producer thread handing it the paths, and the results written in input order as they come.
import Dispatch
import Foundation
import YOLO
import YOLOCore
import YOLOText
import YOLOImage
import YOLOStream

/// What `yolo detect` was asked to do (parsed and checked by `DetectCommand`).
struct DetectSettings {
    var detection: DetectionOptions
    var sessions: Int
    var threadsPerSession: Int
    var maxPixels: Int
    var applyEXIF: Bool
    var json: Bool
    var extOutput: Bool
    /// Failures as JSON lines too (`{"image", "error"}`): for path lists with --json and for
    /// --resume, where every path gets its line (with Darknet's text, failures are on stderr only).
    var errorLines: Bool
    var saveConfidence: Bool
    var coco: String?
    var labelsDirectory: String?
    var stats: Bool
}

/// One run: where results go (stdout, or the --resume file), the planned output files per
/// input position, and the counts reported at the end.
struct DetectRun {
    let settings: DetectSettings
    let loaded: DetectionOptions.Loaded
    /// Annotated image and label file per input index (IMAGE|DIR arguments only).
    let outputs: [String?]
    let labels: [String?]
    let outputTarget: String
    /// Where the text or JSON lines go, and its name for errors.
    let out: Int32
    let outName: String
    let progress: ProgressBar

    /// Runs `jobs` through the pipeline; true when every image was processed and written.
    func run(_ jobs: DetectJobs) throws -> Bool {
        let s = settings
        let draw = outputs.contains { $0 != nil }
        let maxPixels = s.maxPixels, exif = s.applyEXIF
        let pipeline = try ImagePipeline<DetectJob>(model: loaded.model, classNames: loaded.classNames,
                                                    detectorOptions: loaded.detector, sessions: s.sessions,
                                                    threadsPerSession: s.threadsPerSession, keepPixels: draw) { job in
            if let problem = job.problem { throw FileError(path: job.path, what: problem) }
            if job.path.utf8.contains(0) { throw FileError(path: job.path, what: "not a path: it contains a NUL byte") }
            let image = try loadImage(path: job.path, applyEXIFOrientation: exif, maxPixels: maxPixels)
            return VideoFrame(index: job.index, time: 0, pixels: image.pixels, width: image.width, height: image.height)
        }

        // The producer: paths into the pipeline, on a thread of its own (a path list may be a
        // pipe that delivers them as the caller writes them).
        let produced = DispatchSemaphore(value: 0)
        let producer = Thread {
            do {
                while let job = try jobs.next() {
                    if !pipeline.submit(job) { break }
                }
                pipeline.finish()
            } catch {
                pipeline.finish(throwing: error)
            }
            produced.signal()
        }
        producer.stackSize = 1 << 20
        producer.start()

        // The consumer: results in input order, each written at once.
        var failed = false, stopped = false
        var progress = self.progress
        var statistics = BatchStatistics(sessions: s.sessions, threads: s.threadsPerSession)
        // Per image, for --coco: its path and detections (ids are given once all are known).
        var cocoImages: [(path: String, width: Int, height: Int, detections: [Detection])] = []
        var drawn = 0, labelled = 0, done = 0
        while let result = pipeline.next() {
            let path = result.input.path
            progress.show(done: done, current: path)
            done += 1
            if stopped { continue }
            statistics.add(result)
            if let error = result.error {
                progress.clear()
                let message = DetectCommand.describe(error, path: path)
                printError("yolo: \(message)")
                failed = true
                if s.errorLines {
                    let why = message.hasPrefix(path + ": ") ? String(message.dropFirst(path.count + 2)) : message
                    if !write(detectionErrorJSON(image: path, error: why) + "\n", failed: &failed) { stopped = true; pipeline.finish() }
                }
                continue
            }
            let ms = Double(result.timing.inference) / 1e6
            var text: String
            if s.json {
                text = detectionsJSON(image: path, width: result.width, height: result.height, inferenceMilliseconds: ms,
                                      detections: result.detections) + "\n"
            } else {
                text = "\(path): Predicted in \(String(format: "%.1f", ms)) ms.\n"
                text += darknetLines(result.detections, pixelBoxesIn: s.extOutput ? (result.width, result.height) : nil)
                    .map { $0 + "\n" }.joined()
            }
            progress.clear()
            if !write(text, failed: &failed) {
                // The reader went away (a clean stop, as with 'yolo stream'), or the file failed.
                stopped = true
                pipeline.finish()
                continue
            }
            if s.coco != nil { cocoImages.append((path, result.width, result.height, result.detections)) }
            if let labelPath = planned(labels, result.input.index) {
                let lines = yoloLabelLines(result.detections, width: result.width, height: result.height,
                                           confidence: s.saveConfidence)
                do {
                    try writeOutputFile(Array(lines.map { $0 + "\n" }.joined().utf8), to: labelPath)
                    labelled += 1
                } catch {
                    printError("yolo: \(error)")
                    failed = true
                }
            }
            if let outPath = planned(outputs, result.input.index), let frame = result.image {
                // The boxes are drawn on a copy (Swift would abort if it cannot allocate one).
                if let refusal = checkDataSizeLimit(frame.pixels.count, for: "drawing on a copy of the image") {
                    printError("yolo: \(outPath): \(refusal)")
                    failed = true
                    continue
                }
                var annotated = RGBImage(width: frame.width, height: frame.height, pixels: frame.pixels)
                drawDetections(result.detections, on: &annotated, classCount: loaded.classCount)
                do {
                    try writeImage(annotated, to: outPath)
                    drawn += 1
                } catch {
                    printError("yolo: \(DetectCommand.describe(error, path: outPath))")
                    failed = true
                }
            }
        }
        progress.clear()
        produced.wait()
        if let error = pipeline.sourceError {
            printError("yolo: \(error)")
            failed = true
        }

        if let coco = s.coco {
            let ids = cocoImageIDs(cocoImages.map(\.path))
            let cocoResults = cocoImages.flatMap {
                cocoEntries($0.detections, imageID: ids[$0.path]!, width: $0.width, height: $0.height, classCount: loaded.classCount)
            }
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
        if labelled > 0, let dir = s.labelsDirectory {
            printError("yolo: \(labelled) label file\(labelled == 1 ? "" : "s") in \(dir.hasSuffix("/") ? dir : dir + "/")")
        }
        if s.stats { printError("yolo: \(statistics.summary())") }
        return !failed
    }

    /// The output planned for the input at `index` (none for a path list's).
    private func planned(_ paths: [String?], _ index: Int) -> String? { paths.indices.contains(index) ? paths[index] : nil }

    /// Writes one result; false when it cannot: the reader went away (a clean stop, as with
    /// 'yolo stream'), or the write failed (said on stderr; `failed` set).
    private func write(_ text: String, failed: inout Bool) -> Bool {
        if writeAll(out, Array(text.utf8)) { return true }
        if errno != EPIPE {
            printError("yolo: \(outName): cannot write: \(errnoText(errno))")
            failed = true
        }
        return false
    }
}
