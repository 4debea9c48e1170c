import ContrailWire

/// One scope as the admin surface lists it (``ContrailServer/scopes()``, `GET /api/admin/scopes`).
public struct AdminScope: Sendable, Equatable {
    /// The scope's name; for a scope only on disk whose file name does not spell it (a long name,
    /// stored under a hashed file name), the name recorded in its log.
    public var name: String
    /// Whether its state is in memory now (a scope unused for ``ServerOptions/scopeIdleTimeout``
    /// is not; listing does not load it).
    public var isLoaded: Bool
    /// Its object count (the root included) when loaded; nil otherwise.
    public var objects: Int?
    /// The sessions subscribed to it.
    public var subscribers: Int

    /// A scope's entry.
    public init(name: String, isLoaded: Bool, objects: Int?, subscribers: Int) {
        self.name = name
        self.isLoaded = isLoaded
        self.objects = objects
        self.subscribers = subscribers
    }

    /// `{"name", "loaded", "objects" (or null), "subscribers"}`.
    public var json: JSON {
        .object(["name": .string(name), "loaded": .bool(isLoaded), "objects": objects.map { .int(Int64($0)) } ?? .null,
                 "subscribers": .int(Int64(subscribers))])
    }
}
