// Measuring the candidate algorithms of one plan node on this CPU, at model load: each prepared
// candidate runs on input of the layer's real shape with the threads the sessions will use.
import YOLOCore
import YOLOKernels

struct Tuner {
    /// The threads the measurements run on (those of the sessions that will run the model).
    let pool: WorkerPool
    /// Timed runs per candidate, after one untimed run each.
    let rounds: Int
    /// Floats of GEMM scratch per thread the kernels need.
    let gemmScratchPerThread: Int

    /// Milliseconds of each candidate of `node` (in `candidates`' order): their runs interleave
    /// (round-robin, so a burst of load from elsewhere hits them alike) and each keeps its
    /// fastest, the least disturbed by other processes. `bias` is the convolution's. With the
    /// max pool that applies the convolution's epilogue (`poolAfter`, or the node's own), each
    /// runs as the plan will run it: pooled by its own kernel where it can, else then the pool.
    func measure(_ node: PlanNode, candidates: [any ConvKernel], bias: UnsafePointer<Float>,
                 layerCount: Int, poolAfter: MaxPoolLayer? = nil) -> [Double] {
        guard let conv = node.conv, !candidates.isEmpty else { return [] }
        let pooled: MaxPoolLayer?
        if case .convPool(_, let p, _) = node { pooled = p } else { pooled = poolAfter }
        let epilogue = Epilogue(bias: bias, activation: conv.activation)
        var convEpilogue: Epilogue? = epilogue
        if case .conv(_, false, _) = node { convEpilogue = nil }

        // Arena: input at 0, the conv's full output, the pool's output.
        @inline(__always) func aligned(_ n: Int) -> Int { (n + 15) & ~15 }
        let inputFloats = aligned(conv.inputShape.count), convFloats = aligned(conv.outputShape.count)
        let pooledFloats = pooled.map { aligned($0.outputShape.count) } ?? 0
        let arenaFloats = inputFloats + convFloats + pooledFloats
        let threads = pool.threadCount
        // Those that pool their own output (Winograd) are timed so, as the plan will run them.
        let fused = candidates.map { k -> (any PoolFusingConvKernel)? in
            guard let pooled, let f = k.poolFusing, poolFusingFits(conv, pooled) else { return nil }
            return f
        }
        let workspacePerThread = max(1, zip(candidates, fused).map { $1?.pooledWorkspaceFloats ?? $0.workspaceFloats }.max() ?? 0)
        let arena = UnsafeMutablePointer<Float>.allocate(capacity: arenaFloats)
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: threads * (workspacePerThread + gemmScratchPerThread))
        let offsets = UnsafeMutablePointer<Int>.allocate(capacity: max(1, layerCount))
        defer { arena.deallocate(); scratch.deallocate(); offsets.deallocate() }
        // Deterministic values in [-1, 1): typical activations (no denormals, no zeros).
        var state: UInt32 = 0x9E37_79B9
        for i in 0..<arenaFloats {
            state = state &* 1_664_525 &+ 1_013_904_223
            arena[i] = Float(Int32(bitPattern: state) >> 8) / Float(1 << 23)
        }
        offsets.initialize(repeating: 0, count: max(1, layerCount))
        offsets[conv.index] = inputFloats
        if let pooled { offsets[pooled.index] = inputFloats + convFloats }
        let context = StepContext(arena: arena, offsets: offsets, workspace: scratch, workspacePerThread: workspacePerThread,
                                  gemmScratch: GemmScratch(base: scratch + threads * workspacePerThread,
                                                           perThread: gemmScratchPerThread),
                                  pool: pool)
        let src = UnsafePointer(context.buffer(conv.sources[0]))
        let run = { (kernel: any ConvKernel, fused: (any PoolFusingConvKernel)?) in
            if let pooled, let fused {
                _ = fused.run(src, pooledInto: context.buffer(pooled.index), epilogue: epilogue, context: context)
            } else if let pooled, kernel.algorithm.fusesPool {
                _ = kernel.run(src, into: context.buffer(pooled.index), epilogue: epilogue, context: context)
            } else if let pooled {
                _ = kernel.run(src, into: context.buffer(conv.index), epilogue: nil, context: context)
                pooled.pool(context, epilogue: epilogue)
            } else {
                _ = kernel.run(src, into: context.buffer(conv.index), epilogue: convEpilogue, context: context)
            }
        }
        for (kernel, f) in zip(candidates, fused) { run(kernel, f) }
        var best = [UInt64](repeating: .max, count: candidates.count)
        for _ in 0..<rounds {
            for (i, kernel) in candidates.enumerated() {
                let start = monotonicNanoseconds()
                run(kernel, fused[i])
                best[i] = min(best[i], monotonicNanoseconds() - start)
            }
        }
        return best.map { Double($0) / 1e6 }
    }

    /// The fastest of `times` (milliseconds, per candidate); a candidate whose prepared weights
    /// take less memory wins when it is within `tolerance` (2%) of the fastest.
    static func choose(times: [Double], parameterBytes: [Int], tolerance: Double = 0.02) -> Int {
        guard let fastest = times.indices.min(by: { times[$0] < times[$1] }) else { return 0 }
        var chosen = fastest
        for i in times.indices where times[i] <= times[fastest] * (1 + tolerance) && parameterBytes[i] < parameterBytes[chosen] {
            chosen = i
        }
        return chosen
    }
}
