import ContrailWebSocket
import ContrailWire

/// Opens WebSocket transports to the servers of a cluster (`contrail serve --nats`): each connect
/// tries the URLs in turn (round-robin), starting with the server that last answered, and stays on
/// the first one that accepts. The client's capped backoff with jitter paces the rounds when no
/// server answers.
///
/// Sessions do not move between servers: another server refuses the old session token (close
/// 4097), and the client opens a new session there, refetches its scopes and resends its pending
/// change sets (their change-set ids let the cluster apply a resent one once).
public final class FailoverConnector: SyncConnector {
    /// The server URLs (`ws://host:port/path`), tried in this order.
    public let urls: [String]
    /// The WebSocket options for every connect.
    public let options: WebSocketOptions
    /// The index in `urls` of the server that last answered (where the next connect starts).
    private let current = SanitizerVisibleMutex(0)

    /// A connector over `urls`, starting with the first.
    public init(urls: [String], options: WebSocketOptions = .init()) {
        self.urls = urls
        self.options = options
    }

    /// A connector over `urls` (`wss://` ones verified as `tls` says) taking messages and frames of
    /// up to `maxMessageBytes`, with otherwise default options.
    public convenience init(urls: [String], tls: TLSClientConfiguration, maxMessageBytes: Int = 16 << 20) {
        var options = WebSocketOptions()
        options.tls = tls
        options.maxFrameSize = maxMessageBytes
        options.maxMessageSize = maxMessageBytes
        self.init(urls: urls, options: options)
    }

    /// The URL of the server that last answered (where the next connect starts); nil without URLs.
    public var currentURL: String? {
        urls.isEmpty ? nil : urls[current.withLock { $0 }]
    }

    /// Moves on from the server that last answered: it cannot serve sessions (no NATS), so the
    /// next connect starts with the next URL.
    public func serverUnavailable() {
        guard !urls.isEmpty else { return }
        current.withLock { $0 = ($0 + 1) % urls.count }
    }

    /// Connects to the current URL or, when it fails, to the next ones in turn (each at most once
    /// per call; O(n) attempts for n URLs). Rethrows the last failure when none answers;
    /// throws `SyncError.transport` when `urls` is empty.
    public func connect(headers: [(String, String)]) async throws(SyncError) -> any SyncTransport {
        guard !urls.isEmpty else { throw .transport("no server URLs to connect to") }
        let start = current.withLock { $0 }
        var lastError = SyncError.transport("no server answered")
        for step in 0..<urls.count {
            let index = (start + step) % urls.count
            do {
                let transport = try await WebSocketConnector(url: urls[index], options: options).connect(headers: headers)
                current.withLock { $0 = index }
                return transport
            } catch {
                lastError = error
            }
        }
        throw lastError
    }
}
