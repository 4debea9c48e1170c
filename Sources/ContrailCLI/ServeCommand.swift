import Contrail
import ContrailNATS
import ContrailServer
import ContrailWebSocket
import Foundation

/// `contrail serve`: runs a Contrail sync server until interrupted.
enum ServeCommand {
    static let help = """
    usage: contrail serve [--host ADDRESS] [--port PORT] [--data DIR] [options]

    Runs a Jetstream-compatible sync server over WebSocket. Scopes are schema-agnostic and are
    created on their first write (see --create-scopes), or up front with --scope. Logs one line per session and per error to stderr. Stop it
    with Ctrl-C (SIGINT) or SIGTERM: it drains (refuses new sessions, tells every client to reconnect
    to another server with close code 4099, writes out and syncs every log) and exits within
    --drain-timeout; a second signal exits at once. /healthz and /readyz answer probes (readyz: 503
    while starting, draining, or cut off from NATS).

      --host ADDRESS          address to bind (default 127.0.0.1; serve TLS, or put TLS in front
                              of the server, before exposing it beyond loopback)
      --port PORT             port to listen on (default 3000; 0 picks a free one)
      --data DIR              persist every scope as a log file in DIR (default: in memory only,
                              lost on exit)
      --backup-dir DIR        where `contrail admin backup` writes backups (one directory each;
                              default: none, backups over HTTP are refused)
      --history PERIOD        keep each scope's change sets readable this long after compaction
                              (30d, 12h, 90m, 3600s; needs --data or --nats); default: the
                              history is what each scope's log holds, the change sets since its
                              last compaction (with --nats: since its latest snapshot)
      --fsync POLICY          when accepted change sets are forced to disk: "always" (default;
                              a change set is acknowledged only once its record is synced, with
                              group commit), "interval:200ms" (explicit opt-in to buffered
                              writes: acknowledged once written to the OS, synced at most that
                              often, so a power loss can take the last interval's acknowledged
                              change sets), or "never"
      --nats URL[,URL]        join a cluster: share every scope with the other servers through
                              NATS JetStream at these URLs (nats://host:port; replaces --data)
      --nats-replicas N       copies JetStream keeps of the log and snapshots (default 1; 3 in a
                              three-node NATS cluster)
      --nats-credentials FILE for a NATS that requires authorization: a file of NAME=value lines,
                              CONTRAIL_NATS_USER and CONTRAIL_NATS_PASSWORD, or CONTRAIL_NATS_TOKEN;
                              a file holding an nkey seed (SU...); or a NATS .creds file (user JWT
                              and nkey seed). Without it, those environment variables, if set.
                              Never in the URL; a file other users may read is refused.
      --nats-ca FILE          TLS to NATS (also for nats:// URLs), the server's certificate verified
                              with this PEM bundle of CA certificates; tls://host:port URLs alone
                              use the system's roots
      --nats-tls-first        TLS before the server's INFO, for NATS servers configured with
                              tls { handshake_first: true } (implies TLS)
      --nats-log-format N     the newest log entry format this server reads and writes (1: one
                              change set per log message; 2, the default: group-commit batches
                              too); it writes the lowest format any live server reads. Give 1
                              while servers from before batches still run (README: rolling upgrade)
      --session-expiry SECS   end sessions idle for this long (default 600)
      --establish-timeout SECS
                              how long a new connection has to send its SessionCreate before it is
                              closed with 4096 (default 10)
      --handshake-timeout SECS
                              how long a new connection has to send its HTTP request (a WebSocket
                              upgrade, a page or an API call) before it is closed unanswered
                              (default 10)
      --max-waiting-bytes N   most memory (estimated) of sessions waiting for their clients to
                              come back; past it the longest-waiting end first (default 536870912)
      --ping-interval SECS    keep-alive ping interval (default 10)
      --max-message-bytes N   largest accepted frame (default 16777216)
      --max-fragments N       most fragments per ScopeSync (default 10000)
      --max-objects N         most objects per scope (default 1000000)
      --max-resend-bytes N    most bytes of unacknowledged messages kept per session; a session
                              over it is closed with 4097 (default 16777216)
      --state-chunk-objects N a fetched state of more objects goes in parts of at most N to a
                              client that asks (Protocol §8.25; default 5000)
      --state-chunk-bytes N   likewise, at most about N bytes of JSON per part (default 1048576)
      --max-open-scopes N     most scopes loaded at once; fetches past it get an error until
                              idle scopes unload (default 1000)
      --max-scopes-per-session N
                              most scopes one session may fetch (default 100)
      --scope-idle SECS       a scope unused this long closes its log file and leaves memory
                              (default 60; with --nats: no session subscribed this long, and
                              the server stops following its log)
      --scope NAME            create scope NAME up front (repeatable; others as --create-scopes
                              says)
      --create-scopes MODE    when a scope comes into existence: "write" (default; on its first
                              accepted write: fetching an unknown name answers an empty state
                              and creates no file), "fetch" (on its first fetch), or "declared"
                              (only --scope names and files already in --data exist; fetching
                              another is an error)
      --max-scopes N          most scopes that may exist (files in --data); creating one more is
                              answered with a limit-exceeded error (default 100000)
      --token-file PATH       require SessionCreate params to hold {"token": TOKEN}, TOKEN being
                              the file's content (without a trailing newline)
      --token TOKEN           the same with TOKEN given here (visible to other users in the
                              process list: prefer --token-file or CONTRAIL_TOKEN)
                              Without either, the CONTRAIL_TOKEN environment variable, if set,
                              is the token. A denied SessionCreate closes the connection with
                              4096. Failed credentials (a denied SessionCreate, an unknown
                              session token) are answered after a delay per client address,
                              doubling per failure; valid credentials are never delayed.
                              The shared token grants every scope and the inspector.
      --jwt-key FILE          accept JSON Web Tokens (SessionCreate params {"token": JWT} or an
                              Authorization: Bearer header) verified with FILE: an HS256 secret
                              (32 bytes or more) or a PEM public key (ES256 P-256, RS256 RSA).
                              Claims: sub (user), exp, nbf, scopes {"pattern": "r"|"rw"},
                              admin (true: may see the inspector). With --token-file too,
                              the shared token is also accepted.
      --failure-delay SECS    delay of an address's first failed attempt (default 0.25)
      --max-failure-delay SECS
                              longest delay of failed attempts (default 30)
      --trusted-proxy CIDR    a proxy whose X-Forwarded-For names the client (repeatable; e.g.
                              10.0.0.0/8, ::1): connections from it count against the rightmost
                              address of that header that is not a trusted proxy. Others'
                              X-Forwarded-For is ignored.
      --tls-cert PEM          serve TLS (wss://, and the pages over https://) with this
                              certificate chain (server certificate first); needs --tls-key
      --tls-key PEM           the certificate's private key. SIGHUP re-reads both files for new
                              connections; a file that fails to load keeps the current ones
                              (logged)
      --no-pages              do not serve the web pages (inspector at /, canvas demo at /demo,
                              the JavaScript client at /contrail.js) beside the WebSocket upgrade
      --procedures FILE       procedures clients may call, with their constraints (JSON:
                              {"procedures": [{"name": "Canvas.rename", "constraints": [...]}]},
                              optionally with scope roots: "roots": {"Canvas": {"clsName": "Canvas"}})
      --metrics               serve Prometheus metrics at /metrics (with --token-file or --jwt-key,
                              only to an admin's Authorization: Bearer token)
      --log-format FORMAT     "text" (default) or "json": one JSON object per line with time,
                              level, event, session and scope (never a token or a hook parameter)
      --drain-timeout SECS    how long a drain may take before the process exits anyway
                              (default 10)
      --quiet                 do not log
      -h, --help              show this help
    """

    static func run(_ arguments: [String]) async throws {
        // Parsing reads files and may load OpenSSL (--jwt-key): blocking, so on a thread of its own.
        let parsed = await withCheckedContinuation { (continuation: CheckedContinuation<Result<ServerOptions?, any Error>, Never>) in
            Thread.detachNewThread { continuation.resume(returning: Result { try parse(arguments) }) }
        }
        guard let options = try parsed.get() else {
            print(help)
            return
        }
        let server = try ContrailServer(options: options)
        let port = try await server.start()
        let (ws, http) = options.tls == nil ? ("ws", "http") : ("wss", "https")
        let json = options.logFormat == .json
        if !json {
            // In JSON the server's own `server.listening` line says it; every line there is an object.
            FileHandle.standardError.write(Data("contrail serve: listening on \(ws)://\(options.host):\(port)/\n".utf8))
            if options.servesPages {
                FileHandle.standardError.write(Data("contrail serve: inspector \(http)://\(options.host):\(port)/, demo \(http)://\(options.host):\(port)/demo\n".utf8))
            }
        }
        var reloadLog = OperatorLog.standardError
        if json { reloadLog = { line in server.log("tls.reload", line) } }
        let reloader = options.tls.map { CertificateReloader($0, log: reloadLog) }
        await waitForTermination()
        reloader?.stop()
        // A second signal, or a drain that overruns its bound (a stuck disk), ends the process at once:
        // every acknowledged change set is durable already.
        let watchdog = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "contrail.serve.drain"))
        let bound = options.drainTimeout.components
        watchdog.schedule(deadline: .now() + .seconds(Int(bound.seconds) + 2))
        watchdog.setEventHandler { exit(1) }
        watchdog.resume()
        for number in [SIGINT, SIGTERM] { signal(number, SIG_DFL) }
        let finished = await server.drain()
        if !finished { exit(1) }
    }

    /// The options from the arguments; nil when help was asked for.
    static func parse(_ arguments: [String]) throws -> ServerOptions? {
        var options = ServerOptions()
        options.port = 3000
        options.servesPages = true
        var remaining = arguments[...]
        var token = ProcessInfo.processInfo.environment["CONTRAIL_TOKEN"]
        var natsCredentialsFile: String?
        var natsCA: String?
        var tlsFiles: (certificate: String?, key: String?) = (nil, nil)
        var jwt: JWTVerifier?
        func value(_ flag: String) throws -> String {
            guard let next = remaining.popFirst() else { throw CLIError.usage("\(flag) needs a value\n\n\(help)") }
            return next
        }
        func number<T: FixedWidthInteger>(_ flag: String, _: T.Type) throws -> T {
            let text = try value(flag)
            guard let parsed = T(text), parsed >= 0 else { throw CLIError.usage("\(flag): '\(text)' is not a valid number\n\n\(help)") }
            return parsed
        }
        func historyPeriod(_ text: String) -> Duration? {
            let units: [Character: Double] = ["d": 86_400, "h": 3_600, "m": 60, "s": 1]
            guard let unit = text.last.flatMap({ units[$0] }), let count = Double(text.dropLast()), count > 0, count.isFinite,
                  count * unit < 1e12 else { return nil }
            return .milliseconds(Int64(count * unit * 1000))
        }
        func seconds(_ flag: String) throws -> Duration {
            let text = try value(flag)
            guard let parsed = Double(text), parsed > 0, parsed.isFinite else {
                throw CLIError.usage("\(flag): '\(text)' is not a positive number of seconds\n\n\(help)")
            }
            return .milliseconds(Int64(parsed * 1000))
        }
        while let flag = remaining.popFirst() {
            switch flag {
            case "-h", "--help": return nil
            case "--host": options.host = try value(flag)
            case "--port": options.port = try number(flag, UInt16.self)
            case "--data": options.dataDirectory = URL(filePath: try value(flag), directoryHint: .isDirectory)
            case "--backup-dir": options.backupDirectory = URL(filePath: try value(flag), directoryHint: .isDirectory)
            case "--history":
                let text = try value(flag)
                guard let period = historyPeriod(text) else {
                    throw CLIError.usage("--history: '\(text)' is not a period such as 30d, 12h, 90m or 3600s\n\n\(help)")
                }
                options.historyRetention = period
            case "--fsync": options.fsync = try fsyncPolicy(try value(flag))
            case "--session-expiry": options.sessionExpiry = try seconds(flag)
            case "--establish-timeout": options.establishTimeout = try seconds(flag)
            case "--handshake-timeout": options.handshakeTimeout = try seconds(flag)
            case "--max-waiting-bytes": options.maxWaitingSessionBytes = try number(flag, Int.self)
            case "--ping-interval": options.pingInterval = try seconds(flag)
            case "--max-message-bytes": options.maxMessageBytes = try number(flag, Int.self)
            case "--max-fragments": options.maxFragmentsPerMessage = try number(flag, Int.self)
            case "--max-objects": options.maxObjectsPerScope = try number(flag, Int.self)
            case "--max-resend-bytes": options.maxResendBytes = try number(flag, Int.self)
            case "--state-chunk-objects": options.stateChunkObjects = try number(flag, Int.self)
            case "--state-chunk-bytes": options.stateChunkBytes = try number(flag, Int.self)
            case "--max-open-scopes": options.maxOpenScopes = try number(flag, Int.self)
            case "--max-scopes-per-session": options.maxScopesPerSession = try number(flag, Int.self)
            case "--scope-idle": options.scopeIdleTimeout = try seconds(flag)
            case "--scope": options.scopes.append(try value(flag))
            case "--create-scopes":
                let text = try value(flag)
                guard let mode = ScopeCreation(rawValue: text) else {
                    throw CLIError.usage("--create-scopes: '\(text)' is not fetch, write or declared\n\n\(help)")
                }
                options.scopeCreation = mode
            case "--max-scopes": options.maxScopes = try number(flag, Int.self)
            case "--failure-delay": options.failedAttemptDelay = try seconds(flag)
            case "--max-failure-delay": options.maxFailedAttemptDelay = try seconds(flag)
            case "--trusted-proxy":
                let text = try value(flag)
                guard let range = AddressRange(text) else {
                    throw CLIError.usage("--trusted-proxy: '\(text)' is not an IP address or CIDR range\n\n\(help)")
                }
                options.trustedProxies.append(range)
            case "--token": token = try value(flag)
            case "--jwt-key":
                let path = try value(flag)
                do throws(JWTVerifier.KeyError) { jwt = try JWTVerifier(keyFile: URL(filePath: path)) } catch {
                    throw CLIError.usage("--jwt-key: \(error.description)")
                }
            case "--token-file":
                let path = try value(flag)
                do {
                    var text = try String(contentsOfFile: path, encoding: .utf8)
                    while text.last?.isNewline == true { text.removeLast() }
                    token = text
                } catch {
                    throw CLIError.usage("--token-file: cannot read '\(path)': \(error.localizedDescription)")
                }
            case "--nats":
                let text = try value(flag)
                do {
                    options.cluster = ClusterOptions(servers: try NATSServerURL.list(text))
                } catch {
                    throw CLIError.usage("--nats: \(error)\n\n\(help)")
                }
            case "--nats-credentials": natsCredentialsFile = try value(flag)
            case "--nats-ca": natsCA = try value(flag)
            case "--nats-log-format":
                guard options.cluster != nil else { throw CLIError.usage("--nats-log-format needs --nats first\n\n\(help)") }
                let format = try number(flag, Int.self)
                guard (1...2).contains(format) else { throw CLIError.usage("--nats-log-format: \(format) is not 1 or 2\n\n\(help)") }
                options.cluster?.logFormat = format
            case "--nats-tls-first":
                guard options.cluster != nil else { throw CLIError.usage("--nats-tls-first needs --nats first\n\n\(help)") }
                options.cluster?.tlsHandshakeFirst = true
            case "--nats-replicas":
                guard options.cluster != nil else { throw CLIError.usage("--nats-replicas needs --nats first\n\n\(help)") }
                options.cluster?.replicas = max(1, try number(flag, Int.self))
            case "--tls-cert": tlsFiles.certificate = try value(flag)
            case "--tls-key": tlsFiles.key = try value(flag)
            case "--no-pages": options.servesPages = false
            case "--quiet": options.log = nil
            case "--metrics": options.servesMetrics = true
            case "--log-format":
                let text = try value(flag)
                guard let format = ServerLogFormat(rawValue: text) else {
                    throw CLIError.usage("--log-format: '\(text)' is not text or json\n\n\(help)")
                }
                options.logFormat = format
            case "--drain-timeout": options.drainTimeout = try seconds(flag)
            case "--procedures": (options.procedures, options.roots) = try declarations(file: try value(flag))
            default: throw CLIError.usage("contrail serve: unknown option '\(flag)'\n\n\(help)")
            }
        }
        if let token, token.isEmpty { throw CLIError.usage("contrail serve: the token is empty") }
        options.sessionHook = sessionHook(sharedToken: token, jwt: jwt)
        if options.cluster != nil {
            options.cluster?.credentials = try NATSCredentialsSource.load(file: natsCredentialsFile)
        } else if natsCredentialsFile != nil {
            throw CLIError.usage("--nats-credentials needs --nats\n\n\(help)")
        }
        if let natsCA {
            guard options.cluster != nil else { throw CLIError.usage("--nats-ca needs --nats\n\n\(help)") }
            guard FileManager.default.isReadableFile(atPath: natsCA) else {
                throw CLIError.usage("--nats-ca: cannot read '\(natsCA)'")
            }
            options.cluster?.tls = TLSClientConfiguration(caBundlePath: natsCA)
        }
        options.tls = try tlsContext(tlsFiles)
        if options.historyRetention != nil && options.dataDirectory == nil && options.cluster == nil {
            throw CLIError.usage("--history needs --data or --nats (a server in memory keeps no history)\n\n\(help)")
        }
        if options.cluster != nil && options.dataDirectory != nil {
            throw CLIError.usage("--nats and --data exclude each other: a cluster keeps its scopes in JetStream\n\n\(help)")
        }
        return options
    }

    /// The TLS context of `--tls-cert` and `--tls-key` (both or neither).
    static func tlsContext(_ files: (certificate: String?, key: String?)) throws -> TLSServerContext? {
        switch files {
        case (nil, nil): return nil
        case (let certificate?, let key?):
            do {
                return try TLSServerContext(certificateChainPath: certificate, privateKeyPath: key)
            } catch {
                throw CLIError.usage("contrail serve: \(error)")
            }
        default: throw CLIError.usage("--tls-cert and --tls-key go together\n\n\(help)")
        }
    }

    /// The session hook for a shared token and/or a JWT key: the shared token grants everything,
    /// a JWT its claims; nil for neither (no authentication).
    static func sessionHook(sharedToken: String?, jwt: JWTVerifier?)
        -> (@Sendable (_ params: [String: JSON], _ headers: [(String, String)]) async -> SessionDecision)?
    {
        guard sharedToken != nil || jwt != nil else { return nil }
        let expected = sharedToken.map { Array($0.utf8) }
        return { params, headers in
            guard let given = JWTVerifier.token(params: params, headers: headers) else { return .deny(reason: "no token") }
            if let expected, constantTimeEqual(Array(given.utf8), expected) { return .allowEverything }
            guard let jwt else { return .deny(reason: "wrong token") }
            do throws(JWTError) { return .allow(try jwt.identity(fromToken: given)) } catch { return .deny(reason: error.description) }
        }
    }

    /// Compares without returning early at the first difference (no timing hint for guessing).
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
        }
        return difference == 0
    }

    /// `always`, `never` or `interval:<N>ms` / `interval:<N>s`.
    static func fsyncPolicy(_ text: String) throws -> FsyncPolicy {
        switch text {
        case "always": return .everyRecord
        case "never": return .never
        default:
            let spec = text.hasPrefix("interval:") ? text.dropFirst("interval:".count) : ""
            let (digits, unit) = spec.hasSuffix("ms") ? (spec.dropLast(2), Int64(1)) : (spec.dropLast(1), Int64(1000))
            guard spec.hasSuffix("s"), let amount = Int64(digits), amount > 0 else {
                throw CLIError.usage("--fsync: '\(text)' is not always, never or interval:<N>ms\n\n\(help)")
            }
            return .interval(.milliseconds(amount * unit))
        }
    }

    /// The procedures and scope roots declared in a JSON file (see `ProcedureDeclaration`, `ScopeRoot`).
    private static func declarations(file: String) throws -> ([ServerProcedure], [String: ScopeRoot]) {
        let data: Data
        do { data = try Data(contentsOf: URL(filePath: file)) } catch {
            throw CLIError.usage("--procedures: cannot read '\(file)': \(error.localizedDescription)")
        }
        do {
            let json = try JSON(parsing: data)
            return (try ServerProcedure.list(json: json), try ScopeRoot.list(json: json))
        } catch {
            throw CLIError.usage("--procedures: '\(file)': \(error)")
        }
    }

    /// Returns when the process gets SIGINT or SIGTERM.
    private static func waitForTermination() async {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let queue = DispatchQueue(label: "contrail.serve.signals")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = SignalOnce(continuation)
            for number in [SIGINT, SIGTERM] {
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler { once.fire() }
                source.resume()
                once.keep(source)
            }
        }
    }
}


/// Resumes a continuation on the first of several signals, and keeps the signal sources alive.
private final class SignalOnce: Sendable {
    private let state: SanitizerVisibleMutex<(continuation: CheckedContinuation<Void, Never>?, sources: [any DispatchSourceSignal])>

    init(_ continuation: CheckedContinuation<Void, Never>) {
        state = SanitizerVisibleMutex((continuation, []))
    }

    func keep(_ source: any DispatchSourceSignal) {
        state.withLock { $0.sources.append(source) }
    }

    func fire() {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume()
    }
}
