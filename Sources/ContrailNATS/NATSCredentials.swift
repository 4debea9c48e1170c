/// How a connection proves itself to a NATS server that requires authorization: a user and
/// password, a token, an nkey (the server's nonce signed with its seed) or a user JWT with its
/// nkey (NATS decentralised auth, a `.creds` file), sent in the `CONNECT` line. Never part of a URL (a URL shows in process
/// lists and logs): they come from a file or the environment (`environment(_:)`, `parsing(_:)`).
///
/// Its descriptions and mirror name the kind and the user, never the password or token.
public enum NATSCredentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// No credentials (an open NATS, or one with a `no_auth_user`).
    case none
    /// `user` and `pass` in `CONNECT`.
    case userPassword(user: String, password: String)
    /// `auth_token` in `CONNECT`.
    case token(String)
    /// An nkey seed (`SU…`): `CONNECT` carries its public key and its signature of the server's nonce.
    case nkey(seed: String)
    /// A user JWT and the seed of the nkey it names (a `.creds` file): `CONNECT` carries the JWT and
    /// the signature of the server's nonce.
    case userJWT(jwt: String, seed: String)

    /// The environment variable holding a token.
    public static let tokenVariable = "CONTRAIL_NATS_TOKEN"
    /// The environment variable holding a user name.
    public static let userVariable = "CONTRAIL_NATS_USER"
    /// The environment variable holding that user's password.
    public static let passwordVariable = "CONTRAIL_NATS_PASSWORD"

    /// The credentials in `CONTRAIL_NATS_TOKEN`, or `CONTRAIL_NATS_USER` with
    /// `CONTRAIL_NATS_PASSWORD`; `.none` when none of them is set.
    /// - Throws: `invalidCredentials` for a user without a password (or the reverse), a token
    ///   beside a user, or an empty value.
    public static func environment(_ variables: [String: String]) throws(NATSError) -> NATSCredentials {
        try make(token: variables[tokenVariable], user: variables[userVariable], password: variables[passwordVariable],
                 source: "the environment")
    }

    /// The credentials in a file: a NATS `.creds` file (a `BEGIN NATS USER JWT` block and a
    /// `BEGIN USER NKEY SEED` block), a file holding one nkey seed (`SU…`), or `NAME=value` lines
    /// with the environment variables' names (the shape of a systemd `EnvironmentFile`; `#` starts
    /// a comment line, blank lines are skipped, the value is everything after the first `=`,
    /// quotes are not removed). O(length).
    /// - Throws: `invalidCredentials` for an unknown name, a line without `=`, an incomplete or
    ///   ambiguous set, a file that names none, a malformed seed or a `.creds` file without its JWT
    ///   or seed (the message never holds a secret).
    public static func parsing(_ text: String) throws(NATSError) -> NATSCredentials {
        if text.contains("BEGIN NATS USER JWT") { return try parsingCreds(text) }
        let trimmed = text.trimmingSpaces()
        if trimmed.hasPrefix("SU"), !trimmed.contains("=") {
            _ = try NKey(seedText: trimmed)
            return .nkey(seed: trimmed)
        }
        var values: [String: String] = [:]
        for (number, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            let trimmed = String(line).trimmingSpaces()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let equals = trimmed.firstIndex(of: "=") else {
                throw .invalidCredentials("line \(number + 1) of the credentials file is not NAME=value")
            }
            let name = String(trimmed[..<equals]).trimmingSpaces()
            guard [tokenVariable, userVariable, passwordVariable].contains(name) else {
                throw .invalidCredentials("line \(number + 1) of the credentials file names '\(name.prefix(40))', not "
                    + "\(userVariable), \(passwordVariable) or \(tokenVariable)")
            }
            values[name] = String(trimmed[trimmed.index(after: equals)...])
        }
        let credentials = try make(token: values[tokenVariable], user: values[userVariable],
                                   password: values[passwordVariable], source: "the credentials file")
        guard credentials != .none else { throw .invalidCredentials("the credentials file holds no credentials") }
        return credentials
    }

    /// A `.creds` file: the line after `BEGIN NATS USER JWT` is the JWT, the line after
    /// `BEGIN USER NKEY SEED` the seed.
    private static func parsingCreds(_ text: String) throws(NATSError) -> NATSCredentials {
        let lines = text.split(whereSeparator: \.isNewline).map { String($0).trimmingSpaces() }.filter { !$0.isEmpty }
        func block(_ marker: String) -> String? {
            guard let start = lines.firstIndex(where: { $0.hasPrefix("---") && $0.contains(marker) }), start + 1 < lines.count,
                  !lines[start + 1].hasPrefix("---") else { return nil }
            return lines[start + 1]
        }
        guard let jwt = block("BEGIN NATS USER JWT"), jwt.split(separator: ".").count == 3 else {
            throw .invalidCredentials("the .creds file has no user JWT")
        }
        guard let seed = block("BEGIN USER NKEY SEED") else { throw .invalidCredentials("the .creds file has no nkey seed") }
        let key = try NKey(seedText: seed)
        guard key.role == .user else { throw .invalidCredentials("the .creds file's seed is not a user's (SU…)") }
        return .userJWT(jwt: jwt, seed: seed)
    }

    private static func make(token: String?, user: String?, password: String?, source: String) throws(NATSError) -> NATSCredentials {
        for (name, value) in [(tokenVariable, token), (userVariable, user), (passwordVariable, password)] where value?.isEmpty == true {
            throw .invalidCredentials("\(name) in \(source) is empty")
        }
        switch (token, user, password) {
        case (nil, nil, nil): return .none
        case (let token?, nil, nil): return .token(token)
        case (nil, let user?, let password?): return .userPassword(user: user, password: password)
        case (_?, _, _): throw .invalidCredentials("\(source) sets both \(tokenVariable) and a user: set one of them")
        case (nil, _?, nil): throw .invalidCredentials("\(source) sets \(userVariable) without \(passwordVariable)")
        case (nil, nil, _?): throw .invalidCredentials("\(source) sets \(passwordVariable) without \(userVariable)")
        }
    }

    /// The members this adds to `CONNECT`, answering the server's `nonce` (an nkey signs it).
    /// - Throws: `invalidCredentials` for a malformed seed; `authorizationFailed` when an nkey is
    ///   given and the server sent no nonce (it does not do nkey authorization).
    func connectFields(nonce: String?) throws(NATSError) -> [String: String] {
        switch self {
        case .none: return [:]
        case .userPassword(let user, let password): return ["user": user, "pass": password]
        case .token(let token): return ["auth_token": token]
        case .nkey(let seed):
            let key = try NKey(seedText: seed)
            return ["nkey": key.publicKey, "sig": try Self.sign(nonce, with: key)]
        case .userJWT(let jwt, let seed):
            return ["jwt": jwt, "sig": try Self.sign(nonce, with: try NKey(seedText: seed))]
        }
    }

    private static func sign(_ nonce: String?, with key: NKey) throws(NATSError) -> String {
        guard let nonce else {
            throw .authorizationFailed("an nkey was given but the server sent no nonce to sign (it does not use nkeys)")
        }
        return try key.signature(Array(nonce.utf8))
    }

    /// What they are, without the secret: "none", "user 'alice' with a password", "a token", "an nkey
    /// seed", "a user JWT with its nkey seed".
    public var description: String {
        switch self {
        case .none: "none"
        case .userPassword(let user, _): "user '\(user)' with a password"
        case .token: "a token"
        case .nkey: "an nkey seed"
        case .userJWT: "a user JWT with its nkey seed"
        }
    }

    /// The same as `description` (no secret).
    public var debugDescription: String { description }

    /// A mirror without the secret (`dump` and string interpolation of containing values use it).
    public var customMirror: Mirror { Mirror(self, children: ["credentials": description]) }
}
