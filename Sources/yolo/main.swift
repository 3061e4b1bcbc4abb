import Foundation
import YOLO

/// The default cfg, weights and names: in $YOLO_WEIGHTS, else weights/ (as for yolo-bench).
let defaultCfg = DefaultModelFiles.cfg
let defaultWeights = DefaultModelFiles.weights
let defaultNames = DefaultModelFiles.names

let mainUsage = """
Usage:   yolo <command> [options]
Example: yolo detect samples/astronaut.png
         yolo detect photos/ --json --no-draw > detections.jsonl
         yolo stream --input clip.mp4 --output annotated.mp4 > detections.jsonl
         yolo heads dog_input_416.f32 --out /tmp/heads

Commands:
  detect    find objects in JPEG/PNG images (Darknet's text, JSON, COCO results, annotated images)
  stream    find objects in every frame of a video (ffmpeg input, JSON lines, annotated video)
  tune      measure the fastest algorithm of each layer on this CPU and store the plan
  heads     run the network on a raw float32 tensor and write its raw YOLO heads

Run 'yolo <command> --help' for a command's options and defaults.
\(DefaultModelFiles.hint)
"""

func runMain(_ argv: [String]) -> Int32 {
    guard let command = argv.first else { printError(mainUsage); return 64 }
    let rest = Array(argv.dropFirst())
    do {
        switch command {
        case "detect": return try DetectCommand.run(rest)
        case "heads": return try HeadsCommand.run(rest)
        case "stream": return try StreamCommand.run(rest)
        case "tune": return try TuneCommand.run(rest)
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
