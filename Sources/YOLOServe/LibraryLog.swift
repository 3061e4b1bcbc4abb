// libmicrohttpd's own error lines (a request it could not parse, a connection it refused at its
// limit, an accept that failed for want of file descriptors), passed on at a bounded rate: a
// client that sends garbage in a loop must not flood the operator's log (docs/serve.md, "Logs").
import YOLOCore

/// Passes lines on, at most `burst` in each `window`; the rest are counted and said in one line
/// when the next line passes.
final class RateLimitedLog: Sendable {
    private struct State {
        var windowStart: UInt64 = 0
        var passed = 0
        var held = 0
    }
    private let state = Locked(State())
    private let burst: Int
    private let windowNanoseconds: UInt64
    private let sink: @Sendable (String) -> Void

    init(burst: Int = 10, windowSeconds: Double = 10, sink: @escaping @Sendable (String) -> Void) {
        self.burst = burst
        windowNanoseconds = UInt64(windowSeconds * 1e9)
        self.sink = sink
    }

    /// `line` goes on now, or is counted (`now` for tests).
    func log(_ line: String, now: UInt64 = monotonicNanoseconds()) {
        let out: [String] = state.withLock { s in
            var out: [String] = []
            if now &- s.windowStart >= windowNanoseconds {
                if s.held > 0 { out.append("(\(s.held) more line\(s.held == 1 ? "" : "s") of libmicrohttpd's not shown)") }
                s = State(windowStart: now)
            }
            guard s.passed < burst else { s.held += 1; return out }
            s.passed += 1
            out.append(line)
            return out
        }
        for l in out { sink(l) }
    }
}
