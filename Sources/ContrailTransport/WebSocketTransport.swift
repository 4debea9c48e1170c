import ContrailWebSocket
import ContrailWire

/// A `SyncTransport` over one `WebSocketConnection` (text frames; binary frames are read as UTF-8,
/// as the Jetstream server does).
public final class WebSocketTransport: SyncTransport {
    /// The WebSocket connection the frames go over.
    public let connection: WebSocketConnection
    /// The received frames (pulled from the connection one at a time: no buffer of their own).
    public let frames: TypedAsyncStream<String, TransportClosed>

    /// A transport over an open connection.
    public init(_ connection: WebSocketConnection) {
        self.connection = connection
        frames = TypedAsyncStream(unfolding: { () async throws(TransportClosed) -> String? in
            do throws(WebSocketError) {
                switch try await connection.receive() {
                case .text(let text): return text
                case .binary(let bytes): return String(decoding: bytes, as: UTF8.self)
                case nil: return nil
                }
            } catch {
                if case .closed(let code, let reason) = error {
                    throw TransportClosed(code: code?.rawValue, reason: reason)
                }
                if case .protocolViolation(.messageTooBig, let reason) = error {
                    throw TransportClosed(code: nil, reason: reason, messageTooLarge: true)
                }
                throw TransportClosed(code: nil, reason: error.description)
            }
        })
    }

    /// Sends one text frame.
    public func send(_ frame: String) async throws(TransportClosed) {
        do {
            try await connection.send(.text(frame))
        } catch {
            throw TransportClosed(code: connection.closeCode?.rawValue, reason: error.description)
        }
    }

    /// Sends one text frame on the calling thread unless the connection's write buffer is above
    /// its high-water mark (then ``send(_:)`` would wait, and nothing is sent here).
    public func sendWithoutWaiting(_ frame: String) throws(TransportClosed) -> Bool {
        guard connection.hasRoomToSend else { return false }
        do {
            try connection.sendWithoutWaiting(.text(frame))
        } catch {
            throw TransportClosed(code: connection.closeCode?.rawValue, reason: error.description)
        }
        return true
    }

    /// Closes the connection with this code and reason.
    public func close(code: UInt16, reason: String) async {
        await connection.close(code: CloseCode(rawValue: code), reason: reason)
    }
}
