/// Every Jetstream message (Protocol §2).
///
/// ```swift
/// let message = try Message(json: JSON(parsing: #"{"type":"Ping","index":0,"ack":6,"resendMissing":false}"#))
/// if case .ping(let ping) = message { print(ping.ack) }   // 6
/// ```
package enum Message: Sendable, Equatable {
    /// Client → server: open a session (§2.1).
    case sessionCreate(SessionCreate)
    /// Server → client: token or denial (§2.2).
    case sessionCreateReply(SessionCreateReply)
    /// Client → server: fetch a scope by name (§2.3).
    case scopeFetch(ScopeFetch)
    /// Server → client: the scope's index or an error (§2.4).
    case scopeFetchReply(ScopeFetchReply)
    /// Server → client: a scope's full state (§2.5).
    case scopeState(ScopeState)
    /// Server → client, Contrail extension: one part of a scope's full state (``ScopeStateChunk``, §8.25).
    case scopeStateChunk(ScopeStateChunk)
    /// Both directions: a change set (§2.6).
    case scopeSync(ScopeSync)
    /// Server → client: one reply per fragment of a ScopeSync (§2.7).
    case scopeSyncReply(ScopeSyncReply)
    /// Both directions: ack and resend trigger (§2.8).
    case ping(Ping)
    /// Client → server, Contrail extension: stop syncing one scope (``ScopeDetach``).
    case scopeDetach(ScopeDetach)
    /// Server → client, Contrail extension: the answer to a `ScopeDetach`.
    case scopeDetachReply(ScopeDetachReply)
    /// Client → server, Contrail extension: the session's presence in a scope (``PresenceUpdate``, §8.20).
    case presence(PresenceUpdate)
    /// Server → client, Contrail extension: the other sessions' presence (``PresencePeers``, §8.20).
    case presencePeers(PresencePeers)
    /// Client → server, Contrail extension: name the scope's current state (``MarkRevision``, §8.26).
    case markRevision(MarkRevision)
    /// Server → client, Contrail extension: the answer to a `MarkRevision`.
    case markRevisionReply(MarkRevisionReply)

    /// The message's `index` (0 for unsequenced messages).
    package var index: Int {
        switch self {
        case .sessionCreate(let message): return message.index
        case .sessionCreateReply(let message): return message.index
        case .scopeFetch(let message): return message.index
        case .scopeFetchReply(let message): return message.index
        case .scopeState(let message): return message.index
        case .scopeStateChunk(let message): return message.index
        case .scopeSync(let message): return message.index
        case .scopeSyncReply(let message): return message.index
        case .ping(let message): return message.index
        case .scopeDetach(let message): return message.index
        case .scopeDetachReply(let message): return message.index
        case .presence(let message): return message.index
        case .presencePeers(let message): return message.index
        case .markRevision(let message): return message.index
        case .markRevisionReply(let message): return message.index
        }
    }

    /// The wire `type`, e.g. `"ScopeSync"`.
    package var typeName: String {
        switch self {
        case .sessionCreate: return SessionCreate.typeName
        case .sessionCreateReply: return SessionCreateReply.typeName
        case .scopeFetch: return ScopeFetch.typeName
        case .scopeFetchReply: return ScopeFetchReply.typeName
        case .scopeState: return ScopeState.typeName
        case .scopeStateChunk: return ScopeStateChunk.typeName
        case .scopeSync: return ScopeSync.typeName
        case .scopeSyncReply: return ScopeSyncReply.typeName
        case .ping: return Ping.typeName
        case .scopeDetach: return ScopeDetach.typeName
        case .scopeDetachReply: return ScopeDetachReply.typeName
        case .presence: return PresenceUpdate.typeName
        case .presencePeers: return PresencePeers.typeName
        case .markRevision: return MarkRevision.typeName
        case .markRevisionReply: return MarkRevisionReply.typeName
        }
    }

    /// The `replyTo` of reply messages, `nil` for others.
    package var replyTo: Int? {
        switch self {
        case .scopeFetchReply(let message): return message.replyTo
        case .scopeSyncReply(let message): return message.replyTo
        case .scopeDetachReply(let message): return message.replyTo
        case .markRevisionReply(let message): return message.replyTo
        default: return nil
        }
    }

    /// Decodes one message object by its `type`, validating it as §2 describes. Unknown extra
    /// fields are ignored. The abstract `Reply` type is not decoded (`unknownMessageType`).
    package init(json: JSON) throws(WireError) {
        guard case .object(let members) = json else {
            throw WireError.invalidMessage(type: nil, reason: "Message is not an object")
        }
        guard case .string(let type)? = members["type"] else {
            throw WireError.invalidMessage(type: nil, reason: "Message has no type")
        }
        switch type {
        case SessionCreate.typeName: self = .sessionCreate(try SessionCreate(json: json))
        case SessionCreateReply.typeName: self = .sessionCreateReply(try SessionCreateReply(json: json))
        case ScopeFetch.typeName: self = .scopeFetch(try ScopeFetch(json: json))
        case ScopeFetchReply.typeName: self = .scopeFetchReply(try ScopeFetchReply(json: json))
        case ScopeState.typeName: self = .scopeState(try ScopeState(json: json))
        case ScopeStateChunk.typeName: self = .scopeStateChunk(try ScopeStateChunk(json: json))
        case ScopeSync.typeName: self = .scopeSync(try ScopeSync(json: json))
        case ScopeSyncReply.typeName: self = .scopeSyncReply(try ScopeSyncReply(json: json))
        case Ping.typeName: self = .ping(try Ping(json: json))
        case ScopeDetach.typeName: self = .scopeDetach(try ScopeDetach(json: json))
        case ScopeDetachReply.typeName: self = .scopeDetachReply(try ScopeDetachReply(json: json))
        case PresenceUpdate.typeName: self = .presence(try PresenceUpdate(json: json))
        case PresencePeers.typeName: self = .presencePeers(try PresencePeers(json: json))
        case MarkRevision.typeName: self = .markRevision(try MarkRevision(json: json))
        case MarkRevisionReply.typeName: self = .markRevisionReply(try MarkRevisionReply(json: json))
        default: throw WireError.unknownMessageType(type)
        }
    }

    /// The wire object.
    package var json: JSON {
        switch self {
        case .sessionCreate(let message): return message.json
        case .sessionCreateReply(let message): return message.json
        case .scopeFetch(let message): return message.json
        case .scopeFetchReply(let message): return message.json
        case .scopeState(let message): return message.json
        case .scopeStateChunk(let message): return message.json
        case .scopeSync(let message): return message.json
        case .scopeSyncReply(let message): return message.json
        case .ping(let message): return message.json
        case .scopeDetach(let message): return message.json
        case .scopeDetachReply(let message): return message.json
        case .presence(let message): return message.json
        case .presencePeers(let message): return message.json
        case .markRevision(let message): return message.json
        case .markRevisionReply(let message): return message.json
        }
    }
}
