import Foundation
import YOLO
import YOLOText
import YOLOImage

// yolo-bench: latency, per-layer profile, throughput, memory and start-up time of the engine.
let mainStart = nowSeconds()

if CommandLine.arguments.dropFirst().first == "gemm" {  // yolo-bench gemm: GemmBench.swift
    GemmBench.run(Array(CommandLine.arguments.dropFirst(2)))
    exit(0)
}
if CommandLine.arguments.dropFirst().first == "peak" {  // yolo-bench peak: Peak.swift
    PeakBench.run(Array(CommandLine.arguments.dropFirst(2)))
}
if CommandLine.arguments.dropFirst().first == "uneven" {  // yolo-bench uneven: Uneven.swift
    UnevenBench.run(Array(CommandLine.arguments.dropFirst(2)))
    exit(0)
}
let options = parse(Array(CommandLine.arguments.dropFirst()))
let peaks = PeakRates()

/// The report for people: stdout, or with --json stderr (stdout then holds the JSON alone).
func say(_ text: String) {
    // stdout carries the JSON (--json) or serve's line protocol: then the text goes to stderr.
    if options.json || options.serve { FileHandle.standardError.write(Data((text + "\n").utf8)) } else { print(text) }
}

/// Warnings for the JSON's `warnings`, also said as they come.
var warnings: [String] = []
@MainActor func warn(_ text: String) {
    warnings.append(text)
    say("warning: " + text)
}

/// The most cores' worth of CPU other processes used during any one measurement.
var otherCoresMax = 0.0
/// Runs `body`, measuring what other processes used meanwhile; warns when the machine was busy.
@MainActor func measuringLoad<T>(_ what: String, _ body: () throws -> T) rethrows -> (T, otherCores: Double) {
    let before = LoadSample.now()
    let result = try body()
    guard let before, let after = LoadSample.now() else { return (result, 0) }
    let other = before.otherCores(until: after)
    otherCoresMax = max(otherCoresMax, other)
    if other > LoadSample.quietLimit {
        warn("\(what): other processes used \(fmt(other, 2)) of a core meanwhile: the machine is not quiet, so these times are slower than a quiet machine's and the best configuration may differ")
    }
    return (result, other)
}

func loadInput(_ path: String, count: Int) -> [Float] {
    guard let data = FileManager.default.contents(atPath: path) else { fail("\(path): cannot read", code: 1) }
    guard data.count == count * 4 else { fail("\(path): \(data.count) bytes, expected \(count * 4)", code: 1) }
    return data.withUnsafeBytes { raw in
        (0..<count).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self))) }
    }
}

/// The planning `--plan` asks for, measured for sessions of `threads` threads.
@MainActor func modelOptions(_ conv: ModelOptions.Convolution, _ gemm: ModelOptions.GemmBackend, _ precision: Precision,
                             threads: Int) throws -> ModelOptions {
    let directory = PlanCache.defaultDirectory
    let planning: Planning
    switch options.plan {
    case "table": planning = .table
    case "measure": planning = .measure(cacheDirectory: directory)
    case "tune": planning = .remeasure(cacheDirectory: directory)
    default: planning = directory.map { .cached(cacheDirectory: $0) } ?? .table
    }
    var o = ModelOptions(convolution: conv, gemm: gemm, planning: planning, tuningThreads: threads, precision: precision,
                         calibration: try options.int8Table.map { try Int8Calibration(path: $0) })
    o.int8Fallback = options.int8Fallback ?? o.int8Fallback
    return o
}

/// A model per (algorithms, GEMM, precision, threads): plans are made for a thread count.
var models: [String: Model] = [:]
@MainActor func loadModel(_ conv: ModelOptions.Convolution, _ gemm: ModelOptions.GemmBackend, _ precision: Precision,
                          threads: Int) throws -> Model {
    let key = "\(conv) \(gemm) \(precision) \(options.plan == "table" ? 0 : threads)"
    if let m = models[key] { return m }
    let m = try Model(cfgPath: options.cfg, weightsPath: options.weights,
                      options: try modelOptions(conv, gemm, precision, threads: threads))
    models[key] = m
    let sources = Set(m.plan.entries.compactMap { $0.source?.rawValue }).sorted().joined(separator: ", ")
    say("plan (\(conv.rawValue), \(m.gemmKernels), \(precision), \(threads) thread\(threads == 1 ? "" : "s")): \(sources)"
        + (m.plan.tuningSeconds > 0 ? "; measured in \(fmt(m.plan.tuningSeconds, 2)) s" : "")
        + (m.plan.cacheFile.map { "; cache \($0)" } ?? ""))
    if options.plan == "tune" { say(m.plan.description) }
    for w in m.plan.warnings { warn(w) }
    return m
}

let runStart = LoadSample.now()
do {
    if options.serve {
        let model = try loadModel(options.conv[0], options.gemm[0], options.precision[0], threads: options.threads[0])
        let session = try Session(model: model, threads: options.threads[0])
        guard let input = options.input else { fail("serve needs --input F.f32") }
        try Serve.run(session: session, input: loadInput(input, count: session.input.count))
        exit(0)
    }

    // 1. Start-up: load the network and a photo, detect. This is what a CLI user waits for.
    let detector = try Detector(model: loadModel(options.conv[0], options.gemm[0], options.precision[0],
                                                  threads: options.threads.last!),
                                threads: options.threads.last!)
    var photo: RGBImage
    var photoName = options.image
    if FileManager.default.fileExists(atPath: options.image) {
        photo = try loadImage(path: options.image)
    } else {
        photoName = "synthetic 640x480"
        photo = RGBImage(width: 640, height: 480, pixels: (0..<640 * 480 * 3).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 13) })
    }
    let firstDetections = try detector.detect(rgb: photo.pixels, width: photo.width, height: photo.height)
    let firstSinceMain = (nowSeconds() - mainStart) * 1000
    let firstSinceStart = Machine.millisecondsSinceProcessStart
    let model = detector.model
    let input = Array(detector.session.input)

    let letterBox = model.letterBox.map { "cfg letter_box=\($0 ? 1 : 0)" } ?? "no letter_box in the cfg"
    say("yolo-bench: \(options.cfg) at \(model.inputWidth)x\(model.inputHeight), \(fmt(Double(model.flops) / 1e9, 3)) GFLOP per forward, \(model.defaultResize.rawValue) (\(letterBox))")
    say("machine:    \(Machine.cpuModel), \(Machine.cores) cores\(MachineCores.current().summary.map { " (\($0))" } ?? ""); CPU vector extensions: \(Machine.cpuVectorFeatures)")
    say("kernels:    GEMMs by \(model.gemmKernels == "OpenBLAS" ? "OpenBLAS" : "our \(model.gemmKernels) kernels") (levels this CPU runs: \(KernelLevel.supported.map { $0.rawValue }.joined(separator: ", "))\(KernelLevel.unavailableSummary.isEmpty ? "" : "; not offered: " + KernelLevel.unavailableSummary); YOLO_KERNEL_LEVEL=\(ProcessInfo.processInfo.environment["YOLO_KERNEL_LEVEL"] ?? "(unset)")); other Swift kernels: \(BuildInfo.kernelTarget)")
    say("OpenBLAS:   core \(BuildInfo.blasCoreName); OPENBLAS_CORETYPE=\(ProcessInfo.processInfo.environment["OPENBLAS_CORETYPE"] ?? "(unset)"); \(BuildInfo.blasConfig)")
    let startText = firstSinceStart.map { "\(fmt($0, 0)) ms from process start, " } ?? ""
    say("start-up:   first detection \(startText)\(fmt(firstSinceMain, 1)) ms from main() (\(photoName): \(firstDetections.count) detections)")

    // 2. Memory: sessions of one model add only their activations and scratch. RSS after
    //    1 (the detector's), 2 and 4 sessions, each having run a forward.
    var rssBySessions: [String: Double] = ["1": Machine.rssMiB]
    var peakBySessions: [String: Double] = ["1": Machine.peakRSSMiB]
    do {
        var extra: [Session] = []
        for count in [2, 4] {
            while extra.count + 1 < count {
                let s = try Session(model: model, threads: 1)
                try s.forward(input)
                extra.append(s)
            }
            rssBySessions["\(count)"] = Machine.rssMiB
            peakBySessions["\(count)"] = Machine.peakRSSMiB
        }
    }
    let perSession = (rssBySessions["4"]! - rssBySessions["1"]!) / 3
    say("memory:     RSS \(["1", "2", "4"].map { "\(fmt(rssBySessions[$0]!, 1)) MiB with \($0) session\($0 == "1" ? "" : "s")" }.joined(separator: ", ")) of one model (+\(fmt(perSession, 1)) MiB per session; parameters \(fmt(Double(model.parameterBytes) / 1048576, 1)) MiB, one 1-thread session allocates \(fmt(Double(model.sessionBytes(threads: 1)) / 1048576, 1)) MiB)")
    say("")

    // 3. Latency per thread count, and the per-layer profile.
    var results: [[String: Any]] = []
    for conv in options.conv { for gemm in options.gemm {
      for threads in options.threads { for precision in options.precision {
        let convModel = try loadModel(conv, gemm, precision, threads: threads)
        let network = try Session(model: convModel, threads: threads)
        try network.forward(input)
        for _ in 0..<options.warmup { network.forward() }
        let label = "\(conv.rawValue), \(convModel.gemmKernels)\(precision == .fp32 && options.precision.count == 1 ? "" : ", \(precision)")"
        let (times, otherCores) = measuringLoad("\(label), threads \(threads)") { () -> [Double] in
            (0..<options.runs).map { _ in
                let t0 = nowSeconds()
                network.forward()
                return (nowSeconds() - t0) * 1000
            }
        }
        let s = Stats(times)
        var entry: [String: Any] = ["threads": threads, "precision": precision.rawValue, "convolution": conv.rawValue, "gemm_kernels": convModel.gemmKernels, "runs": options.runs, "min_ms": s.min, "median_ms": s.median,
                                    "max_ms": s.max, "mean_ms": s.mean, "iqr_over_median": s.spread, "other_cores": otherCores]
        if s.spread > 0.1 {
            warn("\(label), threads \(threads): the runs spread widely (interquartile range \(fmt(100 * s.spread, 0))% of the median): other processes were busy; repeat before trusting small differences")
        }
        say("\(label), threads \(threads): forward min \(fmt(s.min)) ms, median \(fmt(s.median)) ms, max \(fmt(s.max)) ms over \(options.runs) runs (\(options.warmup) warm-up); \(fmt(1000 / s.median, 1)) fps")

        if options.layers {
            // The plan's steps (a fused step computes several layers), median over profiled runs.
            let layers = convModel.layers
            var perStep: [[Double]] = [], perGemm: [[Double]] = []
            var totals: [Double] = [], gemmTotals: [Double] = []
            var steps: [(layers: ClosedRange<Int>, algorithm: String)] = []
            for _ in 0..<max(5, options.runs / 2) {
                let p = network.forwardProfiled()
                steps = p.steps
                if perStep.isEmpty { perStep = p.steps.map { _ in [] }; perGemm = perStep }
                for i in perStep.indices {
                    perStep[i].append(Double(p.stepNanoseconds[i]) / 1e6)
                    perGemm[i].append(Double(p.gemmNanoseconds[i]) / 1e6)
                }
                totals.append(Double(p.stepNanoseconds.reduce(0, +)) / 1e6)
                gemmTotals.append(Double(p.gemmNanoseconds.reduce(0, +)) / 1e6)
            }
            let medians = perStep.map { Stats($0).median }
            let gemmMedians = perGemm.map { Stats($0).median }
            let total = medians.reduce(0, +)
            // A step's rate as a share of its precision's peak on `threads` cores (Peak.swift).
            func peakShare(_ layers: ClosedRange<Int>, gflop: Double, ms: Double) -> String {
                guard gflop > 0, ms > 0, let precision = convModel.plan.entries.first(where: { $0.layers == layers })?.precision,
                      let level = KernelLevel(rawValue: convModel.gemmKernels),
                      let peak = peaks.rate(precision, level: level) else { return "" }
                return fmt(100 * gflop / ms * 1000 / (peak * Double(threads)), 0) + "%"
            }
            say("  \(pad("layers", 20)) \(pad("algorithm", 17)) \(pad("input", 13)) \(pad("output", 13)) \(lpad("GFLOP", 6)) \(lpad("ms", 7)) \(lpad("gemm", 8)) \(lpad("GFLOP/s", 8)) \(lpad("peak", 5)) \(lpad("share", 6))")
            for (i, step) in steps.enumerated() {
                let first = layers[step.layers.lowerBound], last = layers[step.layers.upperBound]
                let gflop = Double(step.layers.map { layers[$0].flops }.reduce(0, +)) / 1e9
                let rate = medians[i] > 0 && gflop > 0 ? fmt(gflop / medians[i] * 1000, 1) : ""
                let names = step.layers.map { j -> String in
                    let l = layers[j]
                    return "\(j) \(l.kind.rawValue.prefix(7))" + (l.size > 0 ? " \(l.size)x\(l.size)/\(l.stride)" : "")
                }.joined(separator: " + ")
                say("  \(pad(names, 20)) \(pad(step.algorithm, 17)) \(pad(first.input.description, 13)) \(pad(last.output.description, 13)) \(lpad(gflop > 0 ? fmt(gflop, 3) : "", 6)) \(lpad(fmt(medians[i], 3), 7)) \(lpad(gemmMedians[i] > 0 ? fmt(gemmMedians[i], 3) : "", 8)) \(lpad(rate, 8)) \(lpad(peakShare(step.layers, gflop: gflop, ms: medians[i]), 5)) \(lpad(fmt(100 * medians[i] / max(total, 1e-9), 1) + "%", 6))")
            }
            let forward = Stats(totals).median, gemmInForward = Stats(gemmTotals).median
            say("  profiled forward median \(fmt(forward)) ms (GEMMs inside it, thread 0: \(fmt(gemmInForward)) ms)")
            entry["profiled_forward_ms"] = forward
            entry["gemm_in_forward_ms"] = gemmInForward
        }
        results.append(entry)
        say("")
      } }
    } }
    let peakSingle = Machine.peakRSSMiB

    // 4. Throughput: several frames in flight, one-thread sessions sharing one model.
    var throughput: Double? = nil
    if options.inflight > 0 {
        let sessions = try model.makeSessions(options.inflight, threads: 1)
        for session in sessions { try session.forward(input) }
        let counts = UnsafeMutablePointer<Int>.allocate(capacity: sessions.count)
        counts.initialize(repeating: 0, count: sessions.count)
        let deadline = nowSeconds() + options.seconds
        let t0 = nowSeconds()
        nonisolated(unsafe) let shared = (sessions, counts)
        _ = measuringLoad("throughput") {
            DispatchQueue.concurrentPerform(iterations: sessions.count) { k in
                while nowSeconds() < deadline { shared.0[k].forward(); shared.1[k] += 1 }
            }
        }
        let elapsed = nowSeconds() - t0
        let frames = (0..<sessions.count).reduce(0) { $0 + counts[$1] }
        counts.deallocate()
        throughput = Double(frames) / elapsed
        say("throughput: \(fmt(throughput!, 1)) fps with \(sessions.count) frames in flight (\(model.options.convolution.rawValue); one 1-thread session each, sharing one model), \(frames) frames in \(fmt(elapsed, 1)) s")
    }
    say("memory:     peak RSS \(fmt(peakSingle, 1)) MiB before the throughput test; \(fmt(Machine.peakRSSMiB, 1)) MiB at the end")

    let best = results.min { ($0["median_ms"] as! Double) < ($1["median_ms"] as! Double) }!
    say("best:       \(best["convolution"]!), \(best["gemm_kernels"]!), \(best["threads"]!) thread(s): median \(fmt(best["median_ms"] as! Double)) ms per frame (latency)" + (throughput.map { "; \(fmt($0, 1)) fps with \(options.inflight) one-thread sessions in flight (throughput)" } ?? ""))
    let quiet = otherCoresMax <= LoadSample.quietLimit
    if !quiet {
        warn("the machine was not quiet (other processes used up to \(fmt(otherCoresMax, 2)) of a core during a measurement): measure again on a quiet machine before comparing these times or trusting the best configuration")
    }
    if options.json {
        var summary: [String: Any] = best
        summary["machine_quiet"] = quiet
        summary["other_cores_max"] = otherCoresMax
        if let start = runStart, let end = LoadSample.now() { summary["other_cores_whole_run"] = start.otherCores(until: end) }
        summary["quiet_limit_cores"] = LoadSample.quietLimit
        summary["warnings"] = warnings
        summary["latency_fps"] = 1000 / (best["median_ms"] as! Double)
        if let throughput { summary["throughput_fps"] = throughput; summary["throughput_sessions"] = options.inflight }
        summary["rss_mib_by_sessions"] = rssBySessions
        summary["peak_rss_mib_by_sessions"] = peakBySessions
        summary["rss_mib_per_extra_session"] = perSession
        summary["parameter_mib"] = Double(model.parameterBytes) / 1048576
        summary["results"] = results
        summary["peak_rss_mib"] = peakSingle
        summary["first_detection_ms_since_main"] = firstSinceMain
        if let s = firstSinceStart { summary["first_detection_ms_since_process_start"] = s }
        summary["cpu"] = Machine.cpuModel
        summary["cores"] = Machine.cores
        summary["blas_core"] = BuildInfo.blasCoreName
        summary["openblas_coretype"] = ProcessInfo.processInfo.environment["OPENBLAS_CORETYPE"] ?? ""
        summary["kernels"] = BuildInfo.kernelTarget
        summary["gemm_kernels"] = model.gemmKernels
        summary["gflop"] = Double(model.flops) / 1e9
        let data = try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys])
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
} catch let error as YOLOError {
    // A default file that is not there: say where defaults come from, as yolo's usage does.
    if case .file(let path, _) = error, options.cfg == DefaultModelFiles.cfg || options.weights == DefaultModelFiles.weights,
       [DefaultModelFiles.cfg, DefaultModelFiles.weights].contains(path) {
        fail("\(error)\n\(DefaultModelFiles.hint)", code: 1)
    }
    fail("\(error)", code: 1)
} catch {
    fail("\(error)", code: 1)
}
