/// One entry of `ScopeSyncReply.fragmentReplies`: `{}` when the fragment was accepted,
/// `{"error":{…}}` when rejected, optionally with `"modifications"` the client must apply (§2.7, §4.8).
package struct FragmentReply: Sendable, Equatable {
    /// Why the fragment was rejected; `nil` means accepted.
    package var error: WireErrorBody?
    /// Property values the server changed, to be set on the client as-is.
    package var modifications: [String: JSON]?

    /// Creates an entry; the default is "accepted" (`{}`).
    package init(error: WireErrorBody? = nil, modifications: [String: JSON]? = nil) {
        self.error = error
        self.modifications = modifications
    }

    /// The accepted entry, `{}`.
    package static let accepted = FragmentReply()

    /// A rejected entry.
    package static func rejected(_ error: WireErrorBody) -> FragmentReply {
        FragmentReply(error: error)
    }

    /// `true` when there is no error.
    package var isAccepted: Bool { error == nil }

    /// Decodes an entry; `nil` if it is not an object or its `error`/`modifications` have the wrong shape.
    package init?(json: JSON) {
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
    package var json: JSON {
        var members: [String: JSON] = [:]
        if let error { members["error"] = error.json }
        if let modifications { members["modifications"] = .object(modifications) }
        return .object(members)
    }
}
