// How a model's convolution algorithms are chosen at load (`ModelOptions.planning`): measured now
// (Tuner.swift), read from the plan cache (PlanCache.swift), or by the fixed table (ChoicePolicy
// .swift), which HalfProbe may keep in FP32; and the plan report once the plan is built.
import YOLOCore
import YOLOKernels

struct PlanChoice {
    /// The threads the measurements run (or ran) on.
    let tuningThreads: Int
    /// Choices read from a valid plan cache entry (empty: none).
    let cached: [CachedChoice]
    /// The measuring of candidates, where there is no usable cache entry and the options measure.
    let tuner: Tuner?
    /// The cache entry read or to write (nil: none), and its key.
    let cacheFile: String?
    let cacheKey: String

    /// The way of choosing for `planner`'s nodes of a `config` network at `input`: reads the plan
    /// cache where the options have one (a problem with it is a warning, and then measuring).
    init(config: DarknetConfig, input: Shape, planner: Planner, loadPool: WorkerPool, warnings: inout [String]) {
        let (options, context) = (planner.options, planner.context)
        let tuningThreads = options.tuningThreads ?? availableCores()
        var cached: [CachedChoice] = []
        var measuring = false, reads = true
        switch options.planning {
        case .measure: measuring = true
        case .remeasure: (measuring, reads) = (true, false)
        case .table, .cached: break
        }
        var cacheFile: String? = nil, cacheKey = ""
        if let directory = options.planning.cacheDirectory {
            let kernelSet = context.kernelSet
            cacheKey = PlanCache.key(config: config, input: input, kernelSet: kernelSet.name, openBLAS: context.usesOpenBLAS,
                                     kernels: kernelSet.signature, threads: tuningThreads, options: options)
            cacheFile = PlanCache.path(directory: directory, key: cacheKey)
            switch reads ? PlanCache.read(directory: directory, key: cacheKey) : nil {
            case .success(let choices)?:
                if let problem = PlanBuilder.validate(choices, nodes: planner.inferenceNodes()) {
                    warnings.append("ignored the plan cache entry \(cacheFile!): \(problem)")
                } else {
                    cached = choices
                    measuring = false
                }
            case .failure(let problem)?:
                warnings.append("ignored the plan cache entry: \(problem.message)")
            case nil:
                if case .cached = options.planning { cacheFile = nil }
            }
        }
        (self.tuningThreads, self.cached, self.cacheFile, self.cacheKey) = (tuningThreads, cached, cacheFile, cacheKey)
        tuner = measuring ? Tuner(pool: tuningThreads == loadPool.threadCount ? loadPool : WorkerPool(threads: tuningThreads),
                                  rounds: 5, gemmScratchPerThread: context.gemmScratchPerThread) : nil
    }

    /// The builder that decides and prepares each convolution as the weights load: with the
    /// cache's table-only mode and no entry, HalfProbe checks first that the 16-bit GEMM pays.
    func builder(_ planner: Planner, loadPool: WorkerPool, warnings: inout [String]) throws(YOLOError) -> PlanBuilder {
        var builder = try PlanBuilder(planner: planner, loadPool: loadPool, tuner: tuner, cached: cached)
        let (options, kernels) = (planner.options, planner.context.kernels)
        if case .cached = options.planning, cached.isEmpty, let gemm = planner.context.gemm {
            for p in kernels.halfOrder {
                guard let half = kernels.halves[p], !half.weightsOnly else { continue }
                let t = HalfProbe.measure(half: half.gemm, fp32: gemm)
                if !HalfProbe.pays(half: t.half, fp32: t.fp32) {
                    builder.tableLeavesOut.insert(p)
                    warnings.append(HalfProbe.note(options.precision, half: p, dot: half.dot, half: t.half, fp32: t.fp32,
                                                   others: kernels.halfOrder.count > 1))
                }
            }
        }
        return builder
    }

    /// Stores what was measured for the next load (a failure is a warning), then reports the plan.
    func report(_ built: PlanBuilder.Built, builder: PlanBuilder, context: PlanContext, options: ModelOptions,
                warnings: inout [String]) -> PlanReport {
        if tuner != nil, let directory = options.planning.cacheDirectory,
           let problem = PlanCache.write(directory: directory, key: cacheKey, choices: built.choices) {
            warnings.append("could not store the measured plan: \(problem)")
        }
        let kernelSet = context.kernelSet
        return PlanReport(entries: built.entries, kernels: kernelSet.name + (context.usesOpenBLAS ? " + OpenBLAS" : ""),
                          halfGemm: context.kernels.halfSummary,
                          measuredThreads: tuner != nil || !cached.isEmpty ? tuningThreads : nil, cacheFile: cacheFile,
                          tuningSeconds: Double(builder.tuningNanoseconds) / 1e9, warnings: warnings)
    }
}
