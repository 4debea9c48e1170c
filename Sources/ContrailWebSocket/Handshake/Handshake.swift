/// The WebSocket opening handshake (RFC 6455 §4): building and checking the HTTP upgrade request
/// and response on both sides.
public enum Handshake {
    /// The GUID that RFC 6455 §1.3 appends to the client's key before hashing.
    public static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// The only protocol version this implementation speaks.
    public static let version = "13"

    /// The largest HTTP head (start line, headers and the blank line) accepted on either side: a server
    /// answers a larger request with 431, a client fails on a larger response.
    public static let maxHeadSize = 16 * 1024

    /// Beginning of the `invalidHandshake` message thrown for an unsupported `Sec-WebSocket-Version`;
    /// `rejection(for:)` answers it with 426 and the version we support.
    static let unsupportedVersionMessage = "unsupported Sec-WebSocket-Version"

    /// The `Sec-WebSocket-Accept` value for a client's `Sec-WebSocket-Key`:
    /// base64(SHA-1(key + GUID)).
    public static func acceptKey(for key: String) -> String {
        Base64.encode(SHA1.hash((key + guid).utf8))
    }

    /// A fresh `Sec-WebSocket-Key`: 16 bytes from the system CSPRNG, base64-encoded (24 characters).
    public static func makeKey() -> String {
        var rng = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        for _ in 0..<2 {
            let word: UInt64 = rng.next()
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        return Base64.encode(bytes)
    }

    // MARK: - Client side

    /// The client's upgrade request for `url`.
    ///
    /// `headers` are added after the WebSocket headers (e.g. a session token); headers whose name is not an
    /// HTTP token or whose value contains CR, LF or NUL are left out (check them first with `validate(headers:)`
    /// to get an error instead). `subprotocols`, if any, are offered in `Sec-WebSocket-Protocol`.
    public static func request(url: WebSocketURL, key: String, headers: [(String, String)], subprotocols: [String]) -> [UInt8] {
        var text = "GET \(url.path) HTTP/1.1\r\n"
        text += "Host: \(url.hostHeader)\r\n"
        text += "Upgrade: websocket\r\n"
        text += "Connection: Upgrade\r\n"
        text += "Sec-WebSocket-Key: \(key)\r\n"
        text += "Sec-WebSocket-Version: \(version)\r\n"
        let offered = subprotocols.filter(isToken)
        if !offered.isEmpty {
            text += "Sec-WebSocket-Protocol: \(offered.joined(separator: ", "))\r\n"
        }
        text += headerLines(headers)
        text += "\r\n"
        return Array(text.utf8)
    }

    /// Checks the server's response to our upgrade request.
    ///
    /// - Parameters:
    ///   - head: the response head, up to and including the blank line (see `headEnd(in:)`).
    ///   - expectedKey: the `Sec-WebSocket-Key` we sent.
    ///   - subprotocols: the subprotocols we offered; the server may pick one of them or none.
    /// - Throws: `WebSocketError.handshakeFailed(status:)` with the status line when the server answered
    ///   anything but 101; `WebSocketError.invalidHandshake` when a 101 response breaks RFC 6455 §4.1.
    public static func parseResponse(_ head: [UInt8], expectedKey: String, subprotocols: [String]) throws(WebSocketError) -> HTTPHead {
        let response = try HTTPHead.parseResponse(head)
        guard response.status == 101 else {
            throw .handshakeFailed(status: response.startLine)
        }
        guard response.startLine.hasPrefix("HTTP/1.1 ") else {
            throw .invalidHandshake("the server answered with '\(response.startLine)', expected HTTP/1.1")
        }
        guard response.tokens(for: "Upgrade").contains("websocket") else {
            throw .invalidHandshake("the response has no 'Upgrade: websocket' header")
        }
        guard response.tokens(for: "Connection").contains("upgrade") else {
            throw .invalidHandshake("the response has no 'Connection: Upgrade' header")
        }
        let accepts = response.values(for: "Sec-WebSocket-Accept")
        guard accepts.count == 1, let accept = accepts.first else {
            throw .invalidHandshake(accepts.isEmpty ? "the response has no Sec-WebSocket-Accept header"
                : "the response has several Sec-WebSocket-Accept headers")
        }
        guard accept == acceptKey(for: expectedKey) else {
            throw .invalidHandshake("Sec-WebSocket-Accept '\(accept)' does not match the key we sent")
        }
        if let extensions = response.value(for: "Sec-WebSocket-Extensions"), !extensions.isEmpty {
            throw .invalidHandshake("the server enabled extensions we did not offer ('\(extensions)')")
        }
        let chosen = response.values(for: "Sec-WebSocket-Protocol").flatMap(splitList)
        if chosen.count > 1 {
            throw .invalidHandshake("the server selected several subprotocols (\(chosen.joined(separator: ", ")))")
        }
        if let protocolName = chosen.first, !subprotocols.contains(protocolName) {
            throw .invalidHandshake("the server selected subprotocol '\(protocolName)', which we did not offer")
        }
        return response
    }

    // MARK: - Server side

    /// Parses and checks a client's upgrade request (RFC 6455 §4.2.1): method GET, HTTP/1.1 or later,
    /// a Host header, `Upgrade: websocket`, `Connection` containing the `upgrade` token (case-insensitive),
    /// `Sec-WebSocket-Version: 13`, and a `Sec-WebSocket-Key` that base64-decodes to 16 bytes.
    /// - Throws: `WebSocketError.invalidHandshake` saying what is wrong; answer it with `rejection(for:)`.
    public static func parseRequest(_ head: [UInt8]) throws(WebSocketError) -> HTTPHead {
        let request = try HTTPHead.parseRequest(head)
        guard request.method == "GET" else {
            throw .invalidHandshake("method \(request.method ?? "") instead of GET")
        }
        let httpVersion = request.startLine.split(separator: " ").last.map(String.init) ?? ""
        guard isHTTP11OrLater(httpVersion) else {
            throw .invalidHandshake("\(httpVersion) request; WebSocket needs HTTP/1.1 or later")
        }
        guard let path = request.path, path.hasPrefix("/") else {
            throw .invalidHandshake("request target '\(request.path ?? "")' is not an absolute path")
        }
        guard let host = request.value(for: "Host"), !host.isEmpty else {
            throw .invalidHandshake("the request has no Host header")
        }
        guard request.tokens(for: "Upgrade").contains("websocket") else {
            throw .invalidHandshake("the request has no 'Upgrade: websocket' header")
        }
        guard request.tokens(for: "Connection").contains("upgrade") else {
            throw .invalidHandshake("the request's Connection header does not contain 'Upgrade'")
        }
        let versions = request.values(for: "Sec-WebSocket-Version")
        guard versions == [version] else {
            throw .invalidHandshake("\(unsupportedVersionMessage) '\(versions.joined(separator: ", "))'; only 13 is supported")
        }
        let keys = request.values(for: "Sec-WebSocket-Key")
        guard keys.count == 1, let key = keys.first else {
            throw .invalidHandshake(keys.isEmpty ? "the request has no Sec-WebSocket-Key header"
                : "the request has several Sec-WebSocket-Key headers")
        }
        guard let decoded = Base64.decode(key), decoded.count == 16 else {
            throw .invalidHandshake("Sec-WebSocket-Key '\(key.prefix(64))' is not 16 base64-encoded bytes")
        }
        return request
    }

    /// The subprotocols a client offered in `Sec-WebSocket-Protocol`, in its order of preference.
    public static func requestedSubprotocols(_ request: HTTPHead) -> [String] {
        request.values(for: "Sec-WebSocket-Protocol").flatMap(splitList)
    }

    /// The server's 101 response accepting `request` (which `parseRequest` accepted).
    ///
    /// - Parameters:
    ///   - subprotocol: the subprotocol chosen from those the client offered, if any.
    ///   - extraHeaders: more headers for the response; invalid ones are left out as in `request(url:...)`.
    public static func response(for request: HTTPHead, subprotocol: String?, extraHeaders: [(String, String)]) -> [UInt8] {
        let key = request.value(for: "Sec-WebSocket-Key") ?? ""
        var text = "HTTP/1.1 101 Switching Protocols\r\n"
        text += "Upgrade: websocket\r\n"
        text += "Connection: Upgrade\r\n"
        text += "Sec-WebSocket-Accept: \(acceptKey(for: key))\r\n"
        if let subprotocol, isToken(subprotocol) {
            text += "Sec-WebSocket-Protocol: \(subprotocol)\r\n"
        }
        text += headerLines(extraHeaders)
        text += "\r\n"
        return Array(text.utf8)
    }

    /// A complete HTTP response refusing the upgrade: status line `HTTP/1.1 <status> <reason>`, the reason
    /// again as a plain-text body, and `Connection: close`. The client sees the status line in
    /// `WebSocketError.handshakeFailed(status:)`.
    public static func rejection(status: Int, reason: String) -> [UInt8] {
        rejection(status: status, reason: reason, headers: [])
    }

    /// A rejection with extra headers (e.g. `Sec-WebSocket-Version: 13` with status 426).
    public static func rejection(status: Int, reason: String, headers: [(String, String)]) -> [UInt8] {
        let code = (100...999).contains(status) ? status : 500
        // The reason phrase may not contain line breaks or other control characters.
        var phrase = String(String.UnicodeScalarView(reason.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
        if phrase.isEmpty { phrase = defaultReason(for: code) }
        let body = Array((phrase + "\n").utf8)
        var text = "HTTP/1.1 \(code) \(phrase)\r\n"
        text += "Content-Type: text/plain; charset=utf-8\r\n"
        text += "Content-Length: \(body.count)\r\n"
        text += "Connection: close\r\n"
        text += headerLines(headers)
        text += "\r\n"
        return Array(text.utf8) + body
    }

    /// The rejection to send for a request `parseRequest` refused: 426 Upgrade Required with
    /// `Sec-WebSocket-Version: 13` for a version mismatch, 400 Bad Request otherwise.
    public static func rejection(for error: WebSocketError) -> [UInt8] {
        if case .invalidHandshake(let why) = error, why.hasPrefix(unsupportedVersionMessage) {
            return rejection(status: 426, reason: "Upgrade Required", headers: [("Sec-WebSocket-Version", version)])
        }
        return rejection(status: 400, reason: "Bad Request")
    }

    /// Index just past the `\r\n\r\n` that ends an HTTP head in `bytes`, or nil if it has not arrived yet.
    public static func headEnd(in bytes: UnsafeRawBufferPointer) -> Int? {
        let count = bytes.count
        guard count >= 4 else { return nil }
        var i = 3
        while i < count {
            let b = bytes[i]
            if b == 0x0A {
                if bytes[i - 1] == 0x0D && bytes[i - 2] == 0x0A && bytes[i - 3] == 0x0D { return i + 1 }
                i += 1
            } else if b == 0x0D {
                i += 1
            } else {
                // Neither CR nor LF: no terminator can end before i + 4.
                i += 4
            }
        }
        return nil
    }

    /// Checks that extra headers can be sent: names are HTTP tokens, values have no CR, LF or NUL.
    /// - Throws: `WebSocketError.invalidHandshake` naming the first bad header.
    public static func validate(headers: [(String, String)]) throws(WebSocketError) {
        for (name, value) in headers {
            guard isToken(name) else { throw .invalidHandshake("header name '\(name)' is not a valid HTTP token") }
            guard isValidValue(value) else {
                throw .invalidHandshake("header '\(name)' has a value with line breaks or control characters")
            }
        }
    }

    // MARK: - Helpers

    private static func headerLines(_ headers: [(String, String)]) -> String {
        var text = ""
        for (name, value) in headers where isToken(name) && isValidValue(value) {
            text += "\(name): \(value)\r\n"
        }
        return text
    }

    private static func isToken(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.allSatisfy(HTTPHead.isTokenByte)
    }

    private static func isValidValue(_ s: String) -> Bool {
        s.utf8.allSatisfy { ($0 >= 0x20 && $0 != 0x7F) || $0 == 0x09 || $0 >= 0x80 }
    }

    private static func splitList(_ value: String) -> [String] {
        value.split(separator: ",").map { String($0.trimmingHTTPWhitespace()) }.filter { !$0.isEmpty }
    }

    private static func isHTTP11OrLater(_ version: String) -> Bool {
        guard version.hasPrefix("HTTP/") else { return false }
        let numbers = version.dropFirst(5).split(separator: ".", omittingEmptySubsequences: false)
        guard numbers.count == 2, let major = Int(numbers[0]), let minor = Int(numbers[1]) else { return false }
        return major > 1 || (major == 1 && minor >= 1)
    }

    private static func defaultReason(for status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 426: "Upgrade Required"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Error"
        }
    }
}
