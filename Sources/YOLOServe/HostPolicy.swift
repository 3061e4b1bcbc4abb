// Which Host headers and Origins the server answers. A web page the user opens may make the
// browser send requests here: a form's POST (no CORS preflight) reaches a loopback-only server,
// and a page whose name it rebinds to 127.0.0.1 (DNS rebinding) may even read the answers, the
// camera's stream included; only the Host header then names the attacker's site. So a request
// must name this server in its Host (as the address it listens on permits), and a request that
// changes something must not come from another site's page (its Origin, which browsers send).
import CMicroHTTPD
import YOLOCore

public struct HostPolicy: Sendable {
    /// What the server listens on, which decides the names it is reached by.
    enum Bind: Sendable, Equatable { case loopback, address([UInt8]), wildcard }
    let bind: Bind
    /// Lowercased host names (no port); "*" allows any.
    let allowed: Set<String>

    /// `listen`: the address listened on (as --listen gives it); `allowed`: more names (--allow-host).
    public init(listen: String, allowed: [String]) {
        let address = Self.ipAddress(listen == "localhost" ? "127.0.0.1" : listen)
        if let a = address, Self.isLoopback(a) { bind = .loopback }
        else if let a = address, a.allSatisfy({ $0 == 0 }) || a == [UInt8](repeating: 0, count: 10) + [0xff, 0xff, 0, 0, 0, 0] {
            bind = .wildcard
        } else { bind = .address(address ?? []) }
        self.allowed = Set(allowed.map { Self.normalized($0) })
    }

    /// The problem with a request's Host header, nil when it names this server: on a loopback
    /// bind localhost, 127.x.x.x or [::1]; on another address that address (or a loopback name);
    /// on a wildcard bind any host, unless --allow-host is given (then those, loopback names and
    /// IP addresses, which no rebinding page can be reached by); and always the --allow-host names.
    /// Any port. A request without Host (HTTP/1.0) is not a browser's.
    public func hostProblem(_ header: String?) -> (status: Int, message: String)? {
        guard let header else { return nil }
        guard let (name, _) = Self.authority(header) else {
            return (400, "malformed Host header '\(header.prefix(100))': expected NAME or NAME:PORT")
        }
        if allowed.contains("*") || allowed.contains(name) { return nil }
        let ip = Self.ipAddress(name)
        let loopbackName = name == "localhost" || ip.map(Self.isLoopback) == true
        switch bind {
        case .loopback where loopbackName: return nil
        case .address(let a) where loopbackName || ip == a: return nil
        case .wildcard where allowed.isEmpty || loopbackName || ip != nil: return nil
        default:
            let listening: String
            switch bind {
            case .loopback: listening = "on loopback this server answers only localhost, 127.0.0.1 and [::1]"
            case .address: listening = "this server answers only the address it listens on and loopback names"
            case .wildcard: listening = "this server answers only IP addresses, localhost and its --allow-host names"
            }
            return (403, "Host '\(header.prefix(100))' is not allowed: \(listening); to reach it by that name, "
                + "start it with --allow-host \(name.prefix(100)) (a page of another site can make a browser send such requests)")
        }
    }

    /// Why `name` cannot be an --allow-host value (a host name or IP address without a port,
    /// or "*"); nil when it can.
    public static func allowedHostProblem(_ name: String) -> String? {
        if name == "*" { return nil }
        guard let (_, port) = authority(name), port == nil, !name.contains("/") else {
            return "'\(name)': expected a host name or IP address without a port (e.g. camera.lan, 192.168.1.20), or *"
        }
        return nil
    }

    /// The problem with a request that changes something (POST and the like), nil when its
    /// Origin (sent by browsers) is this server's, as the Host says, or an --allow-host name.
    /// Without an Origin, a browser's own word that it is cross-site (Sec-Fetch-Site) refuses it.
    public func originProblem(origin: String?, fetchSite: String?, host: String?) -> String? {
        guard let origin else {
            guard fetchSite?.lowercased() == "cross-site" else { return nil }
            return "a cross-site request (Sec-Fetch-Site: cross-site): another site's page cannot change this server"
        }
        let lower = origin.lowercased()
        var rest = Substring(lower), defaultPort = 80
        if rest.hasPrefix("http://") { rest = rest.dropFirst(7) }
        else if rest.hasPrefix("https://") { rest = rest.dropFirst(8); defaultPort = 443 }
        else { rest = "" }
        if let (name, port) = rest.isEmpty ? nil : Self.authority(String(rest)) {
            if allowed.contains("*") || allowed.contains(name) { return nil }
            if let host, let (hostName, hostPort) = Self.authority(host),
               hostName == name, (hostPort ?? defaultPort) == (port ?? defaultPort) { return nil }
        }
        return "Origin '\(origin.prefix(100))' is not allowed: a page of another site cannot change this server "
            + "(the Origin must be this server's own, \(host.map { "http://\($0.prefix(100))" } ?? "its Host"), or an --allow-host name)"
    }

    // MARK: - Names

    /// "Name" or "name:port", IPv6 in brackets: the lowercased name without a trailing dot or
    /// brackets, and the port; nil when malformed.
    static func authority(_ text: String) -> (String, Int?)? {
        var name = Substring(text), port: Int?
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return nil }
            let after = name[name.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let p = Int(after.dropFirst()), (0...65535).contains(p) else { return nil }
                port = p
            }
            name = name[name.index(after: name.startIndex)..<close]
            guard ipAddress(String(name))?.count == 16 else { return nil }
        } else if let colon = name.firstIndex(of: ":") {
            guard let p = Int(name[name.index(after: colon)...]), (0...65535).contains(p) else { return nil }
            port = p
            name = name[..<colon]
        }
        let normalized = Self.normalized(String(name))
        guard !normalized.isEmpty, normalized.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._:".contains($0)) })
        else { return nil }
        return (normalized, port)
    }

    static func normalized(_ name: String) -> String {
        var n = name.lowercased()
        if n.hasPrefix("[") && n.hasSuffix("]") { n = String(n.dropFirst().dropLast()) }
        while n.hasSuffix(".") { n.removeLast() }
        return n
    }

    /// The 16 bytes of an IPv6 address or of an IPv4 one (IPv4-mapped); nil for a name.
    static func ipAddress(_ text: String) -> [UInt8]? {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return [UInt8](repeating: 0, count: 10) + [0xff, 0xff] + withUnsafeBytes(of: &v4) { Array($0) }
        }
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    static func isLoopback(_ a: [UInt8]) -> Bool {
        a == [UInt8](repeating: 0, count: 15) + [1] || (a.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] && a[12] == 127)
    }
}
