/// Bounds that protect the JSON parser from hostile input.
public struct JSONLimits: Sendable, Hashable {
    /// The deepest allowed nesting of arrays and objects (the top-level container is depth 1).
    public var maxDepth: Int
    /// The largest accepted document, in bytes.
    public var maxBytes: Int

    /// Defaults: depth 512, 64 MiB.
    public init(maxDepth: Int = 512, maxBytes: Int = 64 << 20) {
        self.maxDepth = maxDepth
        self.maxBytes = maxBytes
    }
}
