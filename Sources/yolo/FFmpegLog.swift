// An ffmpeg child's stderr (-loglevel level+info): its error lines, in ffmpeg's own words, and the
// decoded video's size and rate.
import Foundation
import YOLO

/// An ffmpeg child's stderr, read on a thread of its own. ffmpeg runs with `-loglevel
/// level+info`, so each line carries its level ("[matroska @ 0x...] [error] File ended
/// prematurely"): the error lines (error, fatal, panic) are kept for messages, in ffmpeg's own
/// words, and the output's "Stream #0:0: Video: ..., 320x240, ..., 25 fps" line gives the
/// decoded frames' size and rate.
final class FFmpegLog: Sendable {
    struct Geometry: Sendable { var width: Int; var height: Int; var fps: Double? }

    /// ffmpeg's arguments for this log format.
    static let arguments = ["-hide_banner", "-nostdin", "-nostats", "-loglevel", "level+info"]

    private struct State {
        var errors: [String] = []
        var errorCount = 0
        var inOutput = false
        var geometry: Geometry?
        var ended = false
        var waiters: [@Sendable () -> Void] = []
    }
    private let state = Locked(State())
    private let fd: Int32

    /// Starts reading `fd` (closed at its end).
    init(fd: Int32) {
        self.fd = fd
        let reader = Thread { [self] in run() }
        reader.stackSize = 1 << 18
        reader.start()
    }

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var line: [UInt8] = []
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, 4096) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            for b in buffer[0..<n] {
                if b == 10 || b == 13 {
                    if !line.isEmpty { add(String(decoding: line, as: UTF8.self)) }
                    line.removeAll(keepingCapacity: true)
                } else if line.count < 4096 {
                    line.append(b)
                }
            }
        }
        if !line.isEmpty { add(String(decoding: line, as: UTF8.self)) }
        close(fd)
        let waiters = state.withLock { s in
            s.ended = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w() }
    }

    /// A line's level and message: "[ctx @ 0x..] [error] text" -> ("error", "text"); a line
    /// without a level (older ffmpeg) is info.
    static func parse(_ line: String) -> (level: String, message: String) {
        for level in ["panic", "fatal", "error", "warning", "info", "verbose", "debug", "trace"] {
            let tag = "[\(level)] "
            if line.hasPrefix(tag) { return (level, String(line.dropFirst(tag.count))) }
            if let r = line.range(of: "] " + tag) { return (level, String(line[r.upperBound...])) }
        }
        return ("info", line)
    }

    private func add(_ line: String) {
        let (level, message) = Self.parse(line)
        let wake = state.withLock { s -> [@Sendable () -> Void] in
            if ["panic", "fatal", "error"].contains(level) {
                s.errorCount += 1
                if s.errors.count < 20 { s.errors.append(message) }
            }
            if message.hasPrefix("Output #0") { s.inOutput = true }
            if s.inOutput && s.geometry == nil && message.contains("Stream #") && message.contains("Video:") {
                s.geometry = Self.parseGeometry(message)
                defer { s.waiters = [] }
                return s.waiters
            }
            return []
        }
        for w in wake { w() }
    }

    static func parseGeometry(_ text: String) -> Geometry? {
        let ns = text as NSString
        guard let sizeRE = try? NSRegularExpression(pattern: ", ([0-9]+)x([0-9]+)[, \\[]"),
              let m = sizeRE.firstMatch(in: text, range: NSRange(location: 0, length: ns.length)),
              let w = Int(ns.substring(with: m.range(at: 1))), let h = Int(ns.substring(with: m.range(at: 2))) else { return nil }
        var fps: Double? = nil
        if let fpsRE = try? NSRegularExpression(pattern: "([0-9.]+)(k?) (fps|tbr)"),
           let f = fpsRE.firstMatch(in: text, range: NSRange(location: 0, length: ns.length)),
           let v = Double(ns.substring(with: f.range(at: 1))) {
            fps = ns.substring(with: f.range(at: 2)) == "k" ? v * 1000 : v
        }
        return Geometry(width: w, height: h, fps: fps)
    }

    /// The output video's geometry; nil when ffmpeg ended without announcing it, or `stop`
    /// was set first.
    func waitForGeometry(stop: StopSignal) -> Geometry? {
        let changed = DispatchSemaphore(value: 0)
        stop.onStop { changed.signal() }
        while true {
            let (geometry, done) = state.withLock { s -> (Geometry?, Bool) in
                if s.geometry == nil && !s.ended { s.waiters.append { changed.signal() } }
                return (s.geometry, s.ended)
            }
            if geometry != nil || done || stop.isSet { return geometry }
            changed.wait()
        }
    }

    /// Waits until ffmpeg closed its stderr (it ended), at most `seconds`.
    func waitForEnd(seconds: Double) {
        let changed = DispatchSemaphore(value: 0)
        let done = state.withLock { s -> Bool in
            if !s.ended { s.waiters.append { changed.signal() } }
            return s.ended
        }
        if !done { _ = changed.wait(timeout: .now() + seconds) }
    }

    /// ffmpeg's first error message (the cause; later ones are mostly its consequences), with
    /// `name` (the file it names) replaced by `shownAs` and a leading "name: " dropped; nil
    /// when it reported no error.
    func firstError(name: String, shownAs: String? = nil) -> String? {
        state.withLock { s -> String? in
            guard var text = s.errors.first else { return nil }
            if text.hasPrefix(name + ": ") { text.removeFirst(name.count + 2) }
            if let shownAs { text = text.replacingOccurrences(of: name, with: shownAs) }
            let more = s.errorCount - 1
            return more > 0 ? "\(text) (and \(more) more error\(more == 1 ? "" : "s"))" : text
        }
    }
}
