/// A complete HTTP/1.1 response to a plain (non-upgrade) request, as produced by an
/// ``HTTPResponder`` that a ``WebSocketServer`` consults through `WebSocketOptions.httpResponder`.
///
/// ```swift
/// var options = WebSocketOptions()
/// options.httpResponder = { request in
///     request.path == "/health" ? HTTPResponse(status: 200, contentType: "text/plain", body: Array("ok\n".utf8))
///                               : HTTPResponse.error(status: 404, reason: "Not Found")
/// }
/// ```
///
/// The server writes the response and closes the connection (`Connection: close`): one request per
/// connection, which every browser handles.
public struct HTTPResponse: Sendable, Equatable {
    /// The status code, e.g. 200.
    public var status: Int
    /// The reason phrase of the status line, e.g. `"OK"`.
    public var reason: String
    /// The `Content-Type` header value.
    public var contentType: String
    /// More headers (names must be HTTP tokens; values without CR, LF or NUL, else they are left out).
    public var headers: [String: String]
    /// The body; its length is sent as `Content-Length`.
    public var body: [UInt8]

    /// A response with a body.
    public init(status: Int = 200, reason: String = "OK", contentType: String, headers: [String: String] = [:],
                body: [UInt8]) {
        self.status = status
        self.reason = reason
        self.contentType = contentType
        self.headers = headers
        self.body = body
    }

    /// A plain-text error response whose body repeats the reason, e.g. `.error(status: 404, reason: "Not Found")`.
    public static func error(status: Int, reason: String, headers: [String: String] = [:]) -> HTTPResponse {
        HTTPResponse(status: status, reason: reason, contentType: "text/plain; charset=utf-8", headers: headers,
                     body: Array("\(status) \(reason)\n".utf8))
    }

    /// The bytes on the wire: status line, headers, blank line and (unless `includeBody` is false, as
    /// for a HEAD request) the body. O(body size).
    public func serialized(includeBody: Bool = true) -> [UInt8] {
        let code = (100...999).contains(status) ? status : 500
        let phrase = String(String.UnicodeScalarView(reason.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }))
        var text = "HTTP/1.1 \(code) \(phrase)\r\n"
        var fields: [(String, String)] = [("Content-Type", contentType), ("Content-Length", "\(body.count)"),
                                          ("Connection", "close")]
        fields += headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        for (name, value) in fields where !name.isEmpty && name.utf8.allSatisfy(HTTPHead.isTokenByte)
            && value.utf8.allSatisfy({ ($0 >= 0x20 && $0 != 0x7F) || $0 == 0x09 || $0 >= 0x80 })
        {
            text += "\(name): \(value)\r\n"
        }
        text += "\r\n"
        var bytes = Array(text.utf8)
        if includeBody { bytes += body }
        return bytes
    }
}

/// Answers a plain HTTP request (one without `Upgrade: websocket`) that reached a ``WebSocketServer``.
/// It runs as a task off the event loop, so it may await (e.g. an actor's state).
public typealias HTTPResponder = @Sendable (HTTPHead) async -> HTTPResponse

/// Decides whether a plain HTTP request that announces a body may send it, from its head alone
/// (e.g. its credential): a response refuses the request at once and its body is never read; nil
/// lets the body be read and the request go to the ``HTTPResponder``. Runs off the event loop.
public typealias HTTPBodyGate = @Sendable (HTTPHead) async -> HTTPResponse?
