import ContrailWebSocket
import Foundation

/// The HTTP/1.1 client of `contrail admin`: one request per connection (the server answers with
/// `Connection: close`), over plain TCP to `http://HOST:PORT` (reach a TLS-only or remote server
/// through an SSH tunnel: the admin token must not cross a network in clear text).
struct AdminHTTPClient {
    /// A response: status and body.
    struct Response {
        let status: Int
        let body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    let host: String
    let port: UInt16
    /// The admin credential, sent as `Authorization: Bearer`.
    let token: String

    /// Reads `http://host:port` (or `ws://`; a path is ignored).
    init(url: String, token: String) throws {
        var rest = Substring(url)
        for scheme in ["http://", "ws://"] where rest.hasPrefix(scheme) { rest = rest.dropFirst(scheme.count) }
        guard !rest.hasPrefix("https://"), !rest.hasPrefix("wss://"), !rest.contains("://") else {
            throw CLIError.usage("--server: '\(url)' is not http://HOST:PORT (for a TLS server, tunnel to its port: ssh -L)")
        }
        let authority = rest.prefix { $0 != "/" }
        let hostPart: Substring
        var port: UInt16 = 80
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { guard let parsed = UInt16(after.dropFirst()) else { throw CLIError.usage("--server: bad port in '\(url)'") }; port = parsed }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            guard let parsed = UInt16(authority[authority.index(after: colon)...]) else { throw CLIError.usage("--server: bad port in '\(url)'") }
            port = parsed
        } else {
            hostPart = authority
        }
        guard !hostPart.isEmpty else { throw CLIError.usage("--server: no host in '\(url)'") }
        self.host = String(hostPart)
        self.port = port
        self.token = token
    }

    /// Sends `method path` with `body` (JSON) and reads the whole response.
    func request(_ method: String, _ path: String, body: [UInt8] = []) async throws -> Response {
        let connection = try await TCPConnection.connect(host: host, port: port)
        let head = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nAuthorization: Bearer \(token)\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        try await connection.send(Array(head.utf8) + body)
        var received: [UInt8] = []
        while let chunk = try await connection.receive() { received += chunk }
        await connection.close()
        guard let end = received.indices.first(where: { $0 + 3 < received.count && received[$0...$0 + 3].elementsEqual([13, 10, 13, 10]) }),
              let statusLine = String(decoding: received[..<end], as: UTF8.self).split(separator: "\r\n").first,
              let status = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else {
            throw CLIError.usage("\(host):\(port) did not answer with HTTP (is it a contrail serve?)")
        }
        return Response(status: status, body: Array(received[(end + 4)...]))
    }
}
