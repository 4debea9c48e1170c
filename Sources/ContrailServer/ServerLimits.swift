/// The limits a server enforces (§8.6), copied from ``ServerOptions``.
struct ServerLimits: Sendable {
    var maxMessageBytes: Int
    var maxFragmentsPerMessage: Int
    var maxObjectsPerScope: Int
    var maxResendBytes: Int
    var maxScopesPerSession: Int
    var maxPresenceBytes: Int
    var presenceUpdatesPerSecond: Int
    var stateChunkObjects = 5_000
    var stateChunkBytes = 1 << 20
}
