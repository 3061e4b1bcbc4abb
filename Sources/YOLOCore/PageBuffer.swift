// A short-lived large buffer in pages of its own (an anonymous mapping), returned to the system
// when it ends. Through malloc, glibc would map it too, but freeing a mapped block raises
// malloc's mapping threshold to that block's size: every later allocation below it (a session's
// activations, an image) then comes from the heap, which keeps what it once held (measured: the
// model's per-layer parameter buffers freed through malloc raised `yolo detect --precision
// int8`'s peak RSS by 1.3 MiB instead of lowering it by 2).

/// `count` floats, zero-filled, unmapped at deinit.
package struct PageBuffer: ~Copyable {
    package let base: UnsafeMutablePointer<Float>
    private let bytes: Int

    /// nil when the system refuses the mapping (no memory, or over a data-size limit).
    package init?(floats count: Int) {
        bytes = max(1, count) * MemoryLayout<Float>.stride
        guard let p = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              p != UnsafeMutableRawPointer(bitPattern: -1) else { return nil }
        base = p.bindMemory(to: Float.self, capacity: max(1, count))
    }

    deinit { munmap(UnsafeMutableRawPointer(base), bytes) }
}
