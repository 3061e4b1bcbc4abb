// The ffmpeg children of `yolo stream`: started with posix_spawn (own process group, default
// signals, close-on-exec pipes), ended in order on every exit path, always reaped.
import Foundation
import YOLO

/// The ffmpeg children of `yolo stream`: started with posix_spawn and ended in order on every
/// exit path (their pipes closed, then SIGTERM, then SIGKILL after a grace period), always
/// reaped.
///
/// Each child runs in a process group of its own, so a terminal's Ctrl-C (or a signal to the
/// group) reaches yolo alone, which then finishes the frames in flight and ends its children
/// itself. Signal dispositions and mask are reset to the defaults for the child (yolo ignores
/// SIGPIPE and its stop signals; ffmpeg must not). Pipe ends are close-on-exec, so no child
/// holds another's pipe open. A thread per child waits for it to end without reaping it first
/// (waitid with WNOWAIT), then reaps it under the same lock that `signal` takes, so a signal
/// never reaches a reused process id.
final class ChildProcess: Sendable {
    enum IO { case inherit, null, pipe }

    let pid: pid_t
    /// What it is, for messages ("ffmpeg").
    let name: String
    /// The raw wait status once reaped.
    private let status = Locked<Int32?>(nil)
    private let ended = DispatchGroup()

    private init(pid: pid_t, name: String) {
        self.pid = pid
        self.name = name
        ended.enter()
    }

    /// Starts `path` with `arguments`; returns it and our ends of the pipes asked for (stdin's
    /// write end, stdout's and stderr's read ends; nil where no pipe was asked for).
    static func spawn(_ path: String, _ arguments: [String], stdin: IO, stdout: IO, stderr: IO) throws
        -> (child: ChildProcess, stdin: Int32?, stdout: Int32?, stderr: Int32?) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var ours: [Int32?] = [nil, nil, nil]
        var theirs: [Int32] = []
        defer { for fd in theirs { close(fd) } }
        for (fd, io) in [stdin, stdout, stderr].enumerated() {
            switch io {
            case .inherit: break
            case .null:
                posix_spawn_file_actions_addopen(&actions, Int32(fd), "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
            case .pipe:
                var ends: [Int32] = [-1, -1]
                guard makePipe(&ends) else {
                    for case let p? in ours { close(p) }
                    throw FileError(path: path, what: "cannot make a pipe: \(errnoText(errno))")
                }
                let (child, parent) = fd == 0 ? (ends[0], ends[1]) : (ends[1], ends[0])
                posix_spawn_file_actions_adddup2(&actions, child, Int32(fd))  // dup2 clears close-on-exec
                theirs.append(child)
                ours[fd] = parent
            }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        posix_spawnattr_setpgroup(&attributes, 0)
        var defaults = sigset_t(), empty = sigset_t()
        sigemptyset(&defaults)
        sigemptyset(&empty)
        for s in [SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)

        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
        guard rc == 0 else {
            for case let p? in ours { close(p) }
            throw FileError(path: path, what: "cannot run: \(errnoText(rc))")
        }
        let child = ChildProcess(pid: pid, name: (path as NSString).lastPathComponent)
        let reaper = Thread { child.reap() }
        reaper.stackSize = 1 << 18
        reaper.start()
        return (child, ours[0], ours[1], ours[2])
    }

    private func reap() {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
        status.withLock { status in
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
            status = raw
        }
        ended.leave()
    }

    /// Sends `signal` unless the child has been reaped.
    func signal(_ signal: Int32) {
        status.withLock { status in if status == nil { _ = kill(pid, signal) } }
    }

    /// Waits for the child to end: true when it did within `seconds` (nil: no limit).
    @discardableResult
    func wait(seconds: Double? = nil) -> Bool {
        guard let seconds else { ended.wait(); return true }
        return ended.wait(timeout: .now() + seconds) == .success
    }

    var hasEnded: Bool { wait(seconds: 0) }

    /// Ends the child: after `patience` seconds (for it to end by itself) SIGTERM, after `grace`
    /// more SIGKILL; returns once it is reaped. Close its pipes first.
    func end(patience: Double, grace: Double) {
        if wait(seconds: patience) { return }
        signal(SIGTERM)
        if wait(seconds: grace) { return }
        signal(SIGKILL)
        wait()
    }

    /// How it ended: nil while running, else 0 for exit 0, else a description.
    var failure: String? {
        guard let raw = status.withLock({ $0 }) else { return "still running" }
        let signalled = raw & 0x7F
        if signalled == 0 {
            let code = (raw >> 8) & 0xFF
            return code == 0 ? nil : "exit status \(code)"
        }
        return "killed by signal \(signalled)" + (signalled == SIGKILL ? " (KILL)" : signalled == SIGTERM ? " (TERM)" : "")
    }

    var exitedCleanly: Bool { status.withLock { $0 } != nil && failure == nil }
}

/// A pipe whose ends are close-on-exec (and non-blocking if asked), so that no child inherits
/// them (children are started from one thread, so nothing runs between pipe and fcntl).
func makePipe(_ ends: inout [Int32], nonBlocking: Bool = false) -> Bool {
    guard pipe(&ends) == 0 else { return false }
    for fd in ends {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        if nonBlocking { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    }
    return true
}
