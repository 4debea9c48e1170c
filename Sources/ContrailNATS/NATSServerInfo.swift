/// What a server says about itself in its `INFO` line.
public struct NATSServerInfo: Sendable, Decodable, Equatable {
    /// The server's unique id.
    public var serverID: String
    /// The server's name (`-n`), if set.
    public var serverName: String?
    /// The server's version, e.g. "2.9.10".
    public var version: String
    /// The largest payload (headers included) the server accepts.
    public var maxPayload: Int
    /// Whether the server supports headers (`HPUB`/`HMSG`).
    public var headers: Bool?
    /// Whether JetStream is enabled.
    public var jetstream: Bool?
    /// Whether the server requires credentials in `CONNECT`.
    public var authRequired: Bool?
    /// Whether the server requires TLS before `CONNECT`.
    public var tlsRequired: Bool?
    /// Whether the server accepts TLS without requiring it (`allow_non_tls`).
    public var tlsAvailable: Bool?
    /// The random text to sign with an nkey in `CONNECT` (sent when the server accepts nkeys or JWTs).
    public var nonce: String?
    /// Other cluster members' client URLs, if any.
    public var connectURLs: [String]?
    /// The name of the NATS cluster the server is a member of (nil: not clustered).
    public var cluster: String?

    enum CodingKeys: String, CodingKey {
        case serverID = "server_id"
        case serverName = "server_name"
        case version
        case maxPayload = "max_payload"
        case headers
        case jetstream
        case authRequired = "auth_required"
        case tlsRequired = "tls_required"
        case tlsAvailable = "tls_available"
        case connectURLs = "connect_urls"
        case cluster
        case nonce
    }
}
