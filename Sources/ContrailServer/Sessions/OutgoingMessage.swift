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
    /// of its own), in order. O(total size).
    static func frames(_ messages: [OutgoingMessage], maxBytes: Int) -> [String] {
        var frames: [String] = []
        var text = "["
        text.reserveCapacity(min(maxBytes, messages.reduce(2) { $0 + $1.estimatedSize + 1 }))
        for message in messages {
            // Written in place; moved to a frame of its own only when it does not fit (rare).
            let before = text.utf8.count
            if before > 1 { text += "," }
            message.write(to: &text)
            if before > 1, text.utf8.count + 1 > maxBytes {
                let start = text.utf8.index(text.startIndex, offsetBy: before + 1)
                let object = String(text[start...])
                text.removeSubrange(text.utf8.index(text.startIndex, offsetBy: before)...)
                frames.append(text + "]")
                text = "[" + object
            }
        }
        if text.utf8.count > 1 { frames.append(text + "]") }
        return frames
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
