import Contrail
import ContrailFuzz
import Foundation

/// `contrail test-client --log FILE --seed N [--count N] [--title-bytes N] [--burst] [--compact-bytes N] [--new]`:
/// an app that edits offline, for crash tests.
///
/// It restores the scope "Shelf" from the fragment log (which must hold a snapshot, e.g. from a
/// fetch), prints `torn OFFSET BYTES` if it cut off a record a kill interrupted, `restored STATE`, then makes `count` change sets of random adds, moves between
/// collections, removals and value changes as a synced scope with no server, so every one stays
/// pending in the log. Every change set also sets `Shelf.step` to K (one more than the last,
/// across restarts). After each it prints `state K STATE`, and `durable K END` once the log says
/// its record is on disk (END: where the log's records end in the file, which is longer: preallocated). A test kills it (SIGKILL) at any point and checks what the log restores.
/// STATE is `Scope.stateJSON()` as sorted-key JSON on one line, with a title over 1,000 characters
/// (some are 2 MB, so that a kill can land in the middle of writing one) given as its length.
/// With `--title-bytes N` every change set also sets a title of N bytes: every record is large,
/// so that a test watching the file grow can kill the app in the middle of writing one.
/// With `--burst` it edits as fast as it can without waiting for the disk (no `durable` lines, no
/// 2 MB titles) and prints `state K #DIGEST` (``digest(_:)`` of STATE) after each `modify`
/// returns: the test checks that every printed edit survives the kill. `--compact-bytes N` sets
/// the log's compaction threshold (so that kills also land in compactions). `--new` starts a log
/// that does not exist yet with an empty shelf (its snapshot), to run the app alone (timing, perf).
enum TestClientCommand {
    static let usage = "usage: contrail test-client --log FILE --seed N [--count N (0: only restore)] [--title-bytes N] [--burst] [--compact-bytes N] [--new]"

    /// A failure the test should see (exit status 1).
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    @MainActor
    static func run(_ arguments: [String]) async throws {
        var rest = arguments[...]
        var path: String?
        var seed: UInt64 = 1
        var count = 1000
        var titleBytes = 0
        var burst = false
        var isNew = false
        var compactBytes: Int?
        while let argument = rest.popFirst() {
            if argument == "--burst" || argument == "--new" {
                if argument == "--burst" { burst = true } else { isNew = true }
                continue
            }
            guard let value = rest.popFirst() else { throw CLIError.usage("\(argument) needs a value\n\(usage)") }
            switch argument {
            case "--log": path = value
            case "--seed": seed = UInt64(value) ?? 1
            case "--count": count = Int(value) ?? count
            case "--title-bytes": titleBytes = max(0, Int(value) ?? 0)
            case "--compact-bytes": compactBytes = Int(value)
            default: throw CLIError.usage("unknown option '\(argument)'\n\(usage)")
            }
        }
        guard let path else { throw CLIError.usage(usage) }
        ModelRegistry.register(Shelf.self)
        let scope = Scope(name: "Shelf")
        let log = FragmentLog(url: URL(filePath: path))
        if let compactBytes { log.compactionThreshold = compactBytes }
        // A new log: the attach writes the empty shelf's snapshot first.
        if isNew, !FileManager.default.fileExists(atPath: path) { scope.root = Shelf() }
        let report = try log.attach(to: scope)
        if let torn = report.tornTail { emit("torn \(torn.offset) \(torn.discardedBytes)") }
        guard let shelf = scope.root as? Shelf else { throw Failure(description: "the log holds no Shelf snapshot") }
        scope.syncOffline()
        emit("restored \(state(of: scope))")
        var random = SplitMix64(seed: seed)
        let first = shelf.step + 1
        for step in first..<(first + max(count, 0)) {
            scope.modify(message: "edit \(step)") {
                shelf.step = step
                for _ in 0...(random.next() % 3) { edit(shelf, &random, allowLarge: !burst) }
                if titleBytes > 0 { shelf.title = String(repeating: "l", count: titleBytes + Int(random.next() % 1000)) }
            }
            if burst {
                emit("state \(step) #\(digest(state(of: scope)))")
                continue
            }
            emit("state \(step) \(state(of: scope))")
            try await log.waitUntilDurable()
            emit("durable \(step) \(log.recordsEnd)")
        }
        try log.close()
    }

    /// One random edit: add, move between collections, remove, reference, or change a value.
    @MainActor
    static func edit(_ shelf: Shelf, _ random: inout SplitMix64, allowLarge: Bool = true) {
        let all = shelf.left + shelf.right
        // Bursts (no large titles) keep the shelf small, so that a state stays cheap to print.
        let choice = random.next() % 6
        switch !allowLarge && all.count > 120 && choice < 2 ? 3 : choice {
        case 0, 1:
            let item = Item()
            item.label = "item \(random.next() % 1000)"
            if random.next() % 2 == 0 { shelf.left.append(item) } else { shelf.right.insert(item, at: 0) }
            if random.next() % 3 == 0 { shelf.featured = item }
        case 2:
            if let index = shelf.left.indices.randomElement(using: &random) {
                shelf.right.append(shelf.left.remove(at: index))
            } else if let index = shelf.right.indices.randomElement(using: &random) {
                shelf.left.append(shelf.right.remove(at: index))
            }
        case 3:
            if let index = shelf.right.indices.randomElement(using: &random) {
                shelf.right.remove(at: index)
            } else if !allowLarge, let index = shelf.left.indices.randomElement(using: &random) {
                shelf.left.remove(at: index)
            }
        case 4:
            all.randomElement(using: &random)?.count += 1
        default:
            // Sometimes large (a long write, where a kill tears the record), printed as its length.
            let large = random.next() % 3 == 0 && allowLarge
            shelf.title = String(repeating: "t", count: large ? 2_000_000 + Int(random.next() % 1000) : Int(random.next() % 40))
        }
    }

    @MainActor
    static func state(of scope: Scope) -> String {
        var state = scope.stateJSON()
        if let root = state["root"]?.stringValue, case .object(var objects)? = state["objects"],
           case .object(var shelf)? = objects[root], case .object(var properties)? = shelf["properties"],
           let title = properties["title"]?.stringValue, title.utf8.count > 1000 {
            properties["title"] = .string("\(title.utf8.count) characters")
            shelf["properties"] = .object(properties)
            objects[root] = .object(shelf)
            state = .object(["root": .string(root), "objects": .object(objects)])
        }
        return String(decoding: state.serialized(sortedKeys: true), as: UTF8.self)
    }

    /// A 64-bit FNV-1a hash of `text`'s UTF-8, as 16 hex digits: a state's fingerprint on one short line.
    static func digest(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Writes one line to stdout at once (no buffering: the process may be killed right after).
    static func emit(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(1, $0.baseAddress! + done, $0.count - done) }
            if n <= 0 { return }
            done += n
        }
    }
}
