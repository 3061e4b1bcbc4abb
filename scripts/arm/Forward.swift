// scripts/arm-check.sh, part 2: the whole engine (module YOLO, built with Embedded Swift for
// aarch64) runs yolov3-tiny on the dog input fixture and compares both raw heads with Darknet's
// sampled heads (Tests/YOLOTests/Fixtures/dog_conv15.samples, dog_conv22.samples), for every
// convolution algorithm and each thread count given. Not part of the SwiftPM package.
//
// Usage: yolo-forward CFG WEIGHTS INPUT.f32 HEAD0.samples HEAD1.samples [gemm=NAME] [conv=NAME]... THREADS...
// (gemm=automatic|kernels|openblas: ModelOptions.gemm, default automatic, which on aarch64 is the
// engine's own NEON kernels; conv=winograd|winograd2|im2col, repeatable: those algorithms only,
// default all of them; plan=measure: each convolution's algorithm measured at load, marked * in
// the plan printed, instead of the fixed table.) Each session's
// worker threads are counted (/proc/self/task), so a pool that silently fell back to running
// its parts in turn fails the check.
// Exit status 0 when every head of every run is within the tolerances, 1 otherwise.
import YOLOCore
import YOLOEngine

/// Max abs difference of the sampled values (as the XCTest reference tests).
let maxAbsTolerance: Float = 1e-3
/// Max difference of a channel's sum, divided by the plane size (as the XCTest reference tests).
let channelMeanTolerance = 1e-4

/// Darknet's head, sampled: "# ... C H W", then "index value" and "sum channel value" lines.
struct SampledTensor {
    var shape: (c: Int, h: Int, w: Int) = (0, 0, 0)
    var samples: [(index: Int, value: Float)] = []
    var channelSums: [Double] = []

    init(path: String) throws(YOLOError) {
        var bytes = try readFile(path)
        bytes.append(0)
        // Tokens of each line, parsed with the C library (strtod: correctly rounded).
        var lines: [[String]] = [[]]
        var token: [UInt8] = []
        for b in bytes {
            if b == 32 || b == 10 || b == 0 {
                if !token.isEmpty { lines[lines.count - 1].append(String(decoding: token, as: UTF8.self)); token = [] }
                if b == 10 { lines.append([]) }
            } else {
                token.append(b)
            }
        }
        for p in lines where !p.isEmpty {
            if p[0] == "#" {
                guard p.count >= 3 else { throw .invalidArgument("\(path): bad header") }
                let n = p.count
                shape = (Int(p[n - 3]) ?? 0, Int(p[n - 2]) ?? 0, Int(p[n - 1]) ?? 0)
            } else if p[0] == "sum" {
                guard p.count == 3 else { throw .invalidArgument("\(path): bad sum line") }
                channelSums.append(parseDouble(p[2]))
            } else {
                guard p.count == 2, let i = Int(p[0]) else { throw .invalidArgument("\(path): bad sample line") }
                samples.append((i, Float(parseDouble(p[1]))))
            }
        }
        guard shape.c > 0, channelSums.count == shape.c, !samples.isEmpty else {
            throw .invalidArgument("\(path): \(samples.count) samples, \(channelSums.count) channel sums for \(shape.c) channels")
        }
    }

    /// (max abs difference of the samples, max channel-sum difference / plane size).
    func compare(_ values: UnsafeBufferPointer<Float>) -> (maxAbs: Float, maxChannelMean: Double) {
        var maxAbs: Float = 0
        for (i, v) in samples {
            let d = values[i] - v
            maxAbs = max(maxAbs, d.isNaN ? .infinity : (d < 0 ? -d : d))
        }
        let plane = shape.h * shape.w
        var maxMean = 0.0
        for c in 0..<shape.c {
            var s = 0.0
            for i in 0..<plane { s += Double(values[c * plane + i]) }
            let d = (s - channelSums[c]) / Double(plane)
            maxMean = max(maxMean, d.isNaN ? .infinity : (d < 0 ? -d : d))
        }
        return (maxAbs, maxMean)
    }
}

func mib(_ bytes: Int) -> String {
    let tenths = (bytes * 10 + (1 << 19)) >> 20
    return "\(tenths / 10).\(tenths % 10)"
}

func parseDouble(_ s: String) -> Double {
    s.withCString { strtod($0, nil) }
}

func readFile(_ path: String) throws(YOLOError) -> [UInt8] {
    guard let f = fopen(path, "rb") else { throw .file(path: path, reason: "cannot open") }
    defer { fclose(f) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, 1 << 16, f) }
        if n == 0 { break }
        bytes.append(contentsOf: chunk[0..<n])
    }
    return bytes
}

func readFloats(_ path: String) throws(YOLOError) -> [Float] {
    let bytes = try readFile(path)
    guard bytes.count % 4 == 0 else { throw .file(path: path, reason: "size \(bytes.count) is not a multiple of 4") }
    var floats = [Float](repeating: 0, count: bytes.count / 4)
    floats.withUnsafeMutableBytes { dst in bytes.withUnsafeBytes { dst.copyMemory(from: $0) } }
    return floats
}

func name(_ c: ModelOptions.Convolution) -> String {
    switch c {
    case .winograd: return "winograd"
    case .winograd2: return "winograd2"
    case .im2col: return "im2col"
    }
}

func run(_ args: [String]) throws(YOLOError) -> Bool {
    guard args.count >= 7 else {
        throw .invalidArgument("usage: yolo-forward CFG WEIGHTS INPUT.f32 HEAD0.samples HEAD1.samples THREADS...")
    }
    let input = try readFloats(args[3])
    let refs = [try SampledTensor(path: args[4]), try SampledTensor(path: args[5])]
    var threadCounts: [Int] = []
    var algorithms: [ModelOptions.Convolution] = []
    var gemm = ModelOptions.GemmBackend.automatic
    var planning = Planning.table
    for a in args[6...] {
        if a == "plan=measure" { planning = .measure(cacheDirectory: nil); continue }
        if a.hasPrefix("conv=") {
            guard let c = ModelOptions.Convolution.allCases.first(where: { "conv=" + name($0) == a }) else {
                throw .invalidArgument("unknown \(a)")
            }
            algorithms.append(c)
            continue
        }
        if a.hasPrefix("gemm=") {
            guard let g = ModelOptions.GemmBackend.allCases.first(where: { "gemm=" + $0.rawValue == a }) else {
                throw .invalidArgument("unknown \(a)")
            }
            gemm = g
            continue
        }
        guard let t = Int(a), t > 0 else { throw .invalidArgument("bad thread count '\(a)'") }
        threadCounts.append(t)
    }
    if algorithms.isEmpty { algorithms = ModelOptions.Convolution.allCases }
    var ok = true
    var worst: Float = 0
    for algorithm in algorithms {
        let model = try Model(cfgPath: args[1], weightsPath: args[2],
                              options: ModelOptions(convolution: algorithm, gemm: gemm, planning: planning, tuningThreads: 1))
        if algorithm == algorithms.first {
            print("engine: \(BuildInfo.kernelTarget); GEMM \(gemm.rawValue) (our kernels' level: \(KernelLevel.selected.rawValue); OpenBLAS core: \(BuildInfo.blasCoreName)); \(model.parameterCount) weights")
        }
        print("model \(name(algorithm)), gemm \(gemm.rawValue): \(mib(model.parameterBytes)) MiB; plan: "
              + model.plan.entries.map { $0.algorithm + ($0.source == .measured ? "*" : "") }.joined(separator: " "))
        for threads in threadCounts {
            // Threads of the previous session are joined but may take a moment to leave /proc, and
            // qemu or OpenBLAS may run a thread of their own briefly: count when it is steady.
            let before = try steadyThreadCount()
            let session = try Session(model: model, threads: threads)
            let started = try steadyThreadCount() - before
            guard started == threads - 1 else {
                print("forward: FAILED: a session of \(threads) threads started \(started) worker threads, not \(threads - 1)")
                return false
            }
            let t0 = monotonicSeconds()
            try session.forward(input)
            let seconds = monotonicSeconds() - t0
            let heads = session.heads
            guard heads.count == refs.count else {
                throw .invalidArgument("\(heads.count) heads, Darknet has \(refs.count)")
            }
            var line = "forward \(name(algorithm)), gemm \(gemm.rawValue), \(threads) thread\(threads == 1 ? "" : "s") (\(started) worker thread\(started == 1 ? "" : "s") running; session \(mib(session.memoryBytes)) MiB; \(Int(seconds * 1000)) ms emulated):"
            for (h, ref) in refs.enumerated() {
                let raw = heads[h].raw
                guard raw.count == ref.shape.c * ref.shape.h * ref.shape.w,
                      heads[h].gridWidth == ref.shape.w, heads[h].gridHeight == ref.shape.h else {
                    throw .invalidArgument("head \(h): \(raw.count) values, Darknet's is \(ref.shape.c)x\(ref.shape.h)x\(ref.shape.w)")
                }
                let (maxAbs, maxMean) = ref.compare(raw)
                let pass = maxAbs <= maxAbsTolerance && maxMean <= channelMeanTolerance
                ok = ok && pass
                worst = max(worst, maxAbs)
                line += "\n  head \(h) (\(ref.shape.c)x\(ref.shape.h)x\(ref.shape.w)): max abs diff \(maxAbs), channel-mean diff \(maxMean)\(pass ? "" : "  FAIL")"
            }
            print(line)
        }
    }
    print(ok ? "forward: all heads within \(maxAbsTolerance) of Darknet (max abs diff \(worst))"
             : "forward: FAILED: a head differs from Darknet by more than \(maxAbsTolerance) (abs) or \(channelMeanTolerance) (channel mean)")
    return ok
}

/// Threads of this process (under qemu-user, each guest thread is a host thread of qemu's).
func threadCount() throws(YOLOError) -> Int {
    guard let dir = opendir("/proc/self/task") else { throw .file(path: "/proc/self/task", reason: "cannot open") }
    defer { closedir(dir) }
    var n = 0
    while let entry = readdir(dir) {
        let first = withUnsafeBytes(of: entry.pointee.d_name) { $0[0] }
        if first != UInt8(ascii: ".") { n += 1 }
    }
    return n
}

/// The thread count once it has not changed for 20 readings 1 ms apart (at most about 5 s).
func steadyThreadCount() throws(YOLOError) -> Int {
    var last = try threadCount(), same = 0
    for _ in 0..<5000 where same < 20 {
        usleep(1000)
        let n = try threadCount()
        if n == last { same += 1 } else { last = n; same = 0 }
    }
    return last
}

func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

@_cdecl("main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    var args: [String] = []
    for i in 0..<Int(argc) { args.append(String(cString: argv[i]!)) }
    do {
        return try run(args) ? 0 : 1
    } catch {
        print("yolo-forward: error: \(error.description)")
        return 2
    }
}
