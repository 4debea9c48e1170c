/// How a fetched scope exchanges changes with the server (the modes of Yorkie's documents).
public enum SyncMode: Sendable, Equatable {
    /// Local change sets go out at once and remote changes are applied as they arrive.
    case realtime
    /// Local change sets go out; remote changes are held back until the mode changes or `sync` runs.
    case pushOnly
    /// Connected, but nothing is sent or applied: local change sets and remote changes wait.
    case syncOff
    /// Nothing moves until `session.sync(scope)`, which sends what waits and applies what arrived.
    case manual

    var sends: Bool { self == .realtime || self == .pushOnly }
    var applies: Bool { self == .realtime }
}
