/// The head of an HTTP/1.1 request or response: start line and header fields (RFC 9112), as exchanged
/// in the WebSocket opening handshake.
public struct HTTPHead: Sendable {
    /// The first line without its line ending, e.g. `"GET /chat HTTP/1.1"` or `"HTTP/1.1 101 Switching Protocols"`.
    public var startLine: String
    /// The request method (`"GET"`), nil for a response.
    public var method: String?
    /// The request target (`"/chat?room=1"`), nil for a response.
    public var path: String?
    /// The response status code (`101`), nil for a request.
    public var status: Int?
    /// The header fields in the order received, names as sent, values without surrounding whitespace.
    public var headers: [(name: String, value: String)]
    /// A plain request's body (its `Content-Length` bytes, at most the server's message limit), as
    /// handed to an ``HTTPResponder``; empty for a request without one and for every handshake.
    public var body: [UInt8] = []

    /// Creates a head from its parts.
    public init(startLine: String, method: String? = nil, path: String? = nil, status: Int? = nil,
                headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.startLine = startLine
        self.method = method
        self.path = path
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of the first header named `name` (compared case-insensitively), or nil.
    public func value(for name: String) -> String? {
        headers.first(where: { Self.equalsIgnoringCase($0.name, name) })?.value
    }

    /// All values of headers named `name` (case-insensitive), in order.
    public func values(for name: String) -> [String] {
        headers.filter { Self.equalsIgnoringCase($0.name, name) }.map(\.value)
    }

    /// The comma-separated tokens of every header named `name`, trimmed and lowercased
    /// (e.g. `Connection: keep-alive, Upgrade` gives `["keep-alive", "upgrade"]`).
    public func tokens(for name: String) -> [String] {
        values(for: name).flatMap { value in
            value.split(separator: ",").map { $0.trimmingHTTPWhitespace().lowercasedASCII() }.filter { !$0.isEmpty }
        }
    }

    /// Parses a request head (`"GET /path HTTP/1.1"` + headers). The bytes may end with or without the blank line.
    public static func parseRequest(_ bytes: [UInt8]) throws(WebSocketError) -> HTTPHead {
        var head = try parseFields(bytes)
        let parts = head.startLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, parts[2].hasPrefix("HTTP/"),
            parts[0].utf8.allSatisfy(isTokenByte)
        else {
            throw .invalidHandshake("malformed request line '\(head.startLine.prefix(200))'")
        }
        head.method = String(parts[0])
        head.path = String(parts[1])
        return head
    }

    /// Parses a response head (`"HTTP/1.1 101 Switching Protocols"` + headers).
    public static func parseResponse(_ bytes: [UInt8]) throws(WebSocketError) -> HTTPHead {
        var head = try parseFields(bytes)
        let parts = head.startLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), parts[1].utf8.count == 3,
            let status = Int(parts[1]), status >= 100
        else {
            throw .invalidHandshake("malformed status line '\(head.startLine.prefix(200))'")
        }
        head.status = status
        return head
    }

    /// Splits the head into lines (CRLF, or bare LF leniently) and parses `name: value` fields.
    private static func parseFields(_ bytes: [UInt8]) throws(WebSocketError) -> HTTPHead {
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "\n") {
                var end = i
                if end > start, bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                lines.append(bytes[start..<end])
                start = i + 1
            }
            i += 1
        }
        if start < bytes.count { lines.append(bytes[start...]) }
        // Drop the blank line that ends the head and anything after it.
        if let blank = lines.firstIndex(where: \.isEmpty) { lines.removeSubrange(blank...) }
        guard let first = lines.first else { throw .invalidHandshake("empty HTTP head") }
        guard first.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else {
            throw .invalidHandshake("control characters in the HTTP start line")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard line.first != UInt8(ascii: " "), line.first != UInt8(ascii: "\t") else {
                throw .invalidHandshake("obsolete folded header line")
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                throw .invalidHandshake("header line without ':' ('\(String(decoding: line.prefix(100), as: UTF8.self))')")
            }
            let name = line[line.startIndex..<colon]
            guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
                throw .invalidHandshake("invalid header name '\(String(decoding: name.prefix(100), as: UTF8.self))'")
            }
            var value = line[(colon + 1)...]
            while let f = value.first, f == 0x20 || f == 0x09 { value = value.dropFirst() }
            while let l = value.last, l == 0x20 || l == 0x09 { value = value.dropLast() }
            guard value.allSatisfy({ $0 >= 0x20 || $0 == 0x09 }), !value.contains(0x7F) else {
                throw .invalidHandshake("control characters in header '\(String(decoding: name, as: UTF8.self))'")
            }
            headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
        return HTTPHead(startLine: String(decoding: first, as: UTF8.self), headers: headers)
    }

    /// RFC 9110 `tchar`.
    static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(b)
        }
    }

    static func equalsIgnoringCase(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a.lowercasedASCII() == b.lowercasedASCII()
    }
}

extension HTTPHead: Equatable {
    /// Heads are equal when start line, parsed parts and headers (in order) are equal.
    public static func == (lhs: HTTPHead, rhs: HTTPHead) -> Bool {
        lhs.startLine == rhs.startLine && lhs.method == rhs.method && lhs.path == rhs.path
            && lhs.status == rhs.status && lhs.body == rhs.body && lhs.headers.elementsEqual(rhs.headers, by: { $0.name == $1.name && $0.value == $1.value })
    }
}

extension StringProtocol {
    func trimmingHTTPWhitespace() -> Substring {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return s
    }

    func lowercasedASCII() -> String {
        String(decoding: utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
