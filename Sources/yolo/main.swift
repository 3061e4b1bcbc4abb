// The `yolo` tool's entry: its commands, the default model files, version, errors, exit codes.
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
  version   the version and the kernel levels built in and run on this CPU (also --version)

Run 'yolo <command> --help' for a command's options and defaults.
\(DefaultModelFiles.hint)
"""

/// `yolo version`: the package version, the GEMM kernel levels built in and those this CPU
/// runs, the one selected, and what the other kernels were compiled for.
func versionText() -> String {
    let override = ProcessInfo.processInfo.environment["YOLO_KERNEL_LEVEL"].map { " (YOLO_KERNEL_LEVEL=\($0))" } ?? ""
    return [
        "yolo (yolo-swift) \(BuildInfo.version)",
        "GEMM kernel levels: built \(BuildInfo.kernelLevels.map(\.rawValue).joined(separator: ", ")); "
            + "this CPU runs \(KernelLevel.supported.map(\.rawValue).joined(separator: ", ")); "
            + "selected \(KernelLevel.selected.rawValue)\(override)",
        "other kernels: \(BuildInfo.kernelTarget)",
        "OpenBLAS: core \(BuildInfo.blasCoreName)",
    ].joined(separator: "\n")
}

/// The text of an error; for a missing default model file, with how to point `yolo` at the
/// files (the defaults are relative to the current directory unless YOLO_WEIGHTS says where).
func explainingModelFiles(_ error: Error) -> String {
    guard case let YOLOError.file(path, reason) = error, reason == FileReadFailure.notFound.reason,
          [defaultCfg, defaultWeights, defaultNames].contains(path) else { return "\(error)" }
    let option = path == defaultCfg ? "--cfg" : path == defaultWeights ? "--weights" : "--names"
    let whereFrom = ProcessInfo.processInfo.environment["YOLO_WEIGHTS"].flatMap { $0.isEmpty ? nil : $0 }
        .map { "the default model files are looked for in YOLO_WEIGHTS=\($0)" }
        ?? "the default model files are looked for in weights/ under the current directory, \(FileManager.default.currentDirectoryPath)"
    return "\(error) (\(whereFrom); give \(option) F, or set YOLO_WEIGHTS to the directory holding "
        + "\((defaultCfg as NSString).lastPathComponent), \((defaultWeights as NSString).lastPathComponent) and \((defaultNames as NSString).lastPathComponent))"
}

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
        case "tune": return try TuneCommand.run(rest)
        case "version", "--version":
            guard rest.isEmpty else { throw UsageError("\(command) takes no arguments") }
            print(versionText())
            return 0
        case "-h", "--help", "help": print(mainUsage); return 0
        default: throw UsageError("unknown command '\(command)'")
        }
    } catch let e as UsageError {
        printError("yolo: \(e.description)" + (e.hint ? "\nRun 'yolo --help' for usage." : ""))
        return 64
    } catch {
        printError("yolo: \(explainingModelFiles(error))")
        return 1
    }
}

exit(runMain(Array(CommandLine.arguments.dropFirst())))
