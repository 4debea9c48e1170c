/// The address of one NATS server: `nats://host:port`, or `tls://host:port` for TLS (the port defaults
/// to 4222).
public struct NATSServerURL: Sendable, Hashable, CustomStringConvertible {
    /// The host name or IP address.
    public var host: String
    /// The TCP port.
    public var port: UInt16
    /// Whether the connection must be TLS (`tls://`), the certificate verified against `host`.
    public var isSecure: Bool

    /// Creates an address from its parts.
    public init(host: String, port: UInt16 = 4222, isSecure: Bool = false) {
        self.host = host
        self.port = port
        self.isSecure = isSecure
    }

    /// Parses `nats://host:port`, `tls://host:port`, `host:port` or `host`.
    /// - Throws: `credentialsInURL` for a user/password or token part (give them in
    ///   `NATSOptions.credentials`), `invalidURL` for another scheme, an empty host or a bad port.
    public init(parsing text: String) throws(NATSError) {
        // Never echo a URL with credentials: the error may be logged.
        guard !text.contains("@") else { throw .credentialsInURL }
        var rest = Substring(text.trimmingSpaces())
        var isSecure = false
        if let range = rest.range(of: "://") {
            let scheme = rest[..<range.lowerBound].lowercased()
            guard scheme == "nats" || scheme == "tls" else {
                throw .invalidURL("unsupported scheme '\(scheme)' in '\(text)' (nats:// or tls://)")
            }
            isSecure = scheme == "tls"
            rest = rest[range.upperBound...]
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/") else { throw .invalidURL("'\(text)': paths are not supported") }
        var host = rest
        var port: UInt16 = 4222
        if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
            host = rest[..<colon]
            guard let value = UInt16(rest[rest.index(after: colon)...]), value > 0 else {
                throw .invalidURL("'\(text)': bad port")
            }
            port = value
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard !host.isEmpty else { throw .invalidURL("'\(text)': empty host") }
        self.init(host: String(host), port: port, isSecure: isSecure)
    }

    /// Parses a comma-separated list of server URLs (as `--nats` takes them). O(length).
    /// - Throws: `invalidURL` for an empty list or any bad entry.
    public static func list(_ text: String) throws(NATSError) -> [NATSServerURL] {
        let parts = text.split(separator: ",").map { String($0) }.filter { !$0.trimmingSpaces().isEmpty }
        guard !parts.isEmpty else { throw .invalidURL("no server URL in '\(text)'") }
        var urls: [NATSServerURL] = []
        for part in parts { urls.append(try NATSServerURL(parsing: part)) }
        return urls
    }

    /// `nats://host:port` or `tls://host:port`.
    public var description: String {
        let scheme = isSecure ? "tls" : "nats"
        return host.contains(":") ? "\(scheme)://[\(host)]:\(port)" : "\(scheme)://\(host):\(port)"
    }
}

extension String {
    /// Without spaces, tabs, CRs and LFs at either end: lone "\n" and "\r", and "\r\n", which Swift
    /// counts as one Character equal to neither.
    func trimmingSpaces() -> String { self[...].trimming(" \t\n\r" + "\r\n") }
}
