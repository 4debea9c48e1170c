import ContrailWebSocket

/// A `SyncTransport` over one `WebSocketConnection` (text frames; binary frames are read as UTF-8,
/// as the Jetstream server does).
public final class WebSocketTransport: SyncTransport {
    public let connection: WebSocketConnection
    public let frames: AsyncThrowingStream<String, any Error>

    public init(_ connection: WebSocketConnection) {
        self.connection = connection
        let messages = connection.messages
        frames = AsyncThrowingStream { () async throws -> String? in
            var iterator = messages.makeAsyncIterator()
            do {
                switch try await iterator.next() {
                case .text(let text): return text
                case .binary(let bytes): return String(decoding: bytes, as: UTF8.self)
                case nil: return nil
                }
            } catch let error as WebSocketError {
                if case .closed(let code, let reason) = error {
                    throw TransportClosed(code: code?.rawValue, reason: reason)
                }
                throw TransportClosed(code: nil, reason: error.description)
            }
        }
    }

    public func send(_ frame: String) async throws {
        do {
            try await connection.send(.text(frame))
        } catch {
            throw TransportClosed(code: connection.closeCode?.rawValue, reason: error.description)
        }
    }

    public func close(code: UInt16, reason: String) async {
        await connection.close(code: CloseCode(rawValue: code), reason: reason)
    }
}
