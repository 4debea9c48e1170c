import ContrailWire

/// A `ScopeSync` its session has checked (the scope index, the write grant, the fragment limit),
/// ready for its scope: `message` with dates as epoch seconds (§8.1), and `received`, the fragments
/// as the client sent them when that changed any.
struct CheckedSync: Sendable {
    let scope: any HostedScope
    let message: ScopeSync
    let received: [SyncFragment]?
}
