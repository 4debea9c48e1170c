/// Opens WebSocket transports to a sync server at a `ws://` URL.
///
/// The WebSocket transport adapter is wired up once the `ContrailWebSocket` module is merged into
/// this branch; until then `connect` fails with `SyncError.transport`.
public struct WebSocketConnector: SyncConnector {
    /// The server's URL, e.g. `ws://127.0.0.1:3000`.
    public let url: String

    /// A connector for `url`.
    public init(url: String) {
        self.url = url
    }

    public func connect(headers: [(String, String)]) async throws -> any SyncTransport {
        throw SyncError.transport("WebSocket transport is not available in this build (connecting to \(url))")
    }
}
