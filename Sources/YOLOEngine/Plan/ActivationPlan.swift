// Where each layer's output lives in a session's arena, for a plan's steps: buffers are reused
// once no later step reads them (greedy first fit over live intervals).
import YOLOCore

struct ActivationPlan: Sendable {
    /// Per layer, the float offset of its output (meaningful only where `materialized`).
    var offsets: [Int] = []
    /// Whether some step writes layer i's output (a fused step writes only its last layer's).
    var materialized: [Bool] = []
    /// Whether layer i's output is still intact after a forward.
    var kept: [Bool] = []
    /// Total floats, the network input included.
    var floats = 0

    /// For `steps` then `deferred` ones (run after the forward, on demand).
    init(steps: [any Step], deferred: [any Step], layers: [any Layer], input: Shape, keepingAll: Bool) {
        self.init(writes: (steps + deferred).map { ($0.output, $0.inputs) }, deferred: deferred.count, layers: layers,
                  input: input, keepingAll: keepingAll)
    }

    /// `writes`: per step in order, the layer whose output it writes and the outputs it reads; the
    /// last `deferred` ones run after the forward, on demand. The network input comes first and is
    /// kept. With `keepingAll` every output has its own buffer; otherwise a buffer is reused once
    /// no later step reads it, except the heads' inputs (the decoder reads them after the
    /// forward), what deferred steps read and write, and the last layer's output.
    init(writes: [(output: Int, inputs: [Int])], deferred: Int, layers: [any Layer], input: Shape, keepingAll: Bool) {
        @inline(__always) func aligned(_ n: Int) -> Int { (n + 15) & ~15 }
        let inputFloats = aligned(input.count)
        let count = layers.count
        var lastUse = [Int](repeating: -1, count: count)
        var writer = [Int?](repeating: nil, count: count)
        for (position, step) in writes.enumerated() {
            writer[step.output] = position
            for s in step.inputs where s >= 0 { lastUse[s] = max(lastUse[s], position) }
        }
        for step in writes.suffix(deferred) {
            lastUse[step.output] = Int.max
            for s in step.inputs where s >= 0 { lastUse[s] = Int.max }
        }
        for l in layers { if let h = l.head, h.inputLayer >= 0 { lastUse[h.inputLayer] = Int.max } }
        if count > 0 { lastUse[count - 1] = Int.max }
        if keepingAll { lastUse = lastUse.map { _ in Int.max } }
        materialized = writer.map { $0 != nil }
        kept = (0..<count).map { lastUse[$0] == Int.max && materialized[$0] }
        offsets = [Int](repeating: 0, count: count)
        // Greedy first fit over live intervals (offset, size, last use). A step's inputs stay live
        // while it runs: its output never shares memory with what it reads.
        var live: [(offset: Int, size: Int, until: Int)] = []
        var top = inputFloats
        for (position, step) in writes.enumerated() {
            live.removeAll { $0.until < position }
            let size = aligned(layers[step.output].outputShape.count)
            var offset = inputFloats
            for b in live.sorted(by: { $0.offset < $1.offset }) {
                if b.offset - offset >= size { break }
                offset = max(offset, b.offset + b.size)
            }
            live.append((offset, size, lastUse[step.output]))
            offsets[step.output] = offset
            top = max(top, offset + size)
        }
        floats = top
    }
}
