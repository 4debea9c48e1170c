/// The command line `contrail admin` and `contrail scope` share: `--server URL`, `--token-file PATH`
/// (never `--token`: the credential stays off the command line), `--json`, the flags of the command
/// itself (each with a value), and the words.
struct AdminArguments {
    var server = "http://127.0.0.1:3000"
    var tokenFile: String?
    var raw = false
    /// The command's own flags that were given, with their values.
    var flags: [String: String] = [:]
    var words: [String] = []

    /// Reads `arguments`; `valued` are the command's own flags that take a value. Nil for `--help`.
    init?(_ arguments: [String], valued: Set<String>) throws {
        var remaining = arguments[...]
        func value(_ flag: String) throws -> String {
            guard let next = remaining.popFirst() else { throw CLIError.usage("\(flag) needs a value") }
            return next
        }
        while let argument = remaining.popFirst() {
            switch argument {
            case "-h", "--help": return nil
            case "--server": server = try value(argument)
            case "--token-file": tokenFile = try value(argument)
            case "--token": throw CLIError.usage("--token: the admin credential never goes on the command line (others can read it); use --token-file or CONTRAIL_ADMIN_TOKEN")
            case "--json": raw = true
            case let flag where valued.contains(flag): flags[flag] = try value(flag)
            default: words.append(argument)
            }
        }
    }

    /// The HTTP client for the server, with the credential from `--token-file` or the environment.
    func client() throws -> AdminHTTPClient {
        try AdminHTTPClient(url: server, token: try AdminCommand.credential(tokenFile))
    }
}
