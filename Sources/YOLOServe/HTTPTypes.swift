// The HTTP vocabulary between libmicrohttpd's glue (HTTPServer) and the endpoints: a request as
// read, a response, a streamed body, and what a route asks the server to do.
import CMicroHTTPD
import YOLOCore
import YOLOText

/// An answer with its whole body.
struct HTTPResponse: Sendable {
    var status: Int
    var contentType: String
    var body: [UInt8]
    var headers: [(String, String)] = []
    /// Close the connection after it (a request whose framing cannot be trusted: whatever
    /// follows it on the connection is not read as another request).
    var closes = false

    static func json(_ status: Int, _ text: String, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", body: Array(text.utf8), headers: headers)
    }

    /// An error as DeepStack answers one (every endpoint answers errors this way):
    /// `{"success": false, "error": "...", "code": 400}`.
    static func error(_ status: Int, _ message: String, headers: [(String, String)] = []) -> HTTPResponse {
        .json(status, "{\"success\": false, \"error\": \(jsonString(message)), \"code\": \(status)}\n", headers: headers)
    }
}

/// A form field of a multipart or URL-encoded body.
struct FormField: Sendable {
    var value: [UInt8] = []
    /// The file name a multipart part gave, if any.
    var filename: String?
    var text: String { String(decoding: value, as: UTF8.self) }
}

/// One request: what its headers said, and its body once read. Made and filled on
/// libmicrohttpd's thread; handed to a worker only after the body is complete.
final class HTTPRequest: @unchecked Sendable {
    let method: String
    let path: String
    let query: [String: String]
    let authorization: String?
    let contentType: String?
    let contentLength: Int?
    /// Whether a body follows the headers (a length over 0, or Transfer-Encoding).
    let hasBody: Bool
    /// The Host, Origin and Sec-Fetch-Site headers (HostPolicy checks them).
    var host: String?
    var origin: String?
    var fetchSite: String?
    /// An answer the glue decided from the request's framing (conflicting lengths, an unknown
    /// transfer coding, too many query arguments): sent before anything else looks at it.
    var refusal: HTTPResponse?
    /// When the headers were complete (monotonic nanoseconds).
    let started: UInt64
    /// The endpoint's name in metrics (a fixed set, never the raw path).
    var endpoint = "other"
    /// The body, when it is not a form.
    var body: [UInt8] = []
    /// The fields of a multipart/form-data or application/x-www-form-urlencoded body.
    var fields: [String: FormField] = [:]

    // The glue's bookkeeping (libmicrohttpd's thread only).
    var postProcessor: OpaquePointer?
    var bodyLimit = 0
    var received = 0
    var reservedBytes = 0
    /// An answer decided while the body was still arriving (e.g. a malformed form).
    var failure: HTTPResponse?
    var handler: (@Sendable (HTTPRequest) -> BodyOutcome)?
    /// An answer decided from the headers of a request without a body, sent on the next call
    /// (libmicrohttpd closes the connection after an answer queued on the first call).
    var early: Route?
    /// The body is read only to be dropped before `failure` is sent.
    var discarding = false
    var deferred = false
    var status: Int?
    /// The answer a worker produced, taken on libmicrohttpd's thread after the resume.
    private let result = Locked<HTTPResponse?>(nil)

    init(method: String, path: String, query: [String: String], authorization: String?,
         contentType: String?, contentLength: Int?, hasBody: Bool) {
        self.method = method
        self.path = path
        self.query = query
        self.authorization = authorization
        self.contentType = contentType
        self.contentLength = contentLength
        self.hasBody = hasBody
        started = monotonicNanoseconds()
    }

    func setResult(_ response: HTTPResponse) { result.withLock { $0 = response } }
    func takeResult() -> HTTPResponse? { result.withLock { r in defer { r = nil }; return r } }

    /// Whether the body is read as a form (into `fields`, by libmicrohttpd's post processor):
    /// multipart/form-data, and application/x-www-form-urlencoded where the route says so
    /// (elsewhere it is curl's default type for any --data-binary, so the body is taken as is).
    var isForm = false

    func hasContentType(_ prefix: String) -> Bool { contentType?.lowercased().hasPrefix(prefix) ?? false }
}

/// A connection of libmicrohttpd, to suspend while its answer is not ready and resume after.
struct HTTPConnection: @unchecked Sendable, Hashable {
    let raw: OpaquePointer
    /// Only from the access handler or a content reader (libmicrohttpd's rule).
    func suspend() { MHD_suspend_connection(raw) }
    /// From any thread, once per suspend.
    func resume() { MHD_resume_connection(raw) }
}

/// What a streamed body's `read` did.
enum StreamRead {
    /// Wrote this many bytes (more than 0).
    case bytes(Int)
    /// Nothing to write now: the body suspended the connection and will resume it.
    case waiting
    /// The stream is over.
    case end
}

/// A body written as it is produced (MJPEG, server-sent events, NDJSON), on libmicrohttpd's
/// thread whenever the client can take more.
protocol StreamBody: AnyObject, Sendable {
    /// Fills `buffer` with up to its size of bytes, or suspends `connection` until there are some.
    func read(into buffer: UnsafeMutableRawBufferPointer, connection: HTTPConnection) -> StreamRead
    /// The connection is gone; no more reads.
    func closed()
}

/// What happens once a request's body is complete.
enum BodyOutcome {
    /// Answer at once.
    case respond(HTTPResponse)
    /// The answer comes later: the server suspends the connection, then calls `start`, whose
    /// argument delivers the answer (from any thread, exactly once).
    case later(start: @Sendable (_ deliver: @escaping @Sendable (HTTPResponse) -> Void) -> Void)
}

/// What a request's headers lead to.
enum Route {
    case respond(HTTPResponse)
    case stream(contentType: String, headers: [(String, String)], body: StreamBody)
    /// Read the body (at most `limit` bytes; a multipart form, or with `urlEncoded` also a
    /// URL-encoded one, into fields), then call `handler`.
    case readBody(limit: Int, urlEncoded: Bool = false, handler: @Sendable (HTTPRequest) -> BodyOutcome)
}

/// The server's application: routes requests and hears how each ended.
protocol HTTPApplication: AnyObject, Sendable {
    func route(_ request: HTTPRequest) -> Route
    /// The request is over: `status` is what was sent, or nil when the connection ended first.
    func finished(_ request: HTTPRequest, status: Int?)
    /// A reason a connection was dropped without an answer (a timeout, a body over the limit).
    func dropped(reason: String)
    /// A line of libmicrohttpd's error log.
    func libraryLogged(_ line: String)
}
