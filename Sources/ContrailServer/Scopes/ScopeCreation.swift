/// When a scope comes into existence on a server (``ServerOptions/scopeCreation``, `contrail serve
/// --create-scopes`). Scopes named in ``ServerOptions/scopes`` and those already in the data
/// directory exist in every mode.
public enum ScopeCreation: String, Sendable, CaseIterable {
    /// On the first allowed fetch (every name a client asks for is created, with its file).
    case fetch
    /// On the first accepted write. A fetch of a name that does not exist answers an empty state
    /// and creates nothing (no file); the fetching session still receives the scope's changes once
    /// a session's write creates it.
    case write
    /// Never: only the declared scopes (and those in the data directory) exist; a fetch of any
    /// other name is answered with a `scope-not-found` error.
    case declared
}
