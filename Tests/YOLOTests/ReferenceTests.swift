import Foundation
import XCTest
@testable import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore
import YOLOReference

/// The whole network against the original Darknet's outputs (compact fixtures derived from
/// ../shared/reference by scripts/make-fixtures.py), and sessions sharing one model.
final class ReferenceTests: XCTestCase {
    /// Models are immutable and Sendable: one per option set, shared by every test.
    nonisolated(unsafe) static var models: [String: Model] = [:]

    func officialModel(_ options: ModelOptions = ModelOptions()) throws -> Model {
        let key = "\(options.convolution) \(options.fusesLayers)"
        if let m = Self.models[key] { return m }
        let (cfg, weights) = try officialPaths()
        let m = try Model(cfgPath: cfg, weightsPath: weights, options: options)
        Self.models[key] = m
        return m
    }

    func testStructureOfYOLOv3Tiny() throws {
        let net = try Network(model: officialModel(), threads: 1)
        XCTAssertEqual(net.layers.count, 24)
        XCTAssertEqual(net.layers[11].kind, .maxpool)
        XCTAssertEqual(net.layers[11].output, Shape(c: 512, h: 13, w: 13), "maxpool size=2 stride=1 keeps 13x13")
        XCTAssertEqual(net.layers[20].output, Shape(c: 384, h: 26, w: 26), "route -1,8 concatenates 128 + 256 channels")
        XCTAssertEqual(net.layers[20].sources, [19, 8])
        XCTAssertEqual(net.heads.map(\.gridWidth), [13, 26])
        XCTAssertEqual(net.heads[0].mask, [3, 4, 5])
        XCTAssertEqual(net.heads[0].anchors.map(\.width), [81, 135, 344])
        XCTAssertEqual(net.heads[1].anchors.map(\.height), [14, 27, 58])
        XCTAssertEqual(net.flops, 5_564_961_792, "sum of 2*k*k*c*n*oh*ow over the 13 conv layers of dog_layers_index.txt")
        XCTAssertEqual(net.model.parameterCount, 8_858_734, "the official file: 20-byte header + 4 bytes per parameter")
    }

    func testEveryLayerMatchesDarknetOnDog() throws {
        let net = try Network(model: officialModel(ModelOptions(fusesLayers: false)), threads: 2)
        try net.forward(readGzipFloats(fixturePath("dog_input_416.f32.gz")))
        for i in 0..<24 {
            let ref = try sampledTensor(String(format: "dog_layer%02d.samples", i))
            XCTAssertEqual(net.layers[i].output, ref.shape, "layer \(i) shape")
            let (maxAbs, sumDiff) = ref.compare(net.output(ofLayer: i))
            XCTAssertLessThanOrEqual(maxAbs, 1e-3, "layer \(i): max abs difference from Darknet")
            XCTAssertLessThanOrEqual(sumDiff, 1e-4, "layer \(i): per-channel mean difference from Darknet")
            print("dog layer \(i) \(net.layers[i].kind): max abs diff \(maxAbs), channel-mean diff \(sumDiff)")
        }
    }

    /// Every convolution algorithm at every GEMM path this CPU runs (OpenBLAS, our kernels at
    /// each level).
    func testHeadsMatchDarknet() throws {
        let backends: [(ModelOptions.GemmBackend, KernelLevel?)] = [(.openBLAS, nil)] + KernelLevel.supported.map { (.kernels, $0) }
        // Under a sanitizer (scripts/sanitize.sh) or emulation (qemu: scripts/arm-linux-check.sh),
        // every level with the default algorithm and every algorithm with the default level: the
        // same code, a third of the time. Under qemu, the default algorithm at the selected level
        // on one photo (scripts/arm-check.sh checks every algorithm's heads at each arm64 level).
        let environment = ProcessInfo.processInfo.environment
        let emulated = environment["YOLO_TEST_EMULATED"] != nil
        let reduced = emulated || environment["YOLO_TEST_SANITIZER"] != nil
        for algorithm in ModelOptions.Convolution.allCases where !emulated || algorithm == .winograd {
          for (gemm, level) in backends
              where (!reduced || algorithm == .winograd || level == nil || level == KernelLevel.selected)
                  && (!emulated || level == KernelLevel.selected) {
            // A session that reuses buffers (the default), as the detector runs it.
            let options = ModelOptions(convolution: algorithm, gemm: gemm, kernelLevel: level)
            let (cfg, weights) = try officialPaths()
            let session = try Session(model: Model(cfgPath: cfg, weightsPath: weights, options: options), threads: 2)
            let label = "\(algorithm), \(session.model.gemmKernels)"
            XCTAssertFalse(session.keepsAllOutputs)
            for name in emulated ? ["dog"] : ["dog", "person"] {
                try session.forward(readGzipFloats(fixturePath("\(name)_input_416.f32.gz")))
                for (h, layer) in [(0, 15), (1, 22)] {
                    let ref = try sampledTensor("\(name)_conv\(layer).samples")
                    let (maxAbs, sumDiff) = ref.compare(session.heads[h].raw)
                    XCTAssertLessThanOrEqual(maxAbs, 1e-3, "\(name) head \(h) \(label)")
                    XCTAssertLessThanOrEqual(sumDiff, 1e-4, "\(name) head \(h) \(label)")
                    print("\(name) head \(h) (\(label)): max abs diff \(maxAbs)")
                }
            }
          }
        }
    }

    /// The planner's epilogue rewrite (a conv's bias + activation applied by the max pool after
    /// it) is exact: with the same algorithm for every layer, the fused inference plan gives the
    /// unfused one's heads bit for bit.
    func testFusedConvMaxPoolIsBitIdentical() throws {
        let input = try readGzipFloats(fixturePath("dog_input_416.f32.gz"))
        let (cfg, weights) = try officialPaths()
        // Layers 0 and 2 would be direct+pool when fused: im2col in both plans.
        let same: [Int: ConvAlgorithm] = [0: .im2col, 2: .im2col]
        var heads: [[[Float]]] = []
        for fuses in [false, true] {
            let model = try Model(cfgPath: cfg, weightsPath: weights, options: ModelOptions(fusesLayers: fuses, algorithms: same))
            // The pool applies the epilogue, or the Winograd convolution pools its own output.
            XCTAssertEqual(model.inference.steps.filter { $0.algorithm == "maxpool+epilogue" || $0.algorithm.hasSuffix("+pool") }.count,
                           fuses ? 5 : 0)
            let session = try Session(model: model, threads: 2)
            try session.forward(input)
            heads.append(session.heads.map { Array($0.raw) })
        }
        XCTAssertEqual(heads[0], heads[1], "moving bias + activation into the max pools changes no head")
    }

    /// Every thread count gives the same heads, bit for bit, in each precision (BF16 and FP16
    /// where this CPU computes in them; elsewhere their plans keep FP32): the pool's
    /// threads claim chunks as they are free (docs/threads.md), and what a chunk computes (the
    /// order of its sums) must not depend on which thread ran it or how finely the step is cut.
    func testThreadCountsGiveTheSameHeads() throws {
        let input = try readGzipFloats(fixturePath("person_input_416.f32.gz"))
        let (cfg, weights) = try officialPaths()
        // (under qemu or a sanitizer, fewer: the same chunking code at fewer forwards)
        let environment = ProcessInfo.processInfo.environment
        let fewer = environment["YOLO_TEST_EMULATED"] != nil || environment["YOLO_TEST_SANITIZER"] != nil
        let counts = fewer ? [3, 8] : Array(2...8)
        for precision in fewer ? [Precision.fp32, .int8] : [.fp32, .int8, .bf16, .fp16] {
            let model: Model
            do {
                model = precision == .fp32 ? try officialModel()
                    : try Model(cfgPath: cfg, weightsPath: weights, options: ModelOptions(precision: precision))
            } catch where precision == .bf16 || precision == .fp16 {
                continue  // refused by this build or CPU (Swift 6.0's build has no BF16 GEMM): nothing to compare
            }
            let one = try Session(model: model, threads: 1)
            try one.forward(input)
            for threads in counts {
                let many = try Session(model: model, threads: threads)
                for _ in 0..<2 {  // twice: the chunks go to other threads each time
                    try many.forward(input)
                    for h in 0..<2 {
                        let differ = zip(one.heads[h].raw, many.heads[h].raw).filter { $0.bitPattern != $1.bitPattern }.count
                        XCTAssertEqual(differ, 0, "\(precision), \(threads) threads, head \(h): values differ from 1 thread's")
                    }
                }
            }
        }
    }

    /// Buffer reuse keeps the heads and the input, and refuses to show what it overwrote.
    func testReusedBuffersKeepHeadsAndInput() throws {
        let model = try officialModel()
        let input = try readGzipFloats(fixturePath("dog_input_416.f32.gz"))
        let lean = try Session(model: model, threads: 1)
        let full = try Session(model: model, threads: 1, keepsAllOutputs: true)
        try lean.forward(input)
        try full.forward(input)
        XCTAssertEqual(Array(lean.input), input, "the input survives a forward")
        for h in 0..<2 {
            XCTAssertEqual(Array(lean.heads[h].raw), Array(full.heads[h].raw))
            XCTAssertEqual(Array(lean.heads[h].activated), Array(full.heads[h].activated))
        }
        XCTAssertLessThan(lean.memoryBytes, full.memoryBytes)
        XCTAssertThrowsError(try lean.output(ofLayer: 0)) { error in
            XCTAssertTrue("\(error)".contains("keepsAllOutputs"), "\(error)")
        }
        XCTAssertNoThrow(try lean.output(ofLayer: 15), "a head's input is kept")
        XCTAssertThrowsError(try lean.output(ofLayer: 24))
    }

    /// An extra session costs its activations and scratch, not another copy of the weights.
    func testSessionsShareTheModelsMemory() throws {
        let model = try officialModel()
        XCTAssertGreaterThanOrEqual(model.parameterBytes, 4 * model.parameterCount, "the weights live in the model")
        let session = try Session(model: model, threads: 1)
        XCTAssertEqual(session.memoryBytes, model.sessionBytes(threads: 1))
        XCTAssertLessThanOrEqual(session.memoryBytes, 30 << 20, "one session at 416x416: activations + scratch")
        XCTAssertLessThan(session.memoryBytes, model.parameterBytes / 2)
        XCTAssertEqual(try model.makeSessions(3, threads: 1).map(\.threads), [1, 1, 1])
    }

    /// Two sessions of one model on two threads at once (run it under ThreadSanitizer too:
    /// scripts/sanitize.sh thread): each gives the single-session heads bit for bit.
    func testTwoSessionsOnTwoThreadsMatchOneSession() throws {
        let model = try officialModel()
        let inputs = try ["dog", "person"].map { try readGzipFloats(fixturePath("\($0)_input_416.f32.gz")) }
        let reference = try inputs.map { input -> [[Float]] in
            let s = try Session(model: model, threads: 1)
            try s.forward(input)
            return s.heads.map { Array($0.raw) }
        }
        let sessions = try model.makeSessions(2, threads: 1)
        let results = UnsafeMutablePointer<[[Float]]>.allocate(capacity: 2 * 3)
        results.initialize(repeating: [], count: 6)
        defer { results.deinitialize(count: 6); results.deallocate() }
        nonisolated(unsafe) let shared = (sessions, inputs, results)
        DispatchQueue.concurrentPerform(iterations: 2) { k in
            for round in 0..<3 {
                try! shared.0[k].forward(shared.1[k])
                shared.2[k * 3 + round] = shared.0[k].heads.map { Array($0.raw) }
            }
        }
        for k in 0..<2 {
            for round in 0..<3 { XCTAssertEqual(results[k * 3 + round], reference[k], "session \(k), round \(round)") }
        }
    }

    /// A model built once and shared across Swift tasks (Model is Sendable); each task has its
    /// own detector.
    func testOneModelSharedAcrossTasks() async throws {
        let model = try officialModel()
        let input = try readGzipFloats(fixturePath("dog_input_416.f32.gz"))
        let expected: [Float] = try {
            let s = try Session(model: model, threads: 1)
            try s.forward(input)
            return Array(s.heads[0].raw)
        }()
        let heads = try await withThrowingTaskGroup(of: [Float].self) { group in
            for _ in 0..<3 {
                group.addTask {
                    let session = try Session(model: model, threads: 1)
                    try session.forward(input)
                    return Array(session.heads[0].raw)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(heads.count, 3)
        for h in heads { XCTAssertEqual(h, expected) }
    }

    /// Misuse: one detector called from two threads at once is served one call after the
    /// other; every call gets the right detections (it used to corrupt heads, trap or hang).
    func testOneDetectorCalledFromTwoThreadsSerializes() throws {
        let (cfg, weights) = try officialPaths()
        let detector = try Detector(cfgPath: cfg, weightsPath: weights, threads: 2)
        var rng = SeededRandom(seed: 9)
        let frames = (0..<2).map { _ in rng.bytes(200 * 150 * 3) }
        let expected = try frames.map { try detector.detect(rgb: $0, width: 200, height: 150) }
        let sessionInput = try readGzipFloats(fixturePath("dog_input_416.f32.gz"))
        let shared = (detector, frames)
        nonisolated(unsafe) var got = [[Detection]](repeating: [], count: 20)
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: 20) { i in
            // Also hit the session directly from the same threads.
            if i % 5 == 0 { try! shared.0.session.forward(sessionInput) }
            let d = try! shared.0.detect(rgb: shared.1[i % 2], width: 200, height: 150)
            lock.lock(); got[i] = d; lock.unlock()
        }
        for i in 0..<20 { XCTAssertEqual(got[i], expected[i % 2], "call \(i)") }
    }
}
