// libmicrohttpd's glue: starts the daemon (one internal polling thread over epoll, suspend and
// resume allowed, its connection, idle and memory limits set, ConnectionGuard's accept policy),
// turns its callbacks (HTTPCallbacks.swift) into HTTPRequest (HTTPFraming.swift), Route and
// HTTPResponse, reads bodies under their limits, and stops it.
import CMicroHTTPD
import YOLOCore

/// Why the server could not start, in one line.
public struct ServeError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Bytes of request bodies held at once, across all requests.
final class ByteBudget: Sendable {
    let limit: Int
    private let used = Locked(0)
    init(limit: Int) { self.limit = limit }
    /// Takes `n` bytes of the budget; false (nothing taken) when that would pass the limit.
    func reserve(_ n: Int) -> Bool {
        used.withLock { u in
            guard n <= limit - u else { return false }
            u += n
            return true
        }
    }
    func release(_ n: Int) { used.withLock { $0 -= n } }
    var inUse: Int { used.withLock { $0 } }
}

/// The HTTP server: libmicrohttpd with an application behind it.
final class HTTPServer: @unchecked Sendable {
    unowned let application: HTTPApplication
    let limits: ServeLimits
    let budget: ByteBudget
    let connections: ConnectionGuard
    private var daemon: OpaquePointer?
    private var listenSocket: Int32 = -1
    /// libmicrohttpd's log callback and its context, for as long as this server lives.
    private let logSink = UnsafeMutablePointer<yolo_mhd_log_sink>.allocate(capacity: 1)
    /// Off while the daemon starts: a failure to start is said once, by `start`'s error.
    private let logging = Locked(false)
    /// The port listened on (known after `start`).
    private(set) var port = 0
    /// Form fields other than files are short: api_key, min_confidence, thresholds.
    static let smallFieldLimit = 4096
    static let maxFormFields = 32
    /// The kernel's send buffer for a live stream's connection (it doubles it).
    static let streamSendBuffer = 64 * 1024

    init(application: HTTPApplication, limits: ServeLimits) {
        self.application = application
        self.limits = limits
        budget = ByteBudget(limit: limits.maxBufferedBytes)
        connections = ConnectionGuard(limits: limits) { [weak application] reason in application?.dropped(reason: reason) }
        logSink.initialize(to: yolo_mhd_log_sink(log: onLibraryLog, cls: nil))
        logSink.pointee.cls = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit { logSink.deallocate() }

    /// A line of libmicrohttpd's log, after the daemon started.
    func libraryLogged(_ line: String) {
        if logging.withLock({ $0 }) { application.libraryLogged(Self.withoutPage(line)) }
    }

    /// libmicrohttpd quotes the HTML page of an error it answers: the log keeps its status.
    static func withoutPage(_ line: String) -> String {
        guard let open = line.range(of: " ('<html>"), let close = line.range(of: "</html>')", range: open.upperBound..<line.endIndex)
        else { return line }
        return String(line[..<open.lowerBound] + line[close.upperBound...])
    }

    /// Listens on `host` (a numeric IPv4 or IPv6 address, or localhost) and `port` (0: any).
    func start(host: String, port: Int) throws(ServeError) {
        var v4 = sockaddr_in(), v6 = sockaddr_in6()
        let ipv6 = host.contains(":")
        let address = host == "localhost" ? "127.0.0.1" : host
        guard (0...65535).contains(port) else { throw ServeError("port \(port): expected 0...65535") }
        if ipv6 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(port).bigEndian
            guard inet_pton(AF_INET6, address, &v6.sin6_addr) == 1 else { throw ServeError("\(host): not an IPv6 address") }
        } else {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(port).bigEndian
            guard inet_pton(AF_INET, address, &v4.sin_addr) == 1 else {
                throw ServeError("\(host): not an IP address (give a numeric address such as 127.0.0.1, ::1 or 0.0.0.0)")
            }
        }
        var flags = MHD_USE_AUTO_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_ERROR_LOG.rawValue
        if ipv6 { flags |= MHD_USE_IPv6.rawValue }
        let context = Unmanaged.passUnretained(self).toOpaque()
        func startDaemon(_ address: UnsafePointer<sockaddr>) -> OpaquePointer? {
            // No per-IP limit of libmicrohttpd's: ConnectionGuard's accept policy keeps one, but not
            // for loopback peers.
            var config = yolo_mhd_config(
                flags: flags, address: address, handler: onAccess, completed: onCompleted, notify: onConnection,
                accept_policy: onAcceptPolicy, uri_log: onURI,
                context: context, connection_limit: UInt32(limits.maxConnections),
                per_ip_limit: 0, idle_timeout: UInt32(limits.headerTimeout),
                connection_memory: 64 * 1024, listen_backlog: 1024, log_sink: logSink)
            return yolo_mhd_start(&config)
        }
        connections.start()
        errno = 0
        let started = ipv6 ? withUnsafePointer(to: &v6) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, startDaemon) }
                           : withUnsafePointer(to: &v4) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, startDaemon) }
        let startErrno = errno
        guard let started else {
            connections.stop()
            // The reason from a bind of our own to the address: libmicrohttpd 1.0 (Debian 13) leaves
            // errno at EBADF ("Bad file descriptor") after a failed bind, not at the bind's error.
            let bindErrno = ipv6 ? withUnsafePointer(to: &v6) { Self.bindError($0, MemoryLayout<sockaddr_in6>.size) }
                                 : withUnsafePointer(to: &v4) { Self.bindError($0, MemoryLayout<sockaddr_in>.size) }
            let code = bindErrno ?? startErrno
            let reason = code != 0 ? String(cString: strerror(code)) : "libmicrohttpd could not start"
            throw ServeError("cannot listen on \(ipv6 ? "[\(host)]" : host):\(port): \(reason)")
        }
        daemon = started
        self.port = Int(yolo_mhd_port(started))
        logging.withLock { $0 = true }
    }

    /// The errno of binding a TCP socket of our own to `address` (SO_REUSEADDR, as libmicrohttpd
    /// does), nil when that bind succeeds.
    private static func bindError<Address>(_ address: UnsafePointer<Address>, _ length: Int) -> Int32? {
        address.withMemoryRebound(to: sockaddr.self, capacity: 1) { a in
            let fd = socket(Int32(a.pointee.sa_family), Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return errno }
            defer { close(fd) }
            var on: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            return bind(fd, a, socklen_t(length)) == 0 ? nil : errno
        }
    }

    /// Stops accepting connections; those open go on.
    func stopAccepting() {
        guard let daemon, listenSocket < 0 else { return }
        listenSocket = MHD_quiesce_daemon(daemon)
    }

    /// Closes every connection and stops the daemon (every suspended connection must have
    /// been resumed first).
    func stop() {
        guard let d = daemon else { return }
        daemon = nil
        MHD_stop_daemon(d)
        if listenSocket >= 0 { close(listenSocket); listenSocket = -1 }
        connections.stop()
    }

    // MARK: - Requests

    func access(_ connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
                version: UnsafePointer<CChar>?, data: UnsafePointer<CChar>?, size: UnsafeMutablePointer<Int>,
                state: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        let conn = HTTPConnection(raw: connection)
        // The first call: nothing there yet, or onURI's count of a query cut short.
        let cut = state.pointee.flatMap(Self.cutQuery)
        guard let existing = state.pointee, cut == nil else {
            let request = makeRequest(connection, url: url, method: method, version: version, queryArguments: cut)
            state.pointee = Unmanaged.passRetained(request).toOpaque()
            return begin(request, conn)
        }
        let request = Unmanaged<HTTPRequest>.fromOpaque(existing).takeUnretainedValue()
        if size.pointee > 0, let data {
            let n = size.pointee
            size.pointee = 0
            return receive(request, data, count: n)
        }
        return complete(request, conn)
    }

    private func begin(_ request: HTTPRequest, _ conn: HTTPConnection) -> MHD_Result {
        let route = application.route(request)
        // Queued on this first call, an answer makes libmicrohttpd read nothing more of the
        // connection (no body, no next request) and close it once sent.
        if case .respond(let r) = route, r.closes { return answer(route, request, conn) }
        if case .respond(let r) = route, request.hasBody, (request.contentLength ?? 0) <= limits.maxBodyBytes {
            // An answer decided from the headers waits for the body, read and dropped: sent
            // while the client still sends, the close after it would reset the connection and
            // the client could lose it.
            request.failure = r
            request.discarding = true
            request.bodyLimit = limits.maxBodyBytes
            connections.bodyStarted(conn.raw)
            return .YES
        }
        if case .readBody = route {} else if !request.hasBody {
            // Answered on the next call, which keeps the connection alive.
            request.early = route
            connections.answering(conn.raw)
            return .YES
        }
        return answer(route, request, conn)
    }

    private func answer(_ route: Route, _ request: HTTPRequest, _ conn: HTTPConnection) -> MHD_Result {
        switch route {
        case .respond(let r):
            return send(r, request, conn)
        case .stream(let contentType, let headers, let body):
            return sendStream(contentType: contentType, headers: headers, body: body, request, conn)
        case .readBody(let limit, let urlEncoded, let handler):
            if let n = request.contentLength, n > limit {
                return send(.error(413, "the request body has \(n) bytes; the limit is \(limit)"), request, conn)
            }
            let expected = min(request.contentLength ?? 0, limit)
            guard budget.reserve(expected) else {
                return send(.error(503, "busy: too many request bodies are held; retry later", headers: [("Retry-After", "1")]),
                            request, conn)
            }
            request.reservedBytes = expected
            request.bodyLimit = limit
            request.handler = handler
            request.isForm = request.hasContentType("multipart/form-data")
                || urlEncoded && request.hasContentType("application/x-www-form-urlencoded")
            if request.isForm {
                request.postProcessor = MHD_create_post_processor(conn.raw, 16 * 1024, onFormField,
                                                                  Unmanaged.passUnretained(request).toOpaque())
                if request.postProcessor == nil {
                    request.failure = .error(400, "cannot parse the form: \(request.contentType ?? "") (a multipart type needs a boundary)")
                }
            } else {
                request.body.reserveCapacity(expected)
            }
            connections.bodyStarted(conn.raw)
            return .YES
        }
    }

    private func receive(_ request: HTTPRequest, _ data: UnsafePointer<CChar>, count n: Int) -> MHD_Result {
        request.received += n
        // Only a body without a declared length (chunked) can get here past the limit; the
        // answer cannot be sent while the upload goes on, so the connection is closed.
        if request.received > request.bodyLimit { application.dropped(reason: "body_too_large"); return .NO }
        if request.discarding { return .YES }
        if request.received > request.reservedBytes {
            let more = request.received - request.reservedBytes
            guard budget.reserve(more) else { application.dropped(reason: "buffer_budget"); return .NO }
            request.reservedBytes += more
        }
        if request.failure != nil { return .YES }  // the rest is read and dropped
        if let pp = request.postProcessor {
            if MHD_post_process(pp, data, n) != .YES && request.failure == nil {
                request.failure = .error(400, "malformed form data")
            }
        } else {
            request.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: n))
        }
        return .YES
    }

    private func complete(_ request: HTTPRequest, _ conn: HTTPConnection) -> MHD_Result {
        if let route = request.early {
            request.early = nil
            return answer(route, request, conn)
        }
        if request.deferred {
            // Resumed: the worker's answer is there (it resumes only after setting it).
            return send(request.takeResult() ?? .error(500, "internal error: no answer"), request, conn)
        }
        if let pp = request.postProcessor {
            request.postProcessor = nil
            if MHD_destroy_post_processor(pp) != .YES && request.failure == nil {
                request.failure = .error(400, "the multipart body is incomplete or malformed (truncated?)")
            }
        }
        connections.answering(conn.raw)
        if let failure = request.failure { return send(failure, request, conn) }
        guard let handler = request.handler else { return send(.error(500, "internal error: no handler"), request, conn) }
        switch handler(request) {
        case .respond(let r):
            return send(r, request, conn)
        case .later(let start):
            request.deferred = true
            conn.suspend()
            start { response in
                request.setResult(response)
                conn.resume()
            }
            return .YES
        }
    }

    private func send(_ r: HTTPResponse, _ request: HTTPRequest, _ conn: HTTPConnection) -> MHD_Result {
        let made = r.body.withUnsafeBytes {
            MHD_create_response_from_buffer(r.body.count, UnsafeMutableRawPointer(mutating: $0.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let response = made else { return .NO }
        defer { MHD_destroy_response(response) }
        addHeaders(response, contentType: r.contentType, r.headers + (r.closes ? [("Connection", "close")] : []))
        request.status = r.status
        connections.answering(conn.raw)
        return MHD_queue_response(conn.raw, UInt32(r.status), response)
    }

    private func sendStream(contentType: String, headers: [(String, String)], body: StreamBody,
                            _ request: HTTPRequest, _ conn: HTTPConnection) -> MHD_Result {
        if request.method == "HEAD" {
            // The headers alone (libmicrohttpd would send a stream's chunks to a HEAD request).
            body.closed()
            return send(HTTPResponse(status: 200, contentType: contentType, body: [],
                                     headers: [("Cache-Control", "no-cache, no-store")] + headers), request, conn)
        }
        // A small send buffer: what a slow client has not taken stays with us, where the newest
        // frame replaces it, rather than aging in the kernel (which would grow it to megabytes).
        var bytes = Int32(Self.streamSendBuffer)
        let socket = yolo_mhd_socket(conn.raw)
        if socket >= 0 { setsockopt(socket, SOL_SOCKET, SO_SNDBUF, &bytes, socklen_t(MemoryLayout<Int32>.size)) }
        let box = Unmanaged.passRetained(StreamBox(body: body, connection: conn))
        guard let response = MHD_create_response_from_callback(UInt64.max, 32 * 1024, onStreamRead, box.toOpaque(), onStreamFree)
        else { box.release(); return .NO }
        defer { MHD_destroy_response(response) }
        addHeaders(response, contentType: contentType, [("Cache-Control", "no-cache, no-store")] + headers)
        request.status = 200
        connections.answering(conn.raw)
        return MHD_queue_response(conn.raw, 200, response)
    }

    private func addHeaders(_ response: OpaquePointer, contentType: String, _ headers: [(String, String)]) {
        MHD_add_response_header(response, "Content-Type", contentType)
        MHD_add_response_header(response, "X-Content-Type-Options", "nosniff")
        for (name, value) in headers { MHD_add_response_header(response, name, value) }
    }

    func completed(_ connection: OpaquePointer?, state: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        guard let state, let raw = state.pointee else { return }
        state.pointee = nil
        guard Self.cutQuery(raw) == nil else { return }  // onURI's count: the request never began
        let request = Unmanaged<HTTPRequest>.fromOpaque(raw).takeRetainedValue()
        if let pp = request.postProcessor { MHD_destroy_post_processor(pp); request.postProcessor = nil }
        budget.release(request.reservedBytes)
        request.reservedBytes = 0
        // A stream ends when its client goes: that is its normal end, so what counts is whether
        // an answer was sent (a request never answered counts as none).
        application.finished(request, status: request.status)
        if let connection { connections.requestDone(connection) }
    }
}
