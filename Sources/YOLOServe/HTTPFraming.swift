// A request as its headers say, and whether its framing can be trusted. libmicrohttpd 0.9.75
// takes Transfer-Encoding over Content-Length, the first of repeated Content-Lengths, and any
// Transfer-Encoding but "chunked" as a body read to the end of the connection: where a proxy in
// front reads the framing otherwise, the bytes one of them takes for a body the other takes for
// the next request (request smuggling). So the framing is refused unless it is unambiguous
// (RFC 9112 6.1 and 6.3), and the connection closed after the refusal.
import CMicroHTTPD
import YOLOCore

extension HTTPServer {
    /// More query arguments than any endpoint takes is refused (414).
    static let maxQueryArguments = 64

    /// onURI's result for a query of `count` arguments it cut short: an odd address, which no
    /// HTTPRequest (an object, aligned) has.
    static func cutQuery(count: Int) -> UnsafeMutableRawPointer? { UnsafeMutableRawPointer(bitPattern: count << 4 | 1) }

    /// The count of a query cut short, when `state` is onURI's result rather than a request.
    static func cutQuery(_ state: UnsafeMutableRawPointer) -> Int? {
        let bits = Int(bitPattern: state)
        return bits & 1 == 1 ? bits >> 4 : nil
    }

    func makeRequest(_ c: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
                     version: UnsafePointer<CChar>?, queryArguments cut: Int?) -> HTTPRequest {
        let headers = HeaderList()
        MHD_get_connection_values(c, .HEADER_KIND, onHeader, Unmanaged.passUnretained(headers).toOpaque())
        let query = QueryArguments()
        MHD_get_connection_values(c, .GET_ARGUMENT_KIND, onQueryArgument, Unmanaged.passUnretained(query).toOpaque())
        let length = headers.first("Content-Length").flatMap { Int($0) }
        let request = HTTPRequest(method: method.map { String(cString: $0) } ?? "", path: url.map { String(cString: $0) } ?? "/",
                                  query: query.values, authorization: headers.first("Authorization"),
                                  contentType: headers.first("Content-Type"), contentLength: length,
                                  hasBody: (length ?? 0) > 0 || headers.first("Transfer-Encoding") != nil)
        request.host = headers.first("Host")
        request.origin = headers.first("Origin")
        request.fetchSite = headers.first("Sec-Fetch-Site")
        if let cut {
            request.refusal = .error(414, "the query has \(cut) arguments; the limit is \(Self.maxQueryArguments)")
            request.refusal?.closes = true
        } else {
            request.refusal = Self.framingProblem(headers.fields, version: version.map { String(cString: $0) } ?? "")
        }
        return request
    }

    /// Why a request's body cannot be delimited without doubt, as its answer (which closes the
    /// connection); nil when its framing is sound.
    static func framingProblem(_ headers: [(name: String, value: String)], version: String) -> HTTPResponse? {
        func refuse(_ status: Int, _ message: String) -> HTTPResponse {
            var r = HTTPResponse.error(status, message)
            r.closes = true
            return r
        }
        func shown(_ s: String) -> String { s.count > 80 ? "'\(s.prefix(80))...'" : "'\(s)'" }
        let token = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        if let bad = headers.first(where: { $0.name.isEmpty || !$0.name.allSatisfy(token.contains) }) {
            return refuse(400, "malformed header name \(shown(bad.name)) (a space before the colon?)")
        }
        let lengths = headers.filter { $0.name.lowercased() == "content-length" }.map(\.value)
        let codings = headers.filter { $0.name.lowercased() == "transfer-encoding" }.map(\.value)
        if lengths.count > 1 {
            return refuse(400, "Content-Length is given \(lengths.count) times (\(lengths.map(shown).joined(separator: ", "))): "
                               + "the body's length is ambiguous")
        }
        if let l = lengths.first, l.isEmpty || !l.allSatisfy({ $0.isASCII && $0.isNumber }) {
            return refuse(400, "Content-Length \(shown(l)) is not a number of bytes")
        }
        guard let coding = codings.first else { return nil }
        if codings.count > 1 {
            return refuse(400, "Transfer-Encoding is given \(codings.count) times: send it once, as 'chunked'")
        }
        if !lengths.isEmpty {
            return refuse(400, "both Content-Length and Transfer-Encoding: the body's length is ambiguous "
                               + "(RFC 9112 6.3); send one of them")
        }
        if version == "HTTP/1.0" {
            return refuse(400, "Transfer-Encoding in an HTTP/1.0 request (RFC 9112 6.1): send Content-Length")
        }
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        if String(coding.drop(while: blank).reversed().drop(while: blank).reversed()).lowercased() != "chunked" {
            return refuse(501, "Transfer-Encoding \(shown(coding)) is not supported: send the body with Content-Length, "
                               + "or with 'Transfer-Encoding: chunked' alone")
        }
        return nil
    }
}
