// libmicrohttpd's callbacks (C function pointers; `cls` is the server, the request or a
// collector) and the objects they fill.
import CMicroHTTPD
import YOLOCore

/// A streamed body and its connection, owned by libmicrohttpd's response until it frees it.
final class StreamBox {
    let body: StreamBody
    let connection: HTTPConnection
    init(body: StreamBody, connection: HTTPConnection) { self.body = body; self.connection = connection }
}

/// Query arguments as libmicrohttpd reports them (decoded); at most HTTPServer.maxQueryArguments.
final class QueryArguments {
    var values: [String: String] = [:]
}

/// A request's headers as libmicrohttpd reports them, in order, repeated ones included.
final class HeaderList {
    var fields: [(name: String, value: String)] = []
    func first(_ name: String) -> String? {
        fields.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

// MARK: - libmicrohttpd's callbacks (C function pointers; `cls` is the server, the request or a collector)

func onAccess(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
              _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ data: UnsafePointer<CChar>?,
              _ size: UnsafeMutablePointer<Int>?, _ state: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> MHD_Result {
    guard let cls, let connection, let size, let state else { return .NO }
    return Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
        .access(connection, url: url, method: method, version: version, data: data, size: size, state: state)
}

func onCompleted(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                 _ state: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_RequestTerminationCode) {
    guard let cls else { return }
    Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
        .completed(connection, state: state)
}

func onConnection(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                  _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                  _ code: MHD_ConnectionNotificationCode) {
    guard let cls, let connection else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    if code == .CONNECTION_NOTIFY_STARTED { server.connections.opened(connection) }
    else { server.connections.closed(connection) }
}

func onQueryArgument(_ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?,
                     _ value: UnsafePointer<CChar>?) -> MHD_Result {
    guard let cls, let key else { return .YES }
    let query = Unmanaged<QueryArguments>.fromOpaque(cls).takeUnretainedValue()
    if query.values.count < HTTPServer.maxQueryArguments { query.values[String(cString: key)] = value.map { String(cString: $0) } ?? "" }
    return .YES
}

func onHeader(_ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?,
              _ value: UnsafePointer<CChar>?) -> MHD_Result {
    guard let cls, let key else { return .YES }
    Unmanaged<HeaderList>.fromOpaque(cls).takeUnretainedValue().fields
        .append((String(cString: key), value.map { String(cString: $0) } ?? ""))
    return .YES
}

func onLibraryLog(_ cls: UnsafeMutableRawPointer?, _ line: UnsafePointer<CChar>?) {
    guard let cls, let line else { return }
    Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().libraryLogged(String(cString: line))
}

/// libmicrohttpd's accept policy: ConnectionGuard's per-address cap.
func onAcceptPolicy(_ cls: UnsafeMutableRawPointer?, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> MHD_Result {
    guard let cls else { return .YES }
    return Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().connections.admits(address) ? .YES : .NO
}

/// The request's URI before libmicrohttpd parses its query. libmicrohttpd 0.9.75 never answers
/// a request whose query arguments exhaust the connection's memory (it replaces the 431 it
/// queued by waiting for more headers), so a query of more than HTTPServer.maxQueryArguments is
/// cut here, in libmicrohttpd's own (writable) buffer, and its count handed to the access handler,
/// which answers 414.
func onURI(_ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?, _ connection: OpaquePointer?) -> UnsafeMutableRawPointer? {
    guard let uri, let mark = UnsafePointer(strchr(uri, Int32(UInt8(ascii: "?")))) else { return nil }
    var count = 1, p = mark + 1
    while p.pointee != 0 {
        if p.pointee == CChar(UInt8(ascii: "&")) { count += 1 }
        p += 1
    }
    guard count > HTTPServer.maxQueryArguments else { return nil }
    UnsafeMutablePointer(mutating: mark + 1).pointee = 0
    return HTTPServer.cutQuery(count: count)
}

func onFormField(_ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?,
                 _ filename: UnsafePointer<CChar>?, _ contentType: UnsafePointer<CChar>?,
                 _ transferEncoding: UnsafePointer<CChar>?, _ data: UnsafePointer<CChar>?,
                 _ offset: UInt64, _ size: Int) -> MHD_Result {
    guard let cls, let key else { return .YES }
    let request = Unmanaged<HTTPRequest>.fromOpaque(cls).takeUnretainedValue()
    let name = String(cString: key)
    if request.fields[name] == nil && request.fields.count >= HTTPServer.maxFormFields {
        request.failure = .error(400, "too many form fields (the limit is \(HTTPServer.maxFormFields))")
        return .NO
    }
    if let filename, request.fields[name]?.filename == nil { request.fields[name, default: FormField()].filename = String(cString: filename) }
    let isFile = filename != nil || name == "image"
    let cap = isFile ? request.bodyLimit : HTTPServer.smallFieldLimit
    if (request.fields[name]?.value.count ?? 0) + size > cap {
        request.failure = .error(isFile ? 413 : 400, "the form field '\(name)' is over its limit of \(cap) bytes")
        return .NO
    }
    if size > 0, let data {
        request.fields[name, default: FormField()].value.append(contentsOf: UnsafeRawBufferPointer(start: data, count: size))
    } else if request.fields[name] == nil {
        request.fields[name] = FormField()
    }
    return .YES
}

func onStreamRead(_ cls: UnsafeMutableRawPointer?, _ position: UInt64, _ buffer: UnsafeMutablePointer<CChar>?,
                  _ max: Int) -> Int {
    guard let cls, let buffer else { return -2 }
    let box = Unmanaged<StreamBox>.fromOpaque(cls).takeUnretainedValue()
    switch box.body.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: max), connection: box.connection) {
    case .bytes(let n): return n
    case .waiting: return 0
    case .end: return -1  // MHD_CONTENT_READER_END_OF_STREAM
    }
}

func onStreamFree(_ cls: UnsafeMutableRawPointer?) {
    guard let cls else { return }
    let box = Unmanaged<StreamBox>.fromOpaque(cls).takeRetainedValue()
    box.body.closed()
}
