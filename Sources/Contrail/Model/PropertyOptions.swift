/// Per-declaration attributes of a `@Property` (Jetstream's property attributes).
public struct PropertyOptions: Sendable, Equatable {
    @usableFromInline var bits: UInt32

    /// Observable, never synced.
    public var isLocal: Bool { bits & 1 != 0 }

    /// The minimum time between two recorded changes of the property, in milliseconds (0: none).
    public var minSyncIntervalMilliseconds: UInt32 { bits >> 1 }

    /// The minimum sync interval in seconds.
    public var minSyncInterval: Double { Double(minSyncIntervalMilliseconds) / 1000 }

    /// Options for a property: `local` ones are observable but never synced; `minSyncInterval` (in
    /// seconds, kept to the millisecond) is the least time between two recorded changes.
    @inlinable
    public init(local: Bool = false, minSyncInterval: Double = 0) {
        let millis = UInt32(min(max(minSyncInterval, 0) * 1000, Double(UInt32.max >> 1)).rounded())
        bits = millis << 1 | (local ? 1 : 0)
    }
}
