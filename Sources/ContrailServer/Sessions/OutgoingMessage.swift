import ContrailWire

/// A server → client message waiting in a session's outbox or resend buffer. Broadcasts and full
/// states share their (large) fragment text between sessions; only the small envelope with the
/// session's own `index` and `scopeIndex` is written per session, when the frame is sent.
///
/// Every broadcast is stored twice per session (the resend buffer and the queue of the next frame),
/// and a resend buffer holds everything until the client's next acknowledgement, so the common
/// case, `scopeSync`, is kept small (40 bytes a message, where it took 80 with the rare cases
/// inline): the rare cases are boxed.
enum OutgoingMessage: Sendable {
    /// Any message, serialised when sent. Boxed: `Message` is large and rare here.
    indirect case message(Message)
    /// `ScopeSync` whose `fragments` array is already JSON text.
    case scopeSync(index: Int, scopeIndex: Int, fragments: String)
    /// `ScopeSync` as ``scopeSync(index:scopeIndex:fragments:)`` with `origin`, the JSON text of who
    /// made the change set (``SessionOutbox/origin``), for a session that asked for it (boxed: rare).
    indirect case scopeSyncWithOrigin(index: Int, scopeIndex: Int, fragments: String, origin: String)
    /// `ScopeState` whose `fragments` array is already JSON text (boxed: rare).
    indirect case scopeState(index: Int, scopeIndex: Int, rootUUID: String, fragments: String)
    /// `ScopeStateChunk` (§8.25): one part of a state streamed to `scopeIndex` (boxed: rare).
    indirect case scopeStateChunk(index: Int, scopeIndex: Int, rootUUID: String, total: Int, part: ScopeStateChunk.Part)
    /// `ScopeSyncReply` to `replyTo` accepting each of its `fragments` fragments as sent (`{}` each):
    /// the sender's usual answer, inline and written byte by byte like a broadcast.
    case syncAccepted(index: Int, replyTo: Int, fragments: Int)

    /// A `ScopeSyncReply`: ``syncAccepted(index:replyTo:fragments:)`` when it accepts every fragment as
    /// sent and is not a repeat, the whole message otherwise.
    static func syncReply(_ reply: ScopeSyncReply) -> OutgoingMessage {
        guard !reply.repeated, reply.fragmentReplies.allSatisfy({ $0 == .accepted }) else { return .message(.scopeSyncReply(reply)) }
        return .syncAccepted(index: reply.index, replyTo: reply.replyTo, fragments: reply.fragmentReplies.count)
    }

    /// The `ScopeSyncReply` this message is, if it is one.
    var syncReply: ScopeSyncReply? {
        switch self {
        case .message(.scopeSyncReply(let reply)):
            return reply
        case .syncAccepted(let index, let replyTo, let fragments):
            return ScopeSyncReply(index: index, replyTo: replyTo, fragmentReplies: Array(repeating: .accepted, count: fragments))
        default:
            return nil
        }
    }

    /// A `ScopeSync` broadcast, with `origin` when there is one to tell.
    static func broadcast(index: Int, scopeIndex: Int, fragments: String, origin: String?) -> OutgoingMessage {
        guard let origin else { return .scopeSync(index: index, scopeIndex: scopeIndex, fragments: fragments) }
        return .scopeSyncWithOrigin(index: index, scopeIndex: scopeIndex, fragments: fragments, origin: origin)
    }

    /// The message's `index` (0 for unsequenced ones).
    var index: Int {
        switch self {
        case .message(let message): return message.index
        case .scopeSync(let index, _, _): return index
        case .scopeSyncWithOrigin(let index, _, _, _): return index
        case .scopeState(let index, _, _, _): return index
        case .scopeStateChunk(let index, _, _, _, _): return index
        case .syncAccepted(let index, _, _): return index
        }
    }

    /// A rough size in bytes, for reserving frame capacity and bounding resend buffers: exact for
    /// the fragment text, which dominates; 128 for the other messages.
    var estimatedSize: Int {
        switch self {
        case .message: return 128
        case .scopeSync(_, _, let fragments): return fragments.utf8.count + 64
        case .scopeSyncWithOrigin(_, _, let fragments, let origin): return fragments.utf8.count + 64 + origin.utf8.count
        case .scopeState(_, _, _, let fragments): return fragments.utf8.count + 128
        case .scopeStateChunk(_, _, _, _, let part): return part.text.utf8.count + 160
        case .syncAccepted(_, _, let fragments): return 3 * fragments + 64
        }
    }

    /// Appends the message's JSON object to `text`.
    func write(to text: inout String) {
        switch self {
        case .message(let message):
            text += String(decoding: message.json.serialized(), as: UTF8.self)
        case .scopeSync(let index, let scopeIndex, let fragments):
            Self.writeScopeSync(index: index, scopeIndex: scopeIndex, fragments: fragments, origin: nil, to: &text)
        case .scopeSyncWithOrigin(let index, let scopeIndex, let fragments, let origin):
            Self.writeScopeSync(index: index, scopeIndex: scopeIndex, fragments: fragments, origin: origin, to: &text)
        case .scopeState(let index, let scopeIndex, let rootUUID, let fragments):
            text += #"{"type":"ScopeState","index":"#
            text += String(index)
            text += #","scopeIndex":"#
            text += String(scopeIndex)
            text += #","rootUUID":""#
            text += rootUUID
            text += #"","fragments":"#
            text += fragments
            text += "}"
        case .scopeStateChunk(let index, let scopeIndex, let rootUUID, let total, let part):
            text += #"{"type":"ScopeStateChunk","index":"#
            text += String(index)
            text += #","scopeIndex":"#
            text += String(scopeIndex)
            text += #","rootUUID":""#
            text += rootUUID
            text += #"","total":"#
            text += String(total)
            text += #","offset":"#
            text += String(part.offset)
            text += #","fragments":"#
            text += part.text
            text += "}"
        case .syncAccepted(let index, let replyTo, let fragments):
            text += #"{"type":"ScopeSyncReply","index":"#
            text += String(index)
            text += #","replyTo":"#
            text += String(replyTo)
            text += #","fragmentReplies":["#
            for position in 0..<fragments { text += position == 0 ? "{}" : ",{}" }
            text += "]}"
        }
    }

    private static func writeScopeSync(index: Int, scopeIndex: Int, fragments: String, origin: String?, to text: inout String) {
        text += #"{"type":"ScopeSync","index":"#
        text += String(index)
        text += #","scopeIndex":"#
        text += String(scopeIndex)
        if let origin {
            text += #","origin":"#
            text += origin
        }
        text += #","fragments":"#
        text += fragments
        text += "}"
    }

    /// `messages` as frames of at most `maxBytes` each (a message larger than that gets a frame
    /// of its own), in order. Each frame's size is known before it is written, so it is written
    /// once into a string of that size (broadcasts byte by byte, without a string append per piece;
    /// other messages through ``write(to:)``). O(total size).
    static func frames(_ messages: [OutgoingMessage], maxBytes: Int) -> [String] {
        // The text of the messages that are not broadcasts (rare), by position.
        var rendered: [Int: String] = [:]
        for (position, message) in messages.enumerated() where message.broadcastSize == nil {
            var text = ""
            message.write(to: &text)
            rendered[position] = text
        }
        func size(_ position: Int) -> Int { messages[position].broadcastSize ?? rendered[position]!.utf8.count }
        var frames: [String] = []
        var first = 0
        var bytes = 2  // "[" and "]"
        for position in messages.indices {
            let added = size(position) + (position > first ? 1 : 0)
            if position > first, bytes + added > maxBytes {
                frames.append(frame(messages, first..<position, bytes: bytes, rendered: rendered))
                first = position
                bytes = 2 + size(position)
            } else {
                bytes += added
            }
        }
        if first < messages.count { frames.append(frame(messages, first..<messages.count, bytes: bytes, rendered: rendered)) }
        return frames
    }

    /// The exact UTF-8 size of a broadcast or an accepting reply as ``write(to:)`` writes it; nil for
    /// other messages.
    private var broadcastSize: Int? {
        switch self {
        case .scopeSync(let index, let scopeIndex, let fragments):
            return Self.scopeSyncHead.count + Self.digits(index) + Self.scopeIndexKey.count + Self.digits(scopeIndex)
                + Self.fragmentsKey.count + fragments.utf8.count + 1
        case .syncAccepted(let index, let replyTo, let fragments):
            return Self.syncReplyHead.count + Self.digits(index) + Self.replyToKey.count + Self.digits(replyTo)
                + Self.fragmentRepliesKey.count + max(0, 3 * fragments - 1) + 2
        default:
            return nil
        }
    }

    private static let scopeSyncHead = Array(#"{"type":"ScopeSync","index":"#.utf8)
    private static let scopeIndexKey = Array(#","scopeIndex":"#.utf8)
    private static let fragmentsKey = Array(#","fragments":"#.utf8)
    private static let syncReplyHead = Array(#"{"type":"ScopeSyncReply","index":"#.utf8)
    private static let replyToKey = Array(#","replyTo":"#.utf8)
    private static let fragmentRepliesKey = Array(#","fragmentReplies":["#.utf8)

    /// The number of decimal digits of `value` (and its sign).
    private static func digits(_ value: Int) -> Int {
        var count = value < 0 ? 2 : 1
        var rest = value.magnitude / 10
        while rest > 0 {
            count += 1
            rest /= 10
        }
        return count
    }

    /// The frame of `messages[range]`, `bytes` long.
    private static func frame(_ messages: [OutgoingMessage], _ range: Range<Int>, bytes: Int, rendered: [Int: String]) -> String {
        String(unsafeUninitializedCapacity: bytes) { buffer in
            var cursor = ByteCursor(buffer)
            cursor.put(UInt8(ascii: "["))
            for position in range {
                if position > range.lowerBound { cursor.put(UInt8(ascii: ",")) }
                switch messages[position] {
                case .scopeSync(let index, let scopeIndex, let fragments):
                    cursor.put(head: scopeSyncHead, index, scopeIndexKey, scopeIndex, fragmentsKey)
                    cursor.put(fragments)
                    cursor.put(UInt8(ascii: "}"))
                case .syncAccepted(let index, let replyTo, let fragments):
                    cursor.put(head: syncReplyHead, index, replyToKey, replyTo, fragmentRepliesKey)
                    for accepted in 0..<fragments {
                        if accepted > 0 { cursor.put(UInt8(ascii: ",")) }
                        cursor.put(UInt8(ascii: "{"))
                        cursor.put(UInt8(ascii: "}"))
                    }
                    cursor.put(UInt8(ascii: "]"))
                    cursor.put(UInt8(ascii: "}"))
                default:
                    cursor.put(rendered[position]!)
                }
            }
            cursor.put(UInt8(ascii: "]"))
            assert(cursor.written == bytes, "a frame's size was computed as \(bytes) bytes, and \(cursor.written) were written")
            return cursor.written
        }
    }

    /// Writes bytes one piece after the other into a buffer that has room for them all.
    private struct ByteCursor {
        let buffer: UnsafeMutableBufferPointer<UInt8>
        var written = 0

        init(_ buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

        mutating func put(_ byte: UInt8) {
            buffer[written] = byte
            written += 1
        }

        mutating func put(_ piece: [UInt8]) {
            let rest = UnsafeMutableBufferPointer(rebasing: buffer[written...])
            piece.withUnsafeBufferPointer { _ = rest.initialize(fromContentsOf: $0) }
            written += piece.count
        }

        mutating func put(_ text: String) {
            var text = text
            let rest = UnsafeMutableBufferPointer(rebasing: buffer[written...])
            let count = text.withUTF8 { rest.initialize(fromContentsOf: $0) }
            written += count
        }

        /// `head`, `first` in decimal, `key`, `second` in decimal, then `next`: the start of an
        /// object whose first two members are numbers.
        mutating func put(head: [UInt8], _ first: Int, _ key: [UInt8], _ second: Int, _ next: [UInt8]) {
            put(head)
            put(decimal: first)
            put(key)
            put(decimal: second)
            put(next)
        }

        mutating func put(decimal value: Int) {
            if value < 0 { put(UInt8(ascii: "-")) }
            let count = OutgoingMessage.digits(value) - (value < 0 ? 1 : 0)
            var rest = value.magnitude
            var offset = written + count
            while offset > written {
                offset -= 1
                buffer[offset] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            written += count
        }
    }

    /// One frame holding `messages`: servers always send an array (§1.2).
    static func frame(_ messages: some Collection<OutgoingMessage>) -> String {
        var text = "["
        text.reserveCapacity(messages.reduce(2) { $0 + $1.estimatedSize })
        var first = true
        for message in messages {
            if !first { text += "," }
            first = false
            message.write(to: &text)
        }
        text += "]"
        return text
    }
}
