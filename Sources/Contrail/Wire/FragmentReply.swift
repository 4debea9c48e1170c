/// One entry of `ScopeSyncReply.fragmentReplies`: `{}` when the fragment was accepted,
/// `{"error":{…}}` when rejected, optionally with `"modifications"` the client must apply (§2.7, §4.8).
public struct FragmentReply: Sendable, Equatable {
    /// Why the fragment was rejected; `nil` means accepted.
    public var error: WireErrorBody?
    /// Property values the server changed, to be set on the client as-is.
    public var modifications: [String: JSON]?

    /// Creates an entry; the default is "accepted" (`{}`).
    public init(error: WireErrorBody? = nil, modifications: [String: JSON]? = nil) {
        self.error = error
        self.modifications = modifications
    }

    /// The accepted entry, `{}`.
    public static let accepted = FragmentReply()

    /// A rejected entry.
    public static func rejected(_ error: WireErrorBody) -> FragmentReply {
        FragmentReply(error: error)
    }

    /// `true` when there is no error.
    public var isAccepted: Bool { error == nil }

    /// Decodes an entry; `nil` if it is not an object or its `error`/`modifications` have the wrong shape.
    public init?(json: JSON) {
        guard case .object(let members) = json else { return nil }
        switch members["error"] {
        case nil, .null?: error = nil
        case let value?:
            guard let body = WireErrorBody(json: value) else { return nil }
            error = body
        }
        switch members["modifications"] {
        case nil, .null?: modifications = nil
        case .object(let values)?: modifications = values
        default: return nil
        }
    }

    /// The wire object: `{}`, plus `error` and `modifications` when set.
    public var json: JSON {
        var members: [String: JSON] = [:]
        if let error { members["error"] = error.json }
        if let modifications { members["modifications"] = .object(modifications) }
        return .object(members)
    }
}
