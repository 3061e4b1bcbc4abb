// Stopping `yolo stream`: the stop request (`StopSignal`: a signal, the reader of stdout gone,
// an output that failed), the signals that make it (SIGINT, SIGTERM and SIGHUP alike: the
// frames in flight are finished and the outputs closed; a second one aborts), and what an
// abort must undo (`StreamCleanup`: children killed and reaped, temporary files removed).
import Foundation
import YOLO

/// Set once, from any thread; what waits for it registers a wake-up (`onStop`).
final class StopSignal: Sendable {
    private let state = Locked<(isSet: Bool, observers: [@Sendable () -> Void])>((false, []))

    var isSet: Bool { state.withLock { $0.isSet } }

    /// Sets the flag and runs the observers (once; later calls do nothing).
    func set() {
        let observers = state.withLock { s -> [@Sendable () -> Void] in
            if s.isSet { return [] }
            s.isSet = true
            defer { s.observers = [] }
            return s.observers
        }
        for o in observers { o() }
    }

    /// Runs `observer` when the flag is set (now, if it is).
    func onStop(_ observer: @escaping @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            if s.isSet { return true }
            s.observers.append(observer)
            return false
        }
        if now { observer() }
    }
}

/// The children and temporary files of a run, for the paths that end it early: `abort` (a
/// second signal) and `endAll` (any return or thrown error; children that the normal path
/// already ended are skipped).
final class StreamCleanup: Sendable {
    private let state = Locked<(children: [ChildProcess], temporaryFiles: [String])>(([], []))

    func add(_ child: ChildProcess) { state.withLock { $0.children.append(child) } }
    func addTemporaryFile(_ path: String) { state.withLock { $0.temporaryFiles.append(path) } }
    /// The file was renamed into place (or removed): no longer ours to remove.
    func forgetTemporaryFile(_ path: String) { state.withLock { $0.temporaryFiles.removeAll { $0 == path } } }

    /// Ends every child still running (SIGTERM, then SIGKILL after `grace` seconds), reaps
    /// them, and removes the temporary files.
    func endAll(grace: Double = 2) {
        let (children, files) = state.withLock { s in
            defer { s.children = []; s.temporaryFiles = [] }
            return (s.children, s.temporaryFiles)
        }
        for child in children { child.signal(SIGTERM) }
        for child in children { child.end(patience: 0, grace: grace) }
        for file in files { unlink(file) }
    }

    /// A second signal: kill the children at once, reap them, remove the temporary files, and
    /// die of `signal` (as if yolo had not caught it).
    func abort(signal number: Int32) -> Never {
        let (children, files) = state.withLock { s in (s.children, s.temporaryFiles) }
        for child in children { child.signal(SIGKILL) }
        for child in children { child.wait(seconds: 5) }
        for file in files { unlink(file) }
        signal(number, SIG_DFL)
        raise(number)
        _exit(128 + number)
    }
}

/// SIGINT, SIGTERM and SIGHUP: the first sets `stop`; the second aborts (`cleanup.abort`).
/// A handler (whichever thread the kernel picks runs it) writes the signal's number to a pipe,
/// the only thing it may safely do; a thread of its own reads the pipe and acts. A signal that
/// was ignored when yolo started (nohup) stays ignored. Children get the default dispositions
/// back (ChildProcess).
enum StopSignals {
    /// The pipe's write end, for the handler (set once, before the handler is installed).
    nonisolated(unsafe) private static var pipeWriteEnd: Int32 = -1

    /// Installs the handler for `signals` and starts the thread that acts, for the rest of the
    /// process; `onSignal(number, count)` is told of each signal first (e.g. to say what it does).
    static func handle(stop: StopSignal, cleanup: StreamCleanup, signals: [Int32] = [SIGINT, SIGTERM, SIGHUP],
                       onSignal: (@Sendable (_ number: Int32, _ count: Int) -> Void)? = nil) throws {
        var ends: [Int32] = [-1, -1]
        guard makePipe(&ends) else { throw FileError(path: "stream", what: "cannot make a pipe: \(errnoText(errno))") }
        pipeWriteEnd = ends[1]
        let readEnd = ends[0]
        let thread = Thread {
            var count = 0
            while true {
                var number: UInt8 = 0
                let n = read(readEnd, &number, 1)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                count += 1
                onSignal?(Int32(number), count)
                if count == 1 { stop.set() } else { cleanup.abort(signal: Int32(number)) }
            }
        }
        thread.stackSize = 1 << 18
        thread.start()
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { number in
            let saved = errno
            var byte = UInt8(truncatingIfNeeded: number)
            _ = write(StopSignals.pipeWriteEnd, &byte, 1)
            errno = saved
        }
        action.sa_flags = SA_RESTART
        sigemptyset(&action.sa_mask)
        for s in signals {
            // A signal ignored from the start stays ignored (nohup; a shell's background job).
            var old = sigaction()
            sigaction(s, nil, &old)
            if let handler = old.__sigaction_handler.sa_handler, unsafeBitCast(handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self) {
                continue
            }
            sigaction(s, &action, nil)
        }
    }
}
