/// The configuration of a JetStream stream (the subset Contrail uses; the server fills the rest).
public struct StreamConfig: Sendable, Codable, Equatable {
    /// The stream's name (no spaces, '.', '*' or '>').
    public var name: String
    /// The subjects it captures (wildcards allowed).
    public var subjects: [String]
    /// "limits" (keep by limits), "interest" or "workqueue".
    public var retention: String = "limits"
    /// "file" or "memory".
    public var storage: String = "file"
    /// Copies kept in a cluster (1...5).
    public var numReplicas: Int = 1
    /// Messages kept per subject; -1 for no limit.
    public var maxMsgsPerSubject: Int = -1
    /// How long `Nats-Msg-Id` values are remembered for deduplication, in nanoseconds (0: server default, 2 min).
    public var duplicateWindow: Int64 = 0
    /// "old" (drop the oldest at a limit) or "new" (refuse new messages).
    public var discard: String = "old"
    /// Whether `Nats-Rollup` headers may purge a subject.
    public var allowRollupHdrs: Bool = false
    /// Whether deleting single messages is refused.
    public var denyDelete: Bool = false
    /// Whether any replica may answer direct gets.
    public var allowDirect: Bool = false

    /// A stream named `name` capturing `subjects`, with default limits.
    public init(name: String, subjects: [String]) {
        self.name = name
        self.subjects = subjects
    }

    enum CodingKeys: String, CodingKey {
        case name, subjects, retention, storage, discard
        case numReplicas = "num_replicas"
        case maxMsgsPerSubject = "max_msgs_per_subject"
        case duplicateWindow = "duplicate_window"
        case allowRollupHdrs = "allow_rollup_hdrs"
        case denyDelete = "deny_delete"
        case allowDirect = "allow_direct"
    }

    /// Decodes what the server reports (fields it omits keep their defaults).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        subjects = try c.decodeIfPresent([String].self, forKey: .subjects) ?? []
        retention = try c.decodeIfPresent(String.self, forKey: .retention) ?? "limits"
        storage = try c.decodeIfPresent(String.self, forKey: .storage) ?? "file"
        numReplicas = try c.decodeIfPresent(Int.self, forKey: .numReplicas) ?? 1
        maxMsgsPerSubject = try c.decodeIfPresent(Int.self, forKey: .maxMsgsPerSubject) ?? -1
        duplicateWindow = try c.decodeIfPresent(Int64.self, forKey: .duplicateWindow) ?? 0
        discard = try c.decodeIfPresent(String.self, forKey: .discard) ?? "old"
        allowRollupHdrs = try c.decodeIfPresent(Bool.self, forKey: .allowRollupHdrs) ?? false
        denyDelete = try c.decodeIfPresent(Bool.self, forKey: .denyDelete) ?? false
        allowDirect = try c.decodeIfPresent(Bool.self, forKey: .allowDirect) ?? false
    }
}
