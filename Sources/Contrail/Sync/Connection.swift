/// One open transport of a client: a reader task that decodes frames off the main actor and hands
/// the messages over in order, and a writer task that encodes and sends messages in order.
final class Connection: Sendable {
    let transport: any SyncTransport
    private let outgoing: AsyncStream<Message>.Continuation
    private let outgoingStream: AsyncStream<Message>

    init(transport: any SyncTransport) {
        self.transport = transport
        (outgoingStream, outgoing) = AsyncStream.makeStream(of: Message.self)
    }

    /// Starts reading and writing. `onMessages` gets every frame's decodable messages in order;
    /// `onClose` runs once when the transport ends (nil: closed normally).
    func start(onMessages: @escaping @MainActor @Sendable ([Message]) -> Void,
               onClose: @escaping @MainActor @Sendable (TransportClosed?) -> Void) {
        let transport = transport
        let stream = outgoingStream
        Task.detached {
            for await message in stream {
                let text = MessageFrame.encode([message], asArray: false)
                do {
                    try await transport.send(text)
                } catch {
                    await transport.close(code: 1011, reason: "send failed")
                    break
                }
            }
        }
        Task.detached {
            var closed: TransportClosed?
            do throws(TransportClosed) {
                for try await frame in transport.frames {
                    let messages = Self.decode(frame)
                    if !messages.isEmpty { await onMessages(messages) }
                }
            } catch {
                closed = error
            }
            await onClose(closed)
        }
    }

    /// The frame's messages; elements that do not decode are skipped (as iOS does).
    static func decode(_ frame: String) -> [Message] {
        guard let json = try? JSON(parsing: frame), let results = try? MessageFrame.decodeEach(json) else { return [] }
        return results.compactMap { try? $0.get() }
    }

    /// Queues a message for sending (in order).
    func send(_ message: Message) {
        outgoing.yield(message)
    }

    /// Stops sending and closes the transport.
    func close(code: UInt16 = 1000, reason: String = "") async {
        outgoing.finish()
        await transport.close(code: code, reason: reason)
    }
}
