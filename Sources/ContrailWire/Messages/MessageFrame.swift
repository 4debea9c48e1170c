import Foundation

/// One WebSocket text frame: a single message object or an array of them (a batch, §1.2).
///
/// ```swift
/// let messages = try MessageFrame.decode(frameText)            // object or array
/// let text = MessageFrame.encode([.ping(Ping(ack: 3))], asArray: true)
/// ```
package enum MessageFrame {
    // MARK: Decoding

    /// Decodes a parsed frame: an object gives one message, an array one message per element, in
    /// order. A bad element throws `WireError.batchElement(position:error:)` for the first one.
    package static func decode(_ json: JSON) throws(WireError) -> [Message] {
        switch json {
        case .object:
            return [try Message(json: json)]
        case .array(let elements):
            var messages: [Message] = []
            messages.reserveCapacity(elements.count)
            for (position, element) in elements.enumerated() {
                do {
                    messages.append(try Message(json: element))
                } catch {
                    throw WireError.batchElement(position: position, error: error)
                }
            }
            return messages
        default:
            throw WireError.invalidMessage(type: nil, reason: "Frame is neither a message object nor an array of messages")
        }
    }

    /// Decodes a frame from UTF-8 bytes (see ``decode(_:)-(JSON)``).
    package static func decode(_ bytes: UnsafeRawBufferPointer, limits: JSONLimits = .init()) throws(WireError) -> [Message] {
        try decode(parse(bytes, limits: limits))
    }

    /// Decodes a frame from UTF-8 bytes.
    package static func decode(_ bytes: [UInt8], limits: JSONLimits = .init()) throws(WireError) -> [Message] {
        try decode(parse(bytes, limits: limits))
    }

    /// Decodes a frame from any collection of UTF-8 bytes.
    package static func decode(_ bytes: some Collection<UInt8>, limits: JSONLimits = .init()) throws(WireError) -> [Message] {
        try decode(parse(bytes, limits: limits))
    }

    /// Decodes a frame from text.
    package static func decode(_ text: String, limits: JSONLimits = .init()) throws(WireError) -> [Message] {
        let json: JSON
        do { json = try JSON(parsing: text, limits: limits) } catch { throw WireError.malformedJSON(error) }
        return try decode(json)
    }

    /// Decodes every element of a parsed frame on its own, so a caller can act on the good ones
    /// and answer the bad ones (e.g. a `ScopeSync` with invalid fragments, §8.7). Throws only when
    /// the frame is neither an object nor an array.
    package static func decodeEach(_ json: JSON) throws(WireError) -> [Result<Message, WireError>] {
        switch json {
        case .object:
            return [Result { () throws(WireError) in try Message(json: json) }]
        case .array(let elements):
            return elements.map { element in Result { () throws(WireError) in try Message(json: element) } }
        default:
            throw WireError.invalidMessage(type: nil, reason: "Frame is neither a message object nor an array of messages")
        }
    }

    private static func parse(_ bytes: some Collection<UInt8>, limits: JSONLimits) throws(WireError) -> JSON {
        do { return try JSON(parsing: bytes, limits: limits) } catch { throw WireError.malformedJSON(error) }
    }

    private static func parse(_ bytes: UnsafeRawBufferPointer, limits: JSONLimits) throws(WireError) -> JSON {
        do { return try JSON(parsing: bytes, limits: limits) } catch { throw WireError.malformedJSON(error) }
    }

    // MARK: Encoding

    /// The frame's UTF-8 bytes. With `asArray` (what servers always send) the messages go in a JSON
    /// array; without it a single message goes as a bare object (what clients send). More or fewer
    /// than one message always go as an array.
    package static func encodedBytes(_ messages: [Message], asArray: Bool, sortedKeys: Bool = false) -> [UInt8] {
        if !asArray, messages.count == 1 {
            return messages[0].json.serialized(sortedKeys: sortedKeys)
        }
        return JSON.array(messages.map(\.json)).serialized(sortedKeys: sortedKeys)
    }

    /// The frame's text (see ``encodedBytes(_:asArray:sortedKeys:)``).
    package static func encode(_ messages: [Message], asArray: Bool, sortedKeys: Bool = false) -> String {
        String(decoding: encodedBytes(messages, asArray: asArray, sortedKeys: sortedKeys), as: UTF8.self)
    }
}
