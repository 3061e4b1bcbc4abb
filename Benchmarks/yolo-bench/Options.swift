// yolo-bench's command line: its usage text, options and their parsing.
import Foundation
import YOLO

let usage = """
usage: yolo-bench [options]
       yolo-bench serve --input F.f32 [--threads N] [--cfg F] [--weights F]
       yolo-bench gemm [--runs N] [--levels LIST] [--int8]   (GEMM kernel levels vs OpenBLAS, or INT8 vs FP32, one thread)
       yolo-bench uneven [--cpu N] [--busy-ms B] [--idle-ms I]  (1 vs N threads with one core slowed: --help there)
       yolo-bench peak   (each kernel instruction's peak GOP/s on one core, measured)

Measures the engine on this machine: forward latency (min/median/max after warm-up) per
thread count, a per-layer profile (with the share spent in sgemm, and each layer's rate as a
share of its precision's measured peak on that many cores), throughput with several
frames in flight, peak memory, and the time from process start to the first detection.

options:
  --threads LIST   thread counts to measure, comma-separated (default: 1,<cores>)
  --runs N         timed forward passes per thread count (default: 50)
  --warmup N       untimed passes before timing (default: 5)
  --conv LIST      which algorithms the plan may use: winograd (all), winograd2 (no F(4x4)),
                   im2col (no Winograd) (default: winograd,im2col); one model per entry and --gemm
  --plan P         how each layer's algorithm is chosen: cached (default: the plan 'yolo tune'
                   stored for this CPU, threads and model, else the table), table, measure
                   (measured now unless cached; stored)
  --tune           measure every layer's candidates now (as 'yolo tune'), store the plan and
                   print its table for each thread count before timing
  --gemm LIST      GEMM kernels: automatic (ours at this CPU's level; YOLO_KERNEL_LEVEL lowers
                   it), kernels, openblas (default: automatic)
  --precision LIST convolution arithmetic: fp32 (default), int8, bf16, fp16 (FP32 where the planner
                   keeps it); with several, one model each, measured in turn per thread count
  --int8-table F   INT8 calibration table (default: next to the weights, as for yolo)
  --int8-fallback P  with int8, the layers not in INT8: auto (default: FP16 where the CPU computes in FP16,
                   the 1x1 ones BF16 on AMX tiles; else BF16 where it has AVX-512 BF16, else FP32),
                   fp16, bf16 or fp32
  --no-layers      skip the per-layer table
  --inflight N     frames in flight for the throughput test: N one-thread sessions sharing one
                   model, the first --conv algorithm (default: cores; 0 skips)
  --seconds S      duration of the throughput test (default: 3)
  --image F        photo for the first-detection timing (default: samples/motorcycle_left.png)
  --cfg F          Darknet cfg (default: \(DefaultModelFiles.cfg))
  --weights F      Darknet weights (default: \(DefaultModelFiles.weights))
  --json           write one JSON object to stdout (best latency configuration, throughput_fps,
                   rss_mib_by_sessions, per-configuration results, machine_quiet, warnings,
                   ...) and the text to stderr: yolo-bench --json | jq .median_ms

Other processes' CPU time is measured during each measurement (/proc/stat less our own): when
they used more than \(fmt(LoadSample.quietLimit, 2)) of a core, a warning says so (the times, and which
configuration is best, are then not what a quiet machine gives).
\(DefaultModelFiles.hint)

example:
  swift run -c release yolo-bench --threads 1,2 --runs 100
"""

struct Options {
    var threads: [Int] = [1, Machine.cores].reduce(into: []) { if !$0.contains($1) { $0.append($1) } }
    var runs = 50, warmup = 5, inflight = Machine.cores
    var seconds = 3.0
    var layers = true, json = false
    var image = "samples/motorcycle_left.png"
    var cfg = DefaultModelFiles.cfg, weights = DefaultModelFiles.weights
    var input: String? = nil
    var serve = false
    var conv: [ModelOptions.Convolution] = [.winograd, .im2col]
    var plan = "cached"
    var gemm: [ModelOptions.GemmBackend] = [.automatic]
    var precision: [Precision] = [.fp32]
    var int8Table: String? = nil
    var int8Fallback: Int8Fallback? = nil
}

func parse(_ args: [String]) -> Options {
    var o = Options()
    var i = 0
    func value() -> String {
        i += 1
        guard i < args.count else { fail("\(args[i - 1]) needs a value") }
        return args[i]
    }
    func int(_ s: String, _ name: String) -> Int {
        guard let v = Int(s), v >= 0 else { fail("\(name) \(s): expected a non-negative integer") }
        return v
    }
    while i < args.count {
        switch args[i] {
        case "serve": o.serve = true
        case "--threads":
            let list = value().split(separator: ",").map { int(String($0), "--threads") }
            guard !list.isEmpty, list.allSatisfy({ $0 >= 1 }) else { fail("--threads needs counts >= 1") }
            o.threads = list
        case "--runs": o.runs = max(1, int(value(), "--runs"))
        case "--warmup": o.warmup = int(value(), "--warmup")
        case "--inflight": o.inflight = int(value(), "--inflight")
        case "--seconds": o.seconds = Double(value()) ?? 3
        case "--gemm":
            o.gemm = value().split(separator: ",").map {
                guard let g = ModelOptions.GemmBackend(rawValue: String($0)) else { fail("--gemm \($0): expected automatic, kernels or openblas") }
                return g
            }
        case "--conv":
            o.conv = value().split(separator: ",").map {
                guard let c = ModelOptions.Convolution(rawValue: String($0)) else { fail("--conv \($0): expected winograd or im2col") }
                return c
            }
        case "--plan":
            o.plan = value()
            guard ["cached", "table", "measure"].contains(o.plan) else { fail("--plan \(o.plan): expected cached, table or measure") }
        case "--tune": o.plan = "tune"
        case "--precision":
            o.precision = value().split(separator: ",").map {
                guard let p = Precision(rawValue: String($0)) else { fail("--precision \($0): expected fp32, int8, bf16 or fp16") }
                return p
            }
        case "--int8-table": o.int8Table = value()
        case "--int8-fallback":
            let v = value()
            guard let f = Int8Fallback(rawValue: v) else { fail("--int8-fallback \(v): expected auto, fp16, bf16 or fp32") }
            o.int8Fallback = f
        case "--no-layers": o.layers = false
        case "--json": o.json = true
        case "--image": o.image = value()
        case "--cfg": o.cfg = value()
        case "--weights": o.weights = value()
        case "--input": o.input = value()
        case "-h", "--help": say(usage); exit(0)
        default: fail("unknown option '\(args[i])'")
        }
        i += 1
    }
    if o.int8Fallback != nil && !o.precision.contains(.int8) { fail("--int8-fallback is for --precision int8") }
    return o
}

func fail(_ message: String, code: Int32 = 64) -> Never {
    FileHandle.standardError.write("yolo-bench: \(message)\n".data(using: .utf8)!)
    if code == 64 { FileHandle.standardError.write("Run 'yolo-bench --help' for usage.\n".data(using: .utf8)!) }
    exit(code)
}
