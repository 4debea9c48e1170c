import ContrailWire
import ContrailTransport
import ContrailWebSocket
import Foundation
import Synchronization

/// The server's WebSocket front door: accepts upgrades on any path and hands each connection to
/// the server with its connect-time parameters (§1.3): the request headers, plus every
/// `x-jetstream-*` query parameter as a header (a query value overrides a header of that name).
final class WebSocketListener: Sendable {
    private let server: WebSocketServer
    private let started = Atomic<Bool>(false)

    init(host: String, port: UInt16, maxMessageBytes: Int, handshakeTimeout: Duration, httpResponder: HTTPResponder? = nil, httpBodyGate: HTTPBodyGate? = nil,
         tls: TLSServerContext? = nil, eventLoopGroup: EventLoopGroup? = nil, log: (@Sendable (String) -> Void)? = nil) {
        var options = WebSocketOptions()
        options.eventLoopGroup = eventLoopGroup
        if let log { options.log = log }
        options.httpResponder = httpResponder
        options.httpBodyGate = httpBodyGate
        options.serverTLS = tls
        options.maxMessageSize = maxMessageBytes
        options.maxFrameSize = maxMessageBytes
        options.handshakeTimeout = handshakeTimeout
        // A session dropped for reading too slowly gets its close reason after the frames queued
        // before it (at most the write buffer): give a slow reader time to get there.
        options.closeTimeout = .seconds(30)
        server = WebSocketServer(host: host, port: port, options: options)
    }

    /// Starts listening; returns the bound port. Each accepted connection goes to `accept`.
    func start(accept: @escaping @Sendable (any SyncTransport, [(String, String)], String?) -> Void) async throws(ServerError) -> UInt16 {
        let port: UInt16
        do { port = try await server.start() } catch { throw .listener(error.description) }
        guard !started.exchange(true, ordering: .relaxed) else { return port }
        let connections = server.connections
        Task {
            for await connection in connections {
                accept(WebSocketTransport(connection), Self.parameters(of: connection), connection.remoteHost)
            }
        }
        return port
    }

    /// Stops listening and closes every connection.
    func stop() async {
        await server.stop()
    }

    /// The request headers, with `x-jetstream-*` query parameters added (overriding headers).
    static func parameters(of connection: WebSocketConnection) -> [(String, String)] {
        var headers = connection.requestHeaders?.headers.map { ($0.name, $0.value) } ?? []
        let query = queryParameters(connection.path)
        guard !query.isEmpty else { return headers }
        let overridden = Set(query.map { $0.0.lowercased() })
        headers.removeAll { overridden.contains($0.0.lowercased()) }
        return headers + query
    }

    /// The `x-jetstream-*` parameters of a request path's query string, percent-decoded.
    static func queryParameters(_ path: String) -> [(String, String)] {
        guard let start = path.firstIndex(of: "?") else { return [] }
        var result: [(String, String)] = []
        for pair in path[path.index(after: start)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            let value = parts.count > 1 ? (String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "") : ""
            let prefix = "x-jetstream-"
            guard name.count > prefix.count, name.lowercased().hasPrefix(prefix) else { continue }
            result.append((name, value))
        }
        return result
    }
}
