/// Turns decoded frames into messages: reassembles fragments, validates text as UTF-8 as it arrives,
/// enforces the message size limit and checks close frames (RFC 6455 §5.4, §5.5.1, §7.4, §8.1).
///
/// Errors are `WebSocketError.protocolViolation` carrying the close code to send:
/// - a continuation frame with no message started, or a new text/binary frame while a fragmented
///   message is open: `protocolError` (1002);
/// - a close payload of 1 byte, or a close code that may not appear on the wire: `protocolError` (1002);
/// - invalid UTF-8 in a text message or a close reason: `invalidFramePayloadData` (1007). Text is checked
///   fragment by fragment, so a bad fragment fails at once, without waiting for the rest of the message;
/// - a message larger than `maxMessageSize`: `messageTooBig` (1009).
///
/// Control frames (ping, pong, close) may arrive between the fragments of a message.
/// After an error the assembler stays failed until `reset()`.
public struct MessageAssembler {
    /// Messages larger than this (in payload bytes, summed over fragments) are refused with 1009.
    public var maxMessageSize: Int

    /// The opcode of the message being reassembled (`.text` or `.binary`), nil between messages.
    public private(set) var openMessage: Opcode?
    private var fragments: [UInt8] = []
    private var validator = UTF8Validator()
    private var failure: WebSocketError?

    /// Whether text messages are validated here. Turn it off only when a `FrameDecoder` with
    /// `validatesUTF8` already checked them; close reasons are always validated.
    public let validatesUTF8: Bool

    /// An assembler that refuses messages larger than `maxMessageSize` bytes.
    /// - Parameter validatesUTF8: validate text messages (default); pass false when the `FrameDecoder`
    ///   feeding this assembler was made with `validatesUTF8: true`.
    public init(maxMessageSize: Int, validatesUTF8: Bool = true) {
        self.maxMessageSize = max(0, maxMessageSize)
        self.validatesUTF8 = validatesUTF8
    }

    /// Bytes of the fragmented message received so far.
    public var bufferedByteCount: Int { fragments.count }

    /// Forgets any partial message and any earlier failure.
    public mutating func reset() {
        openMessage = nil
        fragments = []
        validator.reset()
        failure = nil
    }

    /// Takes the next frame.
    /// - Returns: the event it completes, or nil for a fragment that does not end its message.
    /// - Throws: `WebSocketError.protocolViolation` (see the type's documentation).
    public mutating func push(_ frame: WebSocketFrame) throws(WebSocketError) -> WebSocketEvent? {
        if let failure { throw failure }
        do {
            return try handle(frame)
        } catch {
            failure = error
            openMessage = nil
            fragments = []
            throw error
        }
    }

    /// Takes a data frame that is a whole message (FIN set, no fragmented message open) and returns its
    /// payload as it is, without making a `String` of text: for a caller that forwards bytes. Text is
    /// validated as `push(_:)` would (when this assembler validates), and the size limit applies.
    /// - Returns: nil, taking nothing, for any other frame: `push(_:)` it instead.
    /// - Throws: as `push(_:)` does; the assembler then stays failed. O(payload) when validating, else O(1).
    package mutating func takeWholeMessage(_ frame: WebSocketFrame) throws(WebSocketError) -> [UInt8]? {
        if let failure { throw failure }
        guard frame.fin, frame.opcode == .text || frame.opcode == .binary, openMessage == nil else { return nil }
        do {
            try checkSize(frame.payload.count)
            if frame.opcode == .text && validatesUTF8 {
                validator.reset()
                try validateText(frame.payload)
                try checkTextComplete()
            }
            return frame.payload
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func handle(_ frame: WebSocketFrame) throws(WebSocketError) -> WebSocketEvent? {
        switch frame.opcode {
        case .ping:
            return .ping(frame.payload)
        case .pong:
            return .pong(frame.payload)
        case .close:
            return try Self.parseClose(frame.payload)
        case .text, .binary:
            if let openMessage {
                throw .protocolViolation(
                    .protocolError, "new \(frame.opcode) frame while a fragmented \(openMessage) message is still open")
            }
            try checkSize(frame.payload.count)
            if frame.opcode == .text && validatesUTF8 {
                validator.reset()
                try validateText(frame.payload)
            }
            if frame.fin {
                return try complete(frame.opcode, frame.payload)
            }
            openMessage = frame.opcode
            fragments = frame.payload
            return nil
        case .continuation:
            guard let openMessage else {
                throw .protocolViolation(.protocolError, "continuation frame without a message to continue")
            }
            try checkSize(fragments.count + frame.payload.count)
            if openMessage == .text && validatesUTF8 {
                try validateText(frame.payload)
            }
            fragments.append(contentsOf: frame.payload)
            guard frame.fin else { return nil }
            let message = fragments
            fragments = []
            self.openMessage = nil
            return try complete(openMessage, message)
        }
    }

    private func checkSize(_ size: Int) throws(WebSocketError) {
        guard size <= maxMessageSize else {
            throw .protocolViolation(.messageTooBig, "message of at least \(size) bytes exceeds the limit of \(maxMessageSize) bytes")
        }
    }

    private mutating func validateText(_ bytes: [UInt8]) throws(WebSocketError) {
        guard bytes.withUnsafeBytes({ validator.validate($0) }) else {
            throw .protocolViolation(.invalidFramePayloadData, "text message is not valid UTF-8")
        }
    }

    private func complete(_ opcode: Opcode, _ payload: [UInt8]) throws(WebSocketError) -> WebSocketEvent {
        guard opcode == .text else { return .binary(payload) }
        try checkTextComplete()
        return .text(String(decoding: payload, as: UTF8.self))
    }

    /// A validated text message must end on a code point boundary.
    private func checkTextComplete() throws(WebSocketError) {
        guard !validatesUTF8 || validator.isComplete else {
            throw .protocolViolation(.invalidFramePayloadData, "text message ends in the middle of a UTF-8 sequence")
        }
    }

    /// Parses and checks a close frame's payload: empty, or a 2-byte code valid on the wire plus a UTF-8 reason.
    public static func parseClose(_ payload: [UInt8]) throws(WebSocketError) -> WebSocketEvent {
        if payload.isEmpty { return .close(nil, "") }
        guard payload.count >= 2 else {
            throw .protocolViolation(.protocolError, "close frame payload of 1 byte (a close code needs 2)")
        }
        let code = CloseCode(UInt16(payload[0]) << 8 | UInt16(payload[1]))
        guard code.isValidOnWire else {
            throw .protocolViolation(.protocolError, "close code \(code.rawValue) may not be sent on the wire")
        }
        let reason = payload[2...]
        let valid = reason.withUnsafeBytes { UTF8Validator.isValid($0) }
        guard valid else {
            throw .protocolViolation(.invalidFramePayloadData, "close reason is not valid UTF-8")
        }
        return .close(code, String(decoding: reason, as: UTF8.self))
    }
}
