/// One step of a convergence run. Positions are raw numbers, taken modulo what is there when the
/// step runs, so any sublist of a run still replays (which is what shrinking needs).
package indirect enum FuzzOperation: Hashable, Sendable, Codable, CustomStringConvertible {
    /// A model edit made by one client.
    package enum Edit: Hashable, Sendable, Codable, CustomStringConvertible {
        case setTitle(Int)
        case addScore(Int)
        /// Inserts a new item into list 0 (`items`) or 1 (`shelf`) at a position.
        case insert(list: Int, at: Int, label: Int)
        case remove(list: Int, at: Int)
        case moveWithin(list: Int, from: Int, to: Int)
        /// Moves an item from one list to the other.
        case moveBetween(list: Int, from: Int, to: Int)
        case vote(list: Int, at: Int)
        case relabel(list: Int, at: Int, label: Int)
        /// Adds a nested note to an item.
        case addNote(list: Int, at: Int, text: Int)
        case removeNote(list: Int, at: Int)
        /// Points `board.pinned` at an item (or clears it when the list is empty).
        case pin(list: Int, at: Int)
        case unpin
        /// Points one item's `link` at another item.
        case link(list: Int, at: Int, target: Int)
        /// Types `text` (a few letters) into `board.note` at a position.
        case typeText(at: Int, text: Int)
        /// Deletes up to `count` characters of `board.note` from a position.
        case deleteText(at: Int, count: Int)
        /// Adds `delta` (negative: subtracts) to `board.likes`.
        case addLikes(Int)

        package var description: String {
            switch self {
            case .setTitle(let value): return "title=\(value)"
            case .addScore(let value): return "score+=\(value)"
            case .insert(let list, let at, let label): return "insert(l\(list)@\(at) '\(label)')"
            case .remove(let list, let at): return "remove(l\(list)@\(at))"
            case .moveWithin(let list, let from, let to): return "move(l\(list) \(from)->\(to))"
            case .moveBetween(let list, let from, let to): return "moveBetween(l\(list)@\(from) -> @\(to))"
            case .vote(let list, let at): return "vote(l\(list)@\(at))"
            case .relabel(let list, let at, let label): return "relabel(l\(list)@\(at) '\(label)')"
            case .addNote(let list, let at, let text): return "addNote(l\(list)@\(at) '\(text)')"
            case .removeNote(let list, let at): return "removeNote(l\(list)@\(at))"
            case .pin(let list, let at): return "pin(l\(list)@\(at))"
            case .unpin: return "unpin"
            case .link(let list, let at, let target): return "link(l\(list)@\(at) -> \(target))"
            case .typeText(let at, let text): return "type(note@\(at) '\(Self.letters(text))')"
            case .deleteText(let at, let count): return "delete(note@\(at) \(count))"
            case .addLikes(let delta): return "likes+=\(delta)"
            }
        }
    }

    /// Edits by `client`, each in the change set of the current turn.
    case edit(client: Int, Edit)
    /// Edits by `client` in one atomic change set.
    case atomic(client: Int, [Edit])
    /// Sets the client's sync mode: 0 realtime, 1 pushOnly, 2 syncOff, 3 manual.
    case mode(client: Int, Int)
    /// `session.sync(scope)` (not awaited).
    case syncNow(client: Int)
    case pause(client: Int)
    case resume(client: Int)
    /// Cuts the client's transport; it reconnects after `reconnect`.
    case drop(client: Int)
    case reconnect(client: Int)
    case undo(client: Int)
    case redo(client: Int)
    /// Stops the server and starts a new one on the same data (in a child process: SIGKILL).
    case restartServer
    /// Ends the main-actor turn: pending edits flush, queued deliveries run.
    case drain
    /// Lets other tasks run once.
    case yield

    package var description: String {
        switch self {
        case .edit(let client, let edit): return "c\(client) \(edit)"
        case .atomic(let client, let edits): return "c\(client) atomic[\(edits.map(\.description).joined(separator: ", "))]"
        case .mode(let client, let mode): return "c\(client) mode \(["realtime", "pushOnly", "syncOff", "manual"][mode % 4])"
        case .syncNow(let client): return "c\(client) sync()"
        case .pause(let client): return "c\(client) pauseIncoming"
        case .resume(let client): return "c\(client) resumeIncoming"
        case .drop(let client): return "c\(client) drop"
        case .reconnect(let client): return "c\(client) reconnect"
        case .undo(let client): return "c\(client) undo"
        case .redo(let client): return "c\(client) redo"
        case .restartServer: return "restart server"
        case .drain: return "drain"
        case .yield: return "yield"
        }
    }

    /// A random run: `clients` clients and `count` steps drawn from `random`; with `shared`, half
    /// the edits are of the shared text and counter.
    package static func randomRun(clients: Int, count: Int, restarts: Bool, shared: Bool = false,
                                  using random: inout SplitMix64) -> [FuzzOperation] {
        (0..<count).map { _ in randomStep(clients: clients, restarts: restarts, shared: shared, using: &random) }
    }

    static func randomStep(clients: Int, restarts: Bool, shared: Bool, using random: inout SplitMix64) -> FuzzOperation {
        let client = Int.random(in: 0..<clients, using: &random)
        func edit() -> Edit { shared && Bool.random(using: &random) ? .randomShared(using: &random) : .random(using: &random) }
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<52: return .edit(client: client, edit())
        case 52..<58: return .atomic(client: client, (0..<Int.random(in: 2...4, using: &random)).map { _ in edit() })
        case 58..<61: return .mode(client: client, Int.random(in: 0..<4, using: &random))
        case 61..<63: return .syncNow(client: client)
        case 63..<65: return .pause(client: client)
        case 65..<68: return .resume(client: client)
        case 68..<70: return .drop(client: client)
        case 70..<73: return .reconnect(client: client)
        case 73..<76: return .undo(client: client)
        case 76..<78: return .redo(client: client)
        case 78 where restarts: return .restartServer
        case 79..<92: return .drain
        default: return .yield
        }
    }
}

extension FuzzOperation.Edit {
    static func random(using random: inout SplitMix64) -> Self {
        func small() -> Int { Int.random(in: 0..<16, using: &random) }
        func list() -> Int { Int.random(in: 0..<2, using: &random) }
        switch Int.random(in: 0..<14, using: &random) {
        case 0: return .setTitle(small())
        case 1: return .addScore(Int.random(in: 1...3, using: &random))
        case 2, 3: return .insert(list: list(), at: small(), label: small())
        case 4: return .remove(list: list(), at: small())
        case 5: return .moveWithin(list: list(), from: small(), to: small())
        case 6: return .moveBetween(list: list(), from: small(), to: small())
        case 7: return .vote(list: list(), at: small())
        case 8: return .relabel(list: list(), at: small(), label: small())
        case 9: return .addNote(list: list(), at: small(), text: small())
        case 10: return .removeNote(list: list(), at: small())
        case 11: return .pin(list: list(), at: small())
        case 12: return .unpin
        default: return .link(list: list(), at: small(), target: small())
        }
    }

    /// An edit of the shared text or counter.
    static func randomShared(using random: inout SplitMix64) -> Self {
        switch Int.random(in: 0..<5, using: &random) {
        case 0, 1: return .typeText(at: Int.random(in: 0..<64, using: &random), text: Int.random(in: 0..<4_096, using: &random))
        case 2: return .deleteText(at: Int.random(in: 0..<64, using: &random), count: Int.random(in: 1...4, using: &random))
        default: return .addLikes(Int.random(in: -2...3, using: &random))
        }
    }

    /// One to three letters, spelled from `number`.
    static func letters(_ number: Int) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz")
        var rest = number
        var result = ""
        repeat {
            result.append(alphabet[rest % alphabet.count])
            rest /= alphabet.count
        } while rest > 0 && result.count < 3
        return result
    }
}
