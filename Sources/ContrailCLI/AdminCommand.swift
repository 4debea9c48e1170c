import ContrailServer
import Foundation

/// `contrail admin`: lists and ends sessions, lists scopes, exports, imports and compacts a scope,
/// and takes a backup, against a running `contrail serve` (its `/api/admin/…` routes); restores a
/// backup into a data directory offline.
enum AdminCommand {
    static let help = """
    usage: contrail admin [--server URL] [--token-file PATH] [--json] COMMAND [arguments]

    Talks to a running contrail serve with an admin credential: the shared token of its
    --token-file, or a JSON Web Token with "admin": true. The credential comes from --token-file
    PATH, or the CONTRAIL_ADMIN_TOKEN environment variable, or CONTRAIL_TOKEN; never from the
    command line. The server must run with authentication (--token-file or --jwt-key).

      sessions                 live sessions: number, user, address, scopes, bytes queued
      scopes                   scopes: name, loaded, objects, subscribers
      end-session N            end session N (close 4097; its client may open a new session)
      end-user USER            end every session of USER (stop issuing USER's credentials first)
      export SCOPE [FILE]      the scope's state as JSON, into FILE or to standard output
      import SCOPE FILE        make FILE (an export; - for standard input) the scope's state,
                               as one atomic change set every client sees
      compact SCOPE            replace the scope's log with one snapshot record
      backup [NAME]            a consistent backup of every scope, taken while the server runs,
                               into the server's --backup-dir (in NAME, default backup-TIME)
      restore BACKUP --data DIR
                               offline: copy the backup in directory BACKUP into the data
                               directory DIR (which must hold no scope log), after checking it

      --server URL             the server (default http://127.0.0.1:3000; plain HTTP: reach a
                               remote or TLS server through an SSH tunnel)
      --json                   print the server's JSON answers as they are
    """

    static func run(_ arguments: [String]) async throws {
        guard let parsed = try AdminArguments(arguments, valued: ["--data"]) else {
            print(help)
            return
        }
        let (words, raw, data) = (parsed.words, parsed.raw, parsed.flags["--data"])
        guard let command = words.first else { throw CLIError.usage(help) }
        let operands = Array(words.dropFirst())
        if command == "restore" {
            guard operands.count == 1, let data else { throw CLIError.usage("usage: contrail admin restore BACKUP --data DIR") }
            try restore(from: operands[0], into: data)
            return
        }
        let client = try parsed.client()
        switch (command, operands.count) {
        case ("sessions", 0):
            let json = try await call(client, "GET", "/api/admin/sessions")
            raw ? printJSON(json) : printSessions(json)
        case ("scopes", 0):
            let json = try await call(client, "GET", "/api/admin/scopes")
            raw ? printJSON(json) : printScopes(json)
        case ("end-session", 1):
            guard Int(operands[0]) != nil else { throw CLIError.usage("end-session: '\(operands[0])' is not a session number") }
            let json = try await call(client, "POST", "/api/admin/sessions/\(operands[0])/end")
            raw ? printJSON(json) : print("session \(operands[0]) ended")
        case ("end-user", 1):
            let json = try await call(client, "POST", "/api/admin/users/\(encoded(operands[0]))/end")
            raw ? printJSON(json) : print("\(json["ended"]?.int64Value ?? 0) session(s) of '\(operands[0])' ended")
        case ("export", 1), ("export", 2):
            let json = try await call(client, "GET", "/api/admin/scopes/\(encoded(operands[0]))/export")
            let bytes = json.serialized(sortedKeys: true) + [10]
            if operands.count == 2 {
                try Data(bytes).write(to: URL(filePath: operands[1]), options: .atomic)
                FileHandle.standardError.write(Data("exported '\(operands[0])' (\(json["objects"]?.objectValue?.count ?? 0) objects) to \(operands[1])\n".utf8))
            } else {
                FileHandle.standardOutput.write(Data(bytes))
            }
        case ("import", 2):
            let body: Data
            do {
                body = operands[1] == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(filePath: operands[1]))
            } catch {
                throw CLIError.usage("import: cannot read '\(operands[1])': \(error.localizedDescription)")
            }
            let json = try await call(client, "POST", "/api/admin/scopes/\(encoded(operands[0]))/import", body: Array(body))
            raw ? printJSON(json) : print("imported into '\(operands[0])': \(json["fragments"]?.int64Value ?? 0) fragment(s)")
        case ("compact", 1):
            let json = try await call(client, "POST", "/api/admin/scopes/\(encoded(operands[0]))/compact")
            raw ? printJSON(json) : print("compacted '\(operands[0])': \(json["bytesBefore"]?.int64Value ?? 0) → \(json["bytesAfter"]?.int64Value ?? 0) bytes, \(json["objects"]?.int64Value ?? 0) objects")
        case ("backup", 0), ("backup", 1):
            let body = operands.first.map { JSON.object(["name": .string($0)]).serialized() } ?? []
            let json = try await call(client, "POST", "/api/admin/backup", body: body)
            raw ? printJSON(json) : print("backup of \(json["scopes"]?.arrayValue?.count ?? 0) scope(s) in \(json["directory"]?.stringValue ?? "?")")
        default:
            throw CLIError.usage("contrail admin: unknown command or wrong arguments: \(words.joined(separator: " "))\n\n\(help)")
        }
    }

    private static func value(_ remaining: inout ArraySlice<String>, _ flag: String) throws -> String {
        guard let next = remaining.popFirst() else { throw CLIError.usage("\(flag) needs a value") }
        return next
    }

    /// The admin credential: `--token-file`, else `CONTRAIL_ADMIN_TOKEN`, else `CONTRAIL_TOKEN`.
    static func credential(_ file: String?) throws -> String {
        if let file {
            do {
                var text = try String(contentsOfFile: file, encoding: .utf8)
                while text.last?.isNewline == true { text.removeLast() }
                guard !text.isEmpty else { throw CLIError.usage("--token-file: '\(file)' is empty") }
                return text
            } catch let error as CLIError {
                throw error
            } catch {
                throw CLIError.usage("--token-file: cannot read '\(file)': \(error.localizedDescription)")
            }
        }
        let environment = ProcessInfo.processInfo.environment
        guard let token = environment["CONTRAIL_ADMIN_TOKEN"] ?? environment["CONTRAIL_TOKEN"], !token.isEmpty else {
            throw CLIError.usage("no admin credential: give --token-file PATH or set CONTRAIL_ADMIN_TOKEN")
        }
        return token
    }

    /// Sends the request; a non-2xx answer becomes an error with the server's message.
    static func call(_ client: AdminHTTPClient, _ method: String, _ path: String, body: [UInt8] = []) async throws -> JSON {
        let response = try await client.request(method, path, body: body)
        let json = try? JSON(parsing: response.body)
        guard (200..<300).contains(response.status), let json else {
            let message = json?["error"]?.stringValue ?? response.text.trimmingCharacters(in: .whitespacesAndNewlines)
            throw AdminCommandError(status: response.status, message: message)
        }
        return json
    }

    /// A path segment, percent-encoded (a scope name may hold `/`, `?`, spaces).
    static func encoded(_ segment: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return segment.addingPercentEncoding(withAllowedCharacters: allowed) ?? segment
    }

    private static func restore(from backup: String, into data: String) throws {
        let report = try ContrailServer.restoreBackup(from: URL(filePath: backup, directoryHint: .isDirectory),
                                                      into: URL(filePath: data, directoryHint: .isDirectory))
        print("restored \(report.scopes.count) scope(s) from the backup of \(report.created) into \(data)")
    }

    static func printJSON(_ json: JSON) {
        print(String(decoding: json.serialized(sortedKeys: true), as: UTF8.self))
    }

    private static func printSessions(_ json: JSON) {
        let sessions = json["sessions"]?.arrayValue ?? []
        print("SESSION  USER                 ADDRESS                BYTES-QUEUED  SCOPES")
        for session in sessions {
            let number = String(session["number"]?.int64Value ?? 0)
            let user = session["user"]?.stringValue ?? ""
            let address = session["address"]?.stringValue ?? "(detached)"
            let queued = String(session["bytesQueued"]?.int64Value ?? 0)
            let scopes = (session["scopes"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ", ")
            print(padded(number, 8) + " " + padded(user.isEmpty ? "-" : user, 20) + " " + padded(address, 22) + " "
                  + padded(queued, 13) + " " + scopes)
        }
        print("\(sessions.count) session(s)")
    }

    private static func printScopes(_ json: JSON) {
        let scopes = json["scopes"]?.arrayValue ?? []
        print("OBJECTS  SUBSCRIBERS  SCOPE")
        for scope in scopes {
            let objects = scope["objects"]?.int64Value.map(String.init) ?? "-"
            print(padded(objects, 8) + " " + padded(String(scope["subscribers"]?.int64Value ?? 0), 12) + " " + (scope["name"]?.stringValue ?? ""))
        }
        print("\(scopes.count) scope(s); '-': not loaded")
    }

    static func padded(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}

/// The server refused an admin request: its status and message.
struct AdminCommandError: Error, CustomStringConvertible {
    let status: Int
    let message: String
    var description: String { "contrail admin: the server answered \(status): \(message)" }
}
