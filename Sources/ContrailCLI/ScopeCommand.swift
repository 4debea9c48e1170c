import ContrailServer
import Foundation

/// `contrail scope`: a scope's history on a running `contrail serve` (Protocol §8.26), through its
/// admin API with the same credential as `contrail admin`: list the change sets, print the state
/// at a point, restore it as one new change set, mark a named revision.
enum ScopeCommand {
    static let help = """
    usage: contrail scope [--server URL] [--token-file PATH] [--json] COMMAND NAME [arguments]

    A scope's history on a running contrail serve with --data or --nats (any server of the
    cluster), through its admin API: the
    credential is an admin's, as for contrail admin (--token-file PATH, or CONTRAIL_ADMIN_TOKEN,
    or CONTRAIL_TOKEN; never on the command line), and needs the scope's read grant (history,
    at) or write grant (restore, mark). The server keeps the change sets its scope logs hold
    (a cluster: its stream after the latest snapshot), and with serve --history PERIOD also
    those compacted away (trimmed) within PERIOD.

      history NAME [--since POINT]   the change sets after POINT (default: all kept): sequence
                                     number, time, user, fragments; and the named revisions
      at NAME --seq POINT            the scope's state after POINT, as JSON
      restore NAME --seq POINT       bring the scope back to its state after POINT as one new
                                     change set that every connected client receives
      mark NAME LABEL                name the scope's current state LABEL (a named revision)

      POINT                          a sequence number, a revision label, or an ISO 8601 time
                                     (2026-11-27T08:00:00Z: the last change set at or before it)
      --server URL                   the server (default http://127.0.0.1:3000)
      --json                         print the server's JSON answers as they are
    """

    static func run(_ arguments: [String]) async throws {
        guard let parsed = try AdminArguments(arguments, valued: ["--since", "--seq", "--revision"]) else {
            print(help)
            return
        }
        let (words, raw) = (parsed.words, parsed.raw)
        let point = parsed.flags["--since"] ?? parsed.flags["--seq"] ?? parsed.flags["--revision"]
        guard words.count >= 2 else { throw CLIError.usage(help) }
        let (command, name) = (words[0], words[1])
        let client = try parsed.client()
        let scope = "/api/admin/scopes/\(AdminCommand.encoded(name))"
        switch (command, words.count) {
        case ("history", 2):
            let query = point.map { "?since=\(AdminCommand.encoded($0))" } ?? ""
            let json = try await AdminCommand.call(client, "GET", "\(scope)/history\(query)")
            guard !raw, let history = ScopeHistory(json: json) else { return AdminCommand.printJSON(json) }
            printHistory(history)
        case ("at", 2):
            guard let point else { throw CLIError.usage("usage: contrail scope at NAME --seq POINT") }
            let json = try await AdminCommand.call(client, "GET", "\(scope)/at/\(AdminCommand.encoded(point))")
            if raw { return AdminCommand.printJSON(json) }
            FileHandle.standardError.write(Data("'\(name)' after change set \(json["seq"]?.int64Value ?? 0):\n".utf8))
            AdminCommand.printJSON(json["state"] ?? .null)
        case ("restore", 2):
            guard let point else { throw CLIError.usage("usage: contrail scope restore NAME --seq POINT") }
            let body = JSON.object(["to": .string(point)]).serialized()
            let json = try await AdminCommand.call(client, "POST", "\(scope)/restore", body: body)
            if raw { return AdminCommand.printJSON(json) }
            let count = json["fragments"]?.int64Value ?? 0
            print(count == 0 ? "'\(name)' is in its state after change set \(json["seq"]?.int64Value ?? 0) already: nothing restored"
                : "restored '\(name)' to its state after change set \(json["seq"]?.int64Value ?? 0): one change set of \(count) fragment(s)")
        case ("mark", 3):
            let body = JSON.object(["label": .string(words[2])]).serialized()
            let json = try await AdminCommand.call(client, "POST", "\(scope)/revisions", body: body)
            raw ? AdminCommand.printJSON(json) : print("revision '\(words[2])' of '\(name)' marked at change set \(json["seq"]?.int64Value ?? 0)")
        default:
            throw CLIError.usage("contrail scope: unknown command or wrong arguments: \(words.joined(separator: " "))\n\n\(help)")
        }
    }

    /// One line per change set (and per revision after the change set it names), then a summary.
    private static func printHistory(_ history: ScopeHistory) {
        print("SEQ      TIME                      USER             FRAGMENTS")
        var marks = Dictionary(grouping: history.revisions, by: \.sequence)
        for revision in marks[history.oldest] ?? [] where history.entries.first.map({ $0.sequence > revision.sequence }) ?? true {
            print("         revision '\(revision.label)' at \(revision.sequence), by \(user(revision.user)) at \(revision.time.formatted(.iso8601))")
        }
        marks[history.oldest] = nil
        for entry in history.entries {
            let fragments = (entry.fragments.arrayValue ?? []).map(summary).joined(separator: ", ")
            print(AdminCommand.padded(String(entry.sequence), 8) + " " + AdminCommand.padded(entry.time?.formatted(.iso8601) ?? "-", 25) + " "
                  + AdminCommand.padded(entry.user.map(user) ?? "-", 16) + " " + fragments)
            for revision in marks[entry.sequence] ?? [] {
                print("         revision '\(revision.label)', by \(user(revision.user)) at \(revision.time.formatted(.iso8601))")
            }
        }
        print("\(history.entries.count) change set(s) shown; states from after \(history.oldest) to \(history.latest) can be shown")
    }

    private static func user(_ name: String) -> String { name.isEmpty ? "(server)" : name }

    /// `add Card 1a2b3c4d {title, done}`.
    private static func summary(_ fragment: JSON) -> String {
        let kind = fragment["type"]?.stringValue ?? "?"
        let uuid = String((fragment["uuid"]?.stringValue ?? "").prefix(8))
        let keys = (fragment["properties"]?.objectValue ?? [:]).keys.sorted().joined(separator: ", ")
        return "\(kind) \(fragment["clsName"]?.stringValue ?? "?") \(uuid) {\(keys)}"
    }
}
