// Short-lived large buffers in pages of their own (an anonymous mapping), returned to the system
// when unmapped. Through malloc, glibc would map them too, but freeing a mapped block raises
// malloc's mapping threshold to that block's size: every later allocation below it (a session's
// activations, an image) then comes from the heap, which keeps what it once held (measured: the
// model's per-layer parameter buffers freed through malloc raised `yolo detect --precision
// int8`'s peak RSS by 1.3 MiB instead of lowering it by 2). Two functions rather than a type with
// a deinit: the lifetime is where the caller's `defer` says (and Embedded Swift's aarch64 build
// cannot destroy another module's noncopyable values).

/// `count` floats, zero-filled, for `unmapPages`; nil when the system refuses the mapping (no
/// memory, or over a data-size limit).
package func mapPages(floats count: Int) -> UnsafeMutablePointer<Float>? {
    let bytes = max(1, count) * MemoryLayout<Float>.stride
    guard let p = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
          p != UnsafeMutableRawPointer(bitPattern: -1) else { return nil }
    return p.bindMemory(to: Float.self, capacity: max(1, count))
}

/// Unmaps what `mapPages(floats: count)` returned.
package func unmapPages(_ base: UnsafeMutablePointer<Float>, floats count: Int) {
    munmap(UnsafeMutableRawPointer(base), max(1, count) * MemoryLayout<Float>.stride)
}
