/// How a connection proves itself to a NATS server that requires authorization: a user and
/// password, or a token, sent in the `CONNECT` line. Never part of a URL (a URL shows in process
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

    /// The credentials in a file of `NAME=value` lines with the environment variables' names (the
    /// shape of a systemd `EnvironmentFile`; `#` starts a comment line, blank lines are skipped,
    /// the value is everything after the first `=`, quotes are not removed). O(length).
    /// - Throws: `invalidCredentials` for an unknown name, a line without `=`, an incomplete or
    ///   ambiguous set, or a file that names none.
    public static func parsing(_ text: String) throws(NATSError) -> NATSCredentials {
        var values: [String: String] = [:]
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
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

    /// The members this adds to `CONNECT`.
    var connectFields: [String: String] {
        switch self {
        case .none: [:]
        case .userPassword(let user, let password): ["user": user, "pass": password]
        case .token(let token): ["auth_token": token]
        }
    }

    /// What they are, without the secret: "none", "user 'alice' with a password", "a token".
    public var description: String {
        switch self {
        case .none: "none"
        case .userPassword(let user, _): "user '\(user)' with a password"
        case .token: "a token"
        }
    }

    /// The same as `description` (no secret).
    public var debugDescription: String { description }

    /// A mirror without the secret (`dump` and string interpolation of containing values use it).
    public var customMirror: Mirror { Mirror(self, children: ["credentials": description]) }
}
