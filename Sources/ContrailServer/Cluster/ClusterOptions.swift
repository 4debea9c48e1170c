import ContrailNATS

/// How `contrail serve --nats` joins a cluster: every server of the cluster shares each scope
/// through one JetStream stream (a subject per scope) and a key-value bucket of snapshots.
public struct ClusterOptions: Sendable {
    /// The newest log entry format this server reads and writes (`ClusterLogFormat`: 1 = one change
    /// set per message, 2 = group-commit batches too). It writes the lowest format any live server
    /// of the cluster reads. `contrail serve --nats-log-format 1` keeps a new server from writing
    /// batches while servers from before them still run (they are not in the format record).
    public var logFormat = 2
    /// How often a server refreshes its entry in the cluster's log-format record (and learns the
    /// format to write).
    public var formatRefresh: Duration = .seconds(10)
    /// How long an entry of the log-format record lives without a refresh (a server that stopped
    /// without removing it, e.g. killed). Servers' wall clocks must agree within it.
    public var formatLifetime: Duration = .seconds(60)
    /// The NATS servers to use (any of them; the client moves to the next on failure).
    public var servers: [NATSServerURL]
    /// The user and password, token, nkey seed or user JWT (`.creds`) for a NATS that requires them
    /// (from a file or the environment: `contrail serve --nats-credentials`, `CONTRAIL_NATS_*`;
    /// never in a URL).
    public var credentials: NATSCredentials = .none
    /// TLS to every NATS server, verified with this configuration (e.g. a private CA's bundle:
    /// `contrail serve --nats-ca FILE`); nil: TLS only to `tls://` URLs, with the system's roots.
    public var tls: TLSClientConfiguration? = nil
    /// TLS before the NATS server's `INFO` (servers with `tls { handshake_first: true }`); implies TLS.
    public var tlsHandshakeFirst = false
    /// Copies JetStream keeps of the log and the snapshots (3 in a three-node NATS cluster).
    public var replicas = 1
    /// A server writes a snapshot of a scope after this many of its own change sets, and trims
    /// the log behind the snapshot before that one.
    public var snapshotEvery = 1_000
    /// The stream holding every scope's log.
    public var streamName = "CONTRAIL_SCOPES"
    /// The subject prefix of the scopes' logs (one subject per scope below it).
    public var subjectPrefix = "contrail.scope"
    /// The subject prefix of presence (Protocol §8.20: one NATS core subject per scope below it,
    /// never stored). It must not fall under ``subjectPrefix``, which the stream stores.
    public var presenceSubjectPrefix = "contrail.presence"
    /// The key-value bucket holding the snapshots.
    public var snapshotBucket = "contrail_snapshots"
    /// The key-value bucket holding every scope's named revisions and, with a history retention
    /// (`contrail serve --history`), its past snapshots (Protocol §8.26, `ClusterHistory`).
    public var historyBucket = "contrail_history"
    /// The deadline of each JetStream call; also how long a server keeps reading for a message it
    /// was woken for that is not stored yet.
    public var requestTimeout: Duration = .seconds(5)
    /// The most bytes of change sets one log message of a scope holds (group commit: those that
    /// wait while a publish is in flight go out together; a larger change set goes alone). Keep it
    /// well under the NATS server's `max_payload` (1 MiB by default).
    public var maxBatchBytes = 256 * 1024
    /// How often a scope with subscribed sessions reads its log when nothing woke it (the bound on
    /// staleness when a wake-up is lost).
    public var catchUpInterval: Duration = .seconds(1)
    /// The longest wait between reads for a message a wake-up named that is not stored yet (the
    /// waits start at 1 ms and double up to this).
    public var wakeUpRetryLimit: Duration = .milliseconds(20)

    /// A cluster over these NATS servers with one replica.
    public init(servers: [NATSServerURL]) {
        self.servers = servers
    }
}
