/// The address of one NATS server: `nats://host:port` (the port defaults to 4222).
public struct NATSServerURL: Sendable, Hashable, CustomStringConvertible {
    /// The host name or IP address.
    public var host: String
    /// The TCP port.
    public var port: UInt16

    /// Creates an address from its parts.
    public init(host: String, port: UInt16 = 4222) {
        self.host = host
        self.port = port
    }

    /// Parses `nats://host:port`, `host:port` or `host`.
    /// - Throws: `credentialsInURL` for a user/password or token part (give them in
    ///   `NATSOptions.credentials`), `invalidURL` for another scheme, an empty host or a bad port.
    public init(parsing text: String) throws(NATSError) {
        // Never echo a URL with credentials: the error may be logged.
        guard !text.contains("@") else { throw .credentialsInURL }
        var rest = Substring(text.trimmingSpaces())
        if let range = rest.range(of: "://") {
            let scheme = rest[..<range.lowerBound].lowercased()
            guard scheme == "nats" else {
                // tls:// waits for TLS to NATS (the handshake's seam: `NATSConnection.handshake`).
                throw .invalidURL("unsupported scheme '\(scheme)' in '\(text)' (only nats://)")
            }
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
        self.init(host: String(host), port: port)
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

    /// `nats://host:port`.
    public var description: String { host.contains(":") ? "nats://[\(host)]:\(port)" : "nats://\(host):\(port)" }
}

extension String {
    func trimmingSpaces() -> String { self[...].trimming(" \t\r\n") }
}
