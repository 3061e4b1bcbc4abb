import Foundation
import COpenBLAS
@_spi(Kernels) import YOLO
import YOLOKernels

/// `yolo-bench gemm`: GFLOP/s of each GEMM kernel level this CPU can run (and of the BF16 GEMM
/// where it runs) vs single-threaded OpenBLAS (cblas_sgemm), on one thread, on yolov3-tiny's GEMM
/// shapes.
enum GemmBench {
    static let usage = """
    usage: yolo-bench gemm [--runs N] [--levels LIST] [--shapes LIST] [--min-ms T] [--best] [--int8]

    Times C = A·B (row-major, A packed once, B packed per call) for each kernel level this CPU
    can run and for cblas_sgemm with one OpenBLAS thread, on yolov3-tiny's GEMM shapes (m x n x k).
    Prints the median GFLOP/s of N samples, each at least T ms of repeated calls.

      --runs N       samples per level and shape (default: 7)
      --levels LIST  comma-separated, from openblas, the levels, avx512bf16 (the BF16 GEMM), dotprod-fp16 and
                     avx512fp16 (the FP16 GEMMs) and <level>-fp16-weights (a level's GEMM on FP16-stored weights)
                     (default: openblas + all this CPU runs)
      --min-ms T     minimum duration of one sample (default: 30)
      --shapes LIST  comma-separated shape names from the table below (default: all)
      --best         the fastest sample instead of the median (on a busy shared machine)
      --int8         each level's INT8 GEMMs against its own FP32 GEMM instead (GemmBenchInt8.swift):
                     conv* shapes the u8 x s8 GEMM, wino* shapes the 16-bit pair GEMM of INT8
                     Winograd (k = channels); --levels then names kernel levels only
    """

    /// yolov3-tiny's GEMMs at 416x416 (layer: m x n x k): im2col + GEMM (all 3x3 convs with
    /// --conv im2col; conv0 and conv2 always) and the 1x1 convs, then Winograd's products.
    static let shapes: [(name: String, m: Int, n: Int, k: Int)] = [
        ("conv0", 16, 173056, 27), ("conv2", 32, 43264, 144), ("conv4", 64, 10816, 288),
        ("conv6", 128, 2704, 576), ("conv8", 256, 676, 1152), ("conv10", 512, 169, 2304),
        ("conv12", 1024, 169, 4608), ("conv13", 256, 169, 1024), ("conv14", 512, 169, 2304),
        ("conv15", 255, 169, 512), ("conv18", 128, 169, 256), ("conv21", 256, 676, 384),
        ("conv22", 255, 676, 256),
        // One of the 16 Winograd products (filters x channels · channels x tiles) of the 3x3
        // convs with >= 32 input channels.
        ("wino4", 64, 2704, 32), ("wino6", 128, 676, 64), ("wino8", 256, 169, 128),
        ("wino10", 512, 49, 256), ("wino12", 1024, 49, 512), ("wino14", 512, 49, 256), ("wino21", 256, 169, 384),
    ]

    static func run(_ args: [String]) {
        var runs = 7, minSeconds = 0.03, best = false, int8 = false, levelsGiven = false
        var shapes = Self.shapes
        // The 16-bit GEMMs this CPU runs (BF16, FP16, FP16 weights), named by their level
        // ("avx512bf16", "dotprod-fp16", "avx512fp16", "avx2-fp16-weights").
        // Once each: the amx level shares avx512vnni's FP16 GEMMs.
        let half = KernelLevel.supported.flatMap {
            [$0.bf16Kernels?.gemm, $0.fp16Kernels?.gemm, $0.fp16WeightsKernels?.gemm].compactMap { $0 }
        }.reduce(into: [GemmFunctions]()) { list, k in if !list.contains(where: { $0.level == k.level }) { list.append(k) } }
        var levels = ["openblas"] + KernelLevel.supported.map(\.rawValue) + half.map(\.level)
        var i = 0
        while i < args.count {
            let value = i + 1 < args.count ? args[i + 1] : ""
            switch args[i] {
            case "--runs": runs = max(1, Int(value) ?? runs); i += 1
            case "--min-ms": minSeconds = (Double(value) ?? 30) / 1000; i += 1
            case "--levels": levels = value.split(separator: ",").map(String.init); levelsGiven = true; i += 1
            case "--shapes":
                let names = value.split(separator: ",").map(String.init)
                for name in names where !Self.shapes.contains(where: { $0.name == name }) {
                    fail("gemm: --shapes: no shape '\(name)' (the shapes: \(Self.shapes.map(\.name).joined(separator: ", ")))")
                }
                shapes = Self.shapes.filter { names.contains($0.name) }
                i += 1
            case "--best": best = true
            case "--int8": int8 = true
            case "-h", "--help": print(usage); return
            default: fail("gemm: unknown option '\(args[i])'")
            }
            i += 1
        }
        if int8 {
            var chosen = KernelLevel.supported
            if levelsGiven {
                chosen = levels.map { name in
                    guard let level = KernelLevel(rawValue: name) else { fail("gemm --int8: \(name) is not a kernel level") }
                    guard KernelLevel.supported.contains(level) else { fail("gemm --int8: this CPU cannot run \(name)", code: 1) }
                    return level
                }
            }
            GemmBenchInt8.run(levels: chosen, shapes: shapes, runs: runs, minSeconds: minSeconds, best: best)
            return
        }
        var kernels: [String: GemmFunctions] = [:]
        for name in levels where name != "openblas" {
            if let k = half.first(where: { $0.level == name }) { kernels[name] = k; continue }
            guard let level = KernelLevel(rawValue: name) else { fail("gemm: \(name) is not a kernel level") }
            guard let k = level.kernelSet?.gemm else { fail("gemm: this CPU cannot run \(name)", code: 1) }
            kernels[name] = k
        }
        let blas = yolo_openblas_load()  // one thread
        if levels.contains("openblas"), let error = blas.error {
            fail("gemm: OpenBLAS cannot be loaded (\(String(cString: error)))", code: 1)
        }
        print("yolo-bench gemm: \(Machine.cpuModel); one thread; \(best ? "best" : "median") of \(runs) samples (>= \(fmt(minSeconds * 1000, 0)) ms each, round-robin over the levels), GFLOP/s")
        print("levels this CPU runs: \(KernelLevel.supported.map(\.rawValue).joined(separator: ", ")); selected: \(KernelLevel.selected.rawValue)")
        print("OpenBLAS: core \(BuildInfo.blasCoreName); OPENBLAS_CORETYPE=\(ProcessInfo.processInfo.environment["OPENBLAS_CORETYPE"] ?? "(unset)")")
        for (name, k) in kernels.sorted(by: { $0.key < $1.key }) { print("  \(name): \(k.mr) x \(k.nr) register tile") }
        // Columns as wide as their names (with two spaces before), at least 10 (rates), 16 (ratios).
        let width = Dictionary(uniqueKeysWithValues: levels.map { ($0, max(10, $0.count + 2)) })
        let ratioWidth = Dictionary(uniqueKeysWithValues: levels.map { ($0, max(16, $0.count + 8)) })
        let header = pad("shape", 8) + pad("m x n x k", 20) + levels.map { lpad($0, width[$0]!) }.joined()
            + (levels.contains("openblas") ? levels.filter { $0 != "openblas" }.map { lpad("\($0)/oblas", ratioWidth[$0]!) }.joined() : "")
        print(header)
        var totals = [String: (flop: Double, seconds: Double)]()
        for s in shapes {
            let (m, n, k) = (s.m, s.n, s.k)
            let flop = 2.0 * Double(m) * Double(n) * Double(k)
            var a = [Float](repeating: 0, count: m * k), b = [Float](repeating: 0, count: k * n)
            var c = [Float](repeating: 0, count: m * n)
            for j in a.indices { a[j] = Float(j % 17) * 0.01 - 0.08 }
            for j in b.indices { b[j] = Float(j % 13) * 0.02 - 0.12 }
            var row = pad(s.name, 8) + pad("\(m)x\(n)x\(k)", 20)
            // Samples are taken round-robin over the levels, so that other processes' load (the
            // machine may be shared) falls on all levels alike.
            func makeCall(_ name: String) -> () -> Void {
                if let kern = kernels[name] {
                    let packed = UnsafeMutablePointer<Float>.allocate(capacity: kern.packedASize(m: m, k: k))
                    let scratch = UnsafeMutablePointer<Float>.allocate(capacity: kern.scratchSize(m: m, n: n, k: k))
                    buffers += [packed, scratch]
                    a.withUnsafeBufferPointer { kern.packA($0.baseAddress!, lda: k, m: m, k: k, into: packed) }
                    return {
                        b.withUnsafeBufferPointer { pb in c.withUnsafeMutableBufferPointer { pc in
                            kern.gemm(m: m, n: n, k: k, packedA: packed, b: pb.baseAddress!, ldb: n,
                                      c: pc.baseAddress!, ldc: n, scratch: scratch)
                        } }
                    }
                }
                return {
                    a.withUnsafeBufferPointer { pa in b.withUnsafeBufferPointer { pb in c.withUnsafeMutableBufferPointer { pc in
                        blas.sgemm!(Int32(YOLO_CBLAS_ROW_MAJOR), Int32(YOLO_CBLAS_NO_TRANS),
                                    Int32(YOLO_CBLAS_NO_TRANS), Int32(m), Int32(n), Int32(k), 1,
                                    pa.baseAddress!, Int32(k), pb.baseAddress!, Int32(n), 0, pc.baseAddress!, Int32(n))
                    } } }
                }
            }
            var buffers = [UnsafeMutablePointer<Float>]()
            defer { buffers.forEach { $0.deallocate() } }
            let seconds = sample(levels.map(makeCall), runs: runs, minSeconds: minSeconds, best: best)
            var results = [String: Double]()
            for (l, name) in levels.enumerated() {
                let median = seconds[l]
                results[name] = flop / median / 1e9
                totals[name, default: (0, 0)].flop += flop
                totals[name, default: (0, 0)].seconds += median
                row += lpad(fmt(flop / median / 1e9, 1), width[name]!)
            }
            if let o = results["openblas"] {
                for name in levels where name != "openblas" { row += lpad(fmt(results[name]! / o, 2) + "x", ratioWidth[name]!) }
            }
            print(row)
        }
        var total = pad("all", 28) + levels.map { lpad(fmt(totals[$0]!.flop / totals[$0]!.seconds / 1e9, 1), width[$0]!) }.joined()
        if let o = totals["openblas"] {
            for name in levels where name != "openblas" { total += lpad(fmt(o.seconds / totals[name]!.seconds, 2) + "x", ratioWidth[name]!) }
        }
        print(total + "   (time-weighted over all shapes)")
    }

    /// Seconds per call of each of `calls`: after a warm-up call, each is repeated for at least
    /// `minSeconds` per sample; samples are taken round-robin over the calls, so that other
    /// processes' load (the machine may be shared) falls on all alike; the median (or the
    /// fastest, `best`) of `runs` samples.
    static func sample(_ calls: [() -> Void], runs: Int, minSeconds: Double, best: Bool) -> [Double] {
        var timed = [(call: () -> Void, reps: Int)]()
        for call in calls {
            call()  // warm-up
            let t0 = nowSeconds(); call(); let once = max(1e-6, nowSeconds() - t0)
            timed.append((call, max(1, Int(minSeconds / once))))
        }
        var samples = [[Double]](repeating: [], count: calls.count)
        for _ in 0..<runs {
            for (l, entry) in timed.enumerated() {
                let start = nowSeconds()
                for _ in 0..<entry.reps { entry.call() }
                samples[l].append((nowSeconds() - start) / Double(entry.reps))
            }
        }
        return samples.map { best ? $0.min()! : $0.sorted()[runs / 2] }
    }
}
