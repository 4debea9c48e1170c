import ContrailWebSocket
import ContrailWire

/// Opens WebSocket transports to a sync server URL (`ws://host:port/path`, or `wss://` over TLS).
public struct WebSocketConnector: SyncConnector {
    /// The server URL.
    public let url: String
    /// The WebSocket options of every connect (the connect-time headers are added to them).
    public let options: WebSocketOptions

    /// A connector to `url`.
    public init(url: String, options: WebSocketOptions = .init()) {
        self.url = url
        self.options = options
    }

    /// A connector to `url` (`wss://` verified as `tls` says) taking messages and frames of up to
    /// `maxMessageBytes`, with otherwise default options.
    public init(url: String, tls: TLSClientConfiguration, maxMessageBytes: Int = 16 << 20) {
        var options = WebSocketOptions()
        options.tls = tls
        options.maxFrameSize = maxMessageBytes
        options.maxMessageSize = maxMessageBytes
        self.init(url: url, options: options)
    }

    /// Opens a WebSocket connection; throws `SyncError.transport` with the reason when it cannot.
    public func connect(headers: [(String, String)]) async throws(SyncError) -> any SyncTransport {
        var options = self.options
        options.headers += headers
        do {
            return WebSocketTransport(try await WebSocketConnection.connect(to: url, options: options))
        } catch {
            throw .transport("\(error)")
        }
    }
}
