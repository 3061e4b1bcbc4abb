// scripts/arm-check.sh, part 2: the whole engine (module YOLO, built with Embedded Swift for
// aarch64) runs yolov3-tiny on the dog input fixture and compares both raw heads with Darknet's
// sampled heads (Tests/YOLOTests/Fixtures/dog_conv15.samples, dog_conv22.samples, parsed and
// compared by YOLOReference's SampledTensor, as in the XCTest suites), for every convolution
// algorithm and each thread count given. Not part of the SwiftPM package.
//
// Usage: yolo-forward CFG WEIGHTS INPUT.f32 HEAD0.samples HEAD1.samples [gemm=NAME] [conv=NAME]... [int8=DIR] [level=NAME] THREADS...
// (gemm=automatic|kernels|openblas: ModelOptions.gemm, default automatic, which on aarch64 is the
// engine's own NEON kernels; conv=winograd|winograd2|im2col, repeatable: those algorithms only,
// default all of them; plan=measure: each convolution's algorithm measured at load, marked * in
// the plan printed, instead of the fixed table; int8=DIR: --precision int8 with the table next to the
// weights, whose heads must equal DIR/head0.f32 and DIR/head1.f32, written by `yolo heads
// --precision int8` on x86, bit for bit: the integer path is exact on every CPU; level=NAME: fails
// unless the engine's kernel level is NAME, e.g. dotprod, whose INT8 dot is sdot.) Each session's
// worker threads are counted (/proc/self/task), so a pool that silently fell back to running
// its parts in turn fails the check.
// Exit status 0 when every head of every run is within the tolerances, 1 otherwise.
import YOLOCore
@_spi(Kernels) import YOLOEngine
import YOLOKernels
import YOLOReference

/// Max abs difference of the sampled values (as the XCTest reference tests).
let maxAbsTolerance: Float = 1e-3
/// Max difference of a channel's sum, divided by the plane size (as the XCTest reference tests).
let channelMeanTolerance = 1e-4

/// A `.samples` fixture, read with the C library and parsed by YOLOReference.
func sampledTensor(_ path: String) throws(YOLOError) -> SampledTensor {
    let bytes = try readFile(path)
    do throws(FixtureFormatError) {
        return try SampledTensor(parsing: bytes)
    } catch {
        throw .invalidArgument("\(path): \(error.description)")
    }
}

func mib(_ bytes: Int) -> String {
    let tenths = (bytes * 10 + (1 << 19)) >> 20
    return "\(tenths / 10).\(tenths % 10)"
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
    let refs = [try sampledTensor(args[4]), try sampledTensor(args[5])]
    var threadCounts: [Int] = []
    var algorithms: [ModelOptions.Convolution] = []
    var gemm = ModelOptions.GemmBackend.automatic
    var planning = Planning.table
    var int8Heads: String? = nil
    for a in args[6...] {
        if a.hasPrefix("int8=") { int8Heads = String(a.dropFirst(5)); continue }
        if a.hasPrefix("level=") {
            let int8 = KernelLevel.selected.kernelSet?.int8
            print("engine: kernel level \(KernelLevel.selected.rawValue), INT8 dot product \(int8?.dot ?? "none") (\(int8?.mr ?? 0) x \(int8?.nr ?? 0) tiles)")
            guard KernelLevel.selected.rawValue == a.dropFirst(6) else {
                print("forward: FAILED: the kernel level is \(KernelLevel.selected.rawValue), not \(a.dropFirst(6))")
                return false
            }
            continue
        }
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
    if let int8Heads { return try int8(args, input: input, refs: refs, x86: int8Heads, threads: threadCounts) }
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
                let shape = "\(ref.channels)x\(ref.height)x\(ref.width)"
                guard raw.count == ref.count, heads[h].gridWidth == ref.width, heads[h].gridHeight == ref.height else {
                    throw .invalidArgument("head \(h): \(raw.count) values, Darknet's is \(shape)")
                }
                let (maxAbs, maxMean) = ref.compare(raw)
                let pass = maxAbs <= maxAbsTolerance && maxMean <= channelMeanTolerance
                ok = ok && pass
                worst = max(worst, maxAbs)
                line += "\n  head \(h) (\(shape)): max abs diff \(maxAbs), channel-mean diff \(maxMean)\(pass ? "" : "  FAIL")"
            }
            print(line)
        }
    }
    print(ok ? "forward: all heads within \(maxAbsTolerance) of Darknet (max abs diff \(worst))"
             : "forward: FAILED: a head differs from Darknet by more than \(maxAbsTolerance) (abs) or \(channelMeanTolerance) (channel mean)")
    return ok
}

/// INT8 (the calibration table next to the weights): heads bit for bit as x86's (`x86`: a
/// directory of head0.f32, head1.f32), and how far they are from Darknet's FP32 heads.
func int8(_ args: [String], input: [Float], refs: [SampledTensor], x86: String, threads: [Int]) throws(YOLOError) -> Bool {
    var options = ModelOptions(precision: .int8)
    options.int8AllowsFP16 = false      // FP32 for what is not INT8, as the x86 host's heads (--int8-fallback fp32)
    let model = try Model(cfgPath: args[1], weightsPath: args[2], options: options)
    let int8Steps = model.plan.entries.filter { $0.precision == .int8 }.count
    print("model int8: \(mib(model.parameterBytes)) MiB; \(int8Steps) INT8 steps; plan: " + model.plan.entries.map { $0.algorithm }.joined(separator: " "))
    var ok = int8Steps > 0
    for t in threads {
        let session = try Session(model: model, threads: t)
        try session.forward(input)
        for (h, head) in session.heads.enumerated() {
            let theirs = try readFloats(x86 + "/head\(h).f32")
            var differ = 0
            if theirs.count == head.raw.count {
                for i in 0..<theirs.count where theirs[i].bitPattern != head.raw[i].bitPattern { differ += 1 }
            } else {
                differ = -1
            }
            let (maxAbs, maxMean) = refs[h].compare(head.raw)
            ok = ok && differ == 0
            print("int8 forward, \(t) thread\(t == 1 ? "" : "s"), head \(h): \(differ == 0 ? "bit for bit as x86's" : "FAIL: \(differ) values differ from x86's (-1: sizes)"); vs Darknet's FP32 max abs diff \(maxAbs), channel-mean diff \(maxMean)")
        }
    }
    print(ok ? "int8: heads equal to x86's" : "int8: FAILED")
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
