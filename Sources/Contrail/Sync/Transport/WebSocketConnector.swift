import ContrailWebSocket

/// Opens WebSocket transports to a sync server URL (`ws://host:port/path`).
public struct WebSocketConnector: SyncConnector {
    public let url: String
    public let options: WebSocketOptions

    public init(url: String, options: WebSocketOptions = .init()) {
        self.url = url
        self.options = options
    }

    public func connect(headers: [(String, String)]) async throws -> any SyncTransport {
        var options = self.options
        options.headers += headers
        return WebSocketTransport(try await WebSocketConnection.connect(to: url, options: options))
    }
}
