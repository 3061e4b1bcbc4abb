import Foundation
import YOLO

/// The directory of the default cfg, weights and names: $YOLO_WEIGHTS, else weights/ (relative
/// to the current directory).
let weightsDirectory: String = {
    guard let dir = ProcessInfo.processInfo.environment["YOLO_WEIGHTS"], !dir.isEmpty else { return "weights" }
    return dir.hasSuffix("/") ? String(dir.dropLast()) : dir
}()
let defaultCfg = "\(weightsDirectory)/yolov3-tiny.cfg"
let defaultWeights = "\(weightsDirectory)/yolov3-tiny.weights"
let defaultNames = "\(weightsDirectory)/coco.names"

let mainUsage = """
Usage:   yolo <command> [options]
Example: yolo detect samples/astronaut.png
         yolo detect photos/ --json --no-draw > detections.jsonl
         yolo stream --input clip.mp4 --output annotated.mp4 > detections.jsonl
         yolo heads dog_input_416.f32 --out /tmp/heads

Commands:
  detect    find objects in JPEG/PNG images (Darknet's text, JSON, COCO results, annotated images)
  stream    find objects in every frame of a video (ffmpeg input, JSON lines, annotated video)
  heads     run the network on a raw float32 tensor and write its raw YOLO heads

Run 'yolo <command> --help' for a command's options and defaults.
The default cfg, weights and names are read from $YOLO_WEIGHTS (a directory), else weights/.
"""

func runMain(_ argv: [String]) -> Int32 {
    guard let command = argv.first else { printError(mainUsage); return 64 }
    let rest = Array(argv.dropFirst())
    // Past `ulimit -f`, a write fails with EFBIG (reported, its temporary file removed) instead
    // of SIGXFSZ killing the process and leaving the temporary file behind.
    signal(SIGXFSZ, SIG_IGN)
    do {
        switch command {
        case "detect": return try DetectCommand.run(rest)
        case "heads": return try HeadsCommand.run(rest)
        case "stream": return try StreamCommand.run(rest)
        case "-h", "--help", "help": print(mainUsage); return 0
        default: throw UsageError("unknown command '\(command)'")
        }
    } catch let e as UsageError {
        printError("yolo: \(e.description)" + (e.hint ? "\nRun 'yolo --help' for usage." : ""))
        return 64
    } catch {
        printError("yolo: \(error)")
        return 1
    }
}

exit(runMain(Array(CommandLine.arguments.dropFirst())))
