/// A parsed `ws://` or `wss://` URL: where to connect, whether over TLS, and what to ask for.
///
/// Accepts host names, IPv4 literals and bracketed IPv6 literals (`ws://[::1]:8080/x?y=1`).
public struct WebSocketURL: Sendable, Equatable, CustomStringConvertible {
    /// The host name or address literal, without brackets for IPv6 (e.g. `"::1"`).
    public let host: String
    /// The TCP port (80 for `ws://`, 443 for `wss://` when the URL names none).
    public let port: UInt16
    /// The request target: path plus `?query` if any, at least `"/"`. Fragments are dropped.
    public let path: String
    /// Whether `host` is an IPv6 literal (it was written in brackets).
    public let isIPv6: Bool
    /// Whether the URL is `wss://` (TLS).
    public let isSecure: Bool

    /// Parses a WebSocket URL.
    /// - Throws: `WebSocketError.unsupportedScheme` for schemes other than `ws` and `wss`,
    ///   `WebSocketError.invalidURL` for anything malformed.
    public init(_ string: String) throws(WebSocketError) {
        let trimmed = string.trimmingASCIIWhitespace()
        guard let schemeEnd = trimmed.firstRange(of: "://") else {
            throw .invalidURL("'\(string)' has no scheme; expected ws://host[:port][/path]")
        }
        let scheme = trimmed[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "ws" || scheme == "wss" else {
            if scheme.isEmpty || !scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }) {
                throw .invalidURL("'\(string)' has a malformed scheme; expected ws://host[:port][/path]")
            }
            throw .unsupportedScheme(scheme)
        }
        var rest = trimmed[schemeEnd.upperBound...]
        // Drop a fragment: it is never sent.
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var target = String(rest[authorityEnd...])
        if target.isEmpty || target.first == "?" { target = "/" + target }
        guard !authority.contains("@") else {
            throw .invalidURL("'\(string)' contains user info, which WebSocket URLs do not support")
        }
        guard !authority.isEmpty else { throw .invalidURL("'\(string)' has no host") }

        var hostPart: Substring
        var portPart: Substring?
        var ipv6 = false
        if authority.first == "[" {
            guard let close = authority.firstIndex(of: "]") else {
                throw .invalidURL("'\(string)' has an IPv6 address without a closing ']'")
            }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.first == ":" else {
                    throw .invalidURL("'\(string)' has unexpected characters after the IPv6 address")
                }
                portPart = after.dropFirst()
            }
            guard Self.isIPv6Literal(hostPart) else {
                throw .invalidURL("'\(hostPart)' is not a valid IPv6 address")
            }
            ipv6 = true
        } else {
            if let colon = authority.firstIndex(of: ":") {
                hostPart = authority[..<colon]
                portPart = authority[authority.index(after: colon)...]
            } else {
                hostPart = authority
            }
            guard !hostPart.isEmpty else { throw .invalidURL("'\(string)' has no host") }
            guard Self.isHostName(hostPart) else {
                throw .invalidURL("'\(hostPart)' is not a valid host name or IPv4 address")
            }
        }
        let secure = scheme == "wss"
        var port: UInt16 = secure ? 443 : 80
        if let portPart {
            guard !portPart.isEmpty, portPart.utf8.count <= 5, portPart.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let value = UInt16(portPart), value != 0
            else {
                throw .invalidURL("'\(portPart)' is not a valid port (1-65535)")
            }
            port = value
        }
        guard target.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            throw .invalidURL("'\(string)' has spaces or control characters in its path; percent-encode them")
        }
        self.host = ipv6 ? String(hostPart) : String(hostPart).lowercased()
        self.port = port
        self.path = target
        self.isIPv6 = ipv6
        self.isSecure = secure
    }

    /// The value for the request's `Host` header: the host (bracketed for IPv6) plus `:port` unless it is
    /// the scheme's default.
    public var hostHeader: String {
        let h = isIPv6 ? "[\(host)]" : host
        return port == defaultPort ? h : "\(h):\(port)"
    }

    private var defaultPort: UInt16 { isSecure ? 443 : 80 }

    /// The URL written back out, e.g. `"ws://[::1]:8080/chat?room=1"`.
    public var description: String {
        let h = isIPv6 ? "[\(host)]" : host
        let scheme = isSecure ? "wss" : "ws"
        return port == defaultPort ? "\(scheme)://\(h)\(path)" : "\(scheme)://\(h):\(port)\(path)"
    }

    /// Letters, digits, '-', '.', '_' (host names and dotted IPv4).
    private static func isHostName(_ s: Substring) -> Bool {
        guard s.utf8.count <= 253 else { return false }
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
                continue
            default:
                return false
            }
        }
        // Labels must be non-empty (a single trailing dot is allowed).
        let labels = s.split(separator: ".", omittingEmptySubsequences: false)
        for (i, label) in labels.enumerated() where label.isEmpty {
            if !(i == labels.count - 1 && labels.count > 1) { return false }
        }
        // All-numeric dotted names must be a real IPv4 address.
        if s.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: ".") }) {
            return isIPv4Literal(s)
        }
        return true
    }

    private static func isIPv4Literal(_ s: Substring) -> Bool {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        for part in parts {
            guard !part.isEmpty, part.utf8.count <= 3, let v = Int(part), v <= 255 else { return false }
        }
        return true
    }

    /// RFC 4291 text form: up to 8 groups of 1–4 hex digits, at most one `::`, an optional trailing
    /// dotted IPv4 part, and an optional `%zone`.
    private static func isIPv6Literal(_ full: Substring) -> Bool {
        var s = full
        if let pct = s.firstIndex(of: "%") {
            let zone = s[s.index(after: pct)...]
            guard !zone.isEmpty, zone.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._".contains($0)) })
            else { return false }
            s = s[..<pct]
        }
        /// Counts the 16-bit groups in a colon-separated run with no empty groups; nil if malformed.
        func groupCount(_ run: Substring, mayEndWithIPv4: Bool) -> Int? {
            if run.isEmpty { return 0 }
            let groups = run.split(separator: ":", omittingEmptySubsequences: false)
            var count = 0
            for (i, group) in groups.enumerated() {
                if mayEndWithIPv4, i == groups.count - 1, group.contains(".") {
                    guard isIPv4Literal(group) else { return nil }
                    count += 2
                } else {
                    guard !group.isEmpty, group.utf8.count <= 4, group.allSatisfy(\.isHexDigit) else { return nil }
                    count += 1
                }
            }
            return count
        }
        if let gap = s.firstRange(of: "::") {
            let left = s[..<gap.lowerBound]
            let right = s[gap.upperBound...]
            guard right.firstRange(of: "::") == nil,
                let l = groupCount(left, mayEndWithIPv4: false),
                let r = groupCount(right, mayEndWithIPv4: true)
            else { return false }
            return l + r <= 7
        }
        return groupCount(s, mayEndWithIPv4: true) == 8
    }
}

extension String {
    fileprivate func trimmingASCIIWhitespace() -> Substring {
        var s = self[...]
        while let f = s.first, f == " " || f == "\t" || f == "\n" || f == "\r" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\n" || l == "\r" { s = s.dropLast() }
        return s
    }
}
