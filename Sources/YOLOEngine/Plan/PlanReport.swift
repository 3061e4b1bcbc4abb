// What a model's plan is, for people and tools: each step of a forward pass, the algorithm that
// computes it and why (the fixed table, an override, the plan cache or a measurement), and the
// measured milliseconds of every candidate. Also the plan-related model options.
import YOLOCore

/// How a model decides the algorithm of each convolution.
public enum Planning: Sendable, Equatable {
    /// The fixed table (`ChoicePolicy.table`): deterministic, measures nothing.
    case table
    /// Runs every candidate on this CPU at load and keeps the fastest. With a cache directory
    /// (`PlanCache.defaultDirectory` for the usual place), a plan measured earlier for the same
    /// CPU, kernel level, threads, cfg and input size is reused, and a new one stored there.
    case measure(cacheDirectory: String?)
    /// The plan stored in the cache directory by an earlier measurement (`yolo tune`) when there
    /// is one for this CPU, kernel level, threads, cfg and input size; else the table. Never
    /// measures (but for `HalfProbe`: one GEMM timed in 16 bits and FP32 for a BF16 or FP16 model
    /// without a stored plan), so loading stays fast and predictable.
    case cached(cacheDirectory: String)
    /// Measures, whatever the cache holds, and stores the new plan there (`yolo tune`).
    case remeasure(cacheDirectory: String?)

    /// The cache directory, if any.
    var cacheDirectory: String? {
        switch self {
        case .table: return nil
        case .measure(let d), .remeasure(let d): return d
        case .cached(let d): return d
        }
    }
}

/// How a model computes each step and why (`Model.plan`): the algorithms, where each choice came
/// from, the timings measured, the kernels, and what fell back.
public struct PlanReport: Sendable, CustomStringConvertible {
    /// Where a step's algorithm came from.
    public enum Source: String, Sendable {
        /// The fixed table (`ChoicePolicy.table`).
        case table
        /// `ModelOptions.algorithms`.
        case override
        /// The plan cache (`yolo tune`'s measurement, read back).
        case cache
        /// Measured at this load.
        case measured
    }

    /// One candidate's measured time.
    public struct Timing: Sendable, Equatable {
        /// The candidate's `ConvAlgorithm` name.
        public let algorithm: String
        /// Its time, one step, in milliseconds.
        public let milliseconds: Double
    }

    /// One step of the plan.
    public struct Entry: Sendable {
        /// The cfg layers the step computes (a fused step covers several).
        public let layers: ClosedRange<Int>
        /// What the layers are: "conv 3x3/1 3x416x416 -> 16x416x416", "maxpool 2x2/2 ...".
        public let what: String
        /// How: a `ConvAlgorithm` name for convolutions, else the layer kind.
        public let algorithm: String
        /// The arithmetic of its convolution (`.fp32` for the other layers).
        public let precision: Precision
        /// Why (nil for layers with only one way).
        public let source: Source?
        /// Every candidate's milliseconds, when measured (now or in the cached plan).
        public let timings: [Timing]
    }

    /// The inference plan's steps, in order ([yolo] activations, run on demand, excluded).
    public let entries: [Entry]
    /// The kernel level the steps run (and "+ OpenBLAS" when OpenBLAS computes the GEMMs).
    public let kernels: String
    /// The 16-bit GEMM of precision bf16 or fp16 and what computes its products
    /// ("avx2-fp16-weights: fp32 fma, fp16 weights", "dotprod-fp16: fmla .8h"); nil for the others.
    public let halfGemm: String?
    /// Threads the measurements ran on (nil: nothing was measured or read from the cache).
    public let measuredThreads: Int?
    /// The plan cache file read or written, if any.
    public let cacheFile: String?
    /// Seconds spent measuring at load (0 with the table or a cached plan).
    public let tuningSeconds: Double
    /// Problems that did not stop the load: a plan cache entry ignored or not written.
    public let warnings: [String]

    /// One line per step: layers, what, algorithm, source and the candidates' times; in a plan
    /// with INT8 or BF16 steps, the convolutions that stay FP32 say so ("direct+pool, fp32 (table)";
    /// the others' algorithm names say it: "int8", "winograd2-bf16").
    public var description: String {
        let mixed = entries.contains { $0.precision != .fp32 }
        return entries.map { e in
            let range = e.layers.count == 1 ? "\(e.layers.lowerBound)" : "\(e.layers.lowerBound)-\(e.layers.upperBound)"
            var line = "\(range) \(e.what): \(e.algorithm)"
            if mixed && e.source != nil && e.precision == .fp32 { line += ", fp32" }
            if let s = e.source { line += " (\(s.rawValue))" }
            if !e.timings.isEmpty {
                line += " [" + e.timings.map { "\($0.algorithm) \(PlanCache.formatMilliseconds($0.milliseconds)) ms" }
                    .joined(separator: ", ") + "]"
            }
            return line
        }.joined(separator: "\n")
    }
}
