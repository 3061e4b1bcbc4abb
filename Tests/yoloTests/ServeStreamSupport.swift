// Reading `yolo serve`'s live streams in tests: a plain socket (HTTP/1.0, so the body comes
// unchunked until the server closes), bounded by a deadline; the same socket for requests
// written byte for byte (framing tests); and the synthetic video.
import Foundation
import XCTest

/// A loopback connection to the server that sent `GET path` (or `request` as given); reads with
/// a deadline.
final class StreamConnection {
    let fd: Int32
    private(set) var buffer: [UInt8] = []

    convenience init(port: Int, path: String, receiveBuffer: Int32? = nil) throws {
        try self.init(port: port, request: Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8), receiveBuffer: receiveBuffer)
    }

    /// Sends `request` (all of it, unless the server closes first).
    init(port: Int, request: [UInt8], receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, 4) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { close(fd); throw XCTSkip("cannot connect to 127.0.0.1:\(port)") }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var sendTimeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, socklen_t(MemoryLayout<timeval>.size))
        var sent = 0
        while sent < request.count {
            let n = request.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n } else if n < 0 && errno == EINTR { continue } else { break }
        }
    }

    /// Reads until the server closes the connection (true), `enough` is true of what came, or
    /// `timeout` seconds pass (false).
    @discardableResult
    func readAll(timeout: Double, until enough: ([UInt8]) -> Bool = { _ in false }) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline && !enough(buffer) { if !read() { return true } }
        return false
    }

    var text: String { String(decoding: buffer, as: UTF8.self) }

    /// The status of every response read (each starts the text or follows a body's last line).
    var statuses: [Int] {
        let t = text
        let pattern = try! NSRegularExpression(pattern: "(?:^|\n)HTTP/1\\.[01] ([0-9]{3}) ")
        return pattern.matches(in: t, range: NSRange(t.startIndex..., in: t)).map { Int((t as NSString).substring(with: $0.range(at: 1)))! }
    }

    deinit { close(fd) }

    /// Reads up to `max` bytes (waiting at most 0.2 s); false once the server closed.
    @discardableResult
    func read(max: Int = 65536) -> Bool {
        var chunk = [UInt8](repeating: 0, count: max)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, max, 0) }
        if n > 0 { buffer += chunk[0..<n]; return true }
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
    }

    /// Calls `each` with every JSON object of the stream (SSE `data:` lines or NDJSON lines)
    /// until it returns true (then true) or `timeout` seconds pass or the stream ends (false).
    func frames(timeout: Double, _ each: ([String: Any]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var offset = 0
        while Date() < deadline {
            while let newline = buffer[offset...].firstIndex(of: 10) {
                var line = Array(buffer[offset..<newline])
                offset = newline + 1
                if line.starts(with: Array("data: ".utf8)) { line.removeFirst(6) }
                guard line.first == UInt8(ascii: "{"),
                      let object = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any] else { continue }
                if each(object) { return true }
            }
            if !read() { return false }
        }
        return false
    }
}

enum LiveClip {
    /// A 640x480 MJPEG clip zooming slowly into samples/coffee.png (the cup is found in every
    /// frame, at 0.33 to 0.51),
    /// `frames` frames at 10 fps.
    static func make(in dir: String, frames: Int = 40) throws -> String {
        let clip = dir + "/live.avi"
        let zoom = "zoompan=z='1+0.001*on':x='iw/2-(iw/zoom/2)':y='ih/2-(ih/zoom/2)':d=1:s=640x480:fps=10"
        let out = try runProcess("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-loop", "1", "-i",
                                            repositoryRoot + "/samples/coffee.png", "-vf", zoom, "-frames:v", "\(frames)",
                                            "-c:v", "mjpeg", "-q:v", "3", clip], in: dir, timeout: 120)
        guard out.status == 0 else {
            XCTFail("ffmpeg could not make the clip (scripts/bootstrap.sh installs ffmpeg): \(out.stderr)")
            throw XCTSkip("no clip")
        }
        return clip
    }
}
