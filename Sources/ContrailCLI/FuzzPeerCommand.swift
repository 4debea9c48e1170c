import Contrail
import ContrailFuzz
import Foundation

/// `contrail fuzz peer --url URL --scope NAME [--seed N]`: a Swift client for the JavaScript
/// convergence fuzzer (Tests/JS/fuzz/convergence.mjs), which drives it line by line on stdin.
///
/// It syncs scope NAME (root `Shelf`: `left`, `right` of `Item`, `featured`, `title`, `step`) from
/// URL and prints `ready`. Then, per line: `edit K` makes one change set of K random edits (inserts,
/// removals, moves within and between the collections, values), `atomic K` the same as an atomic
/// change set, `settle` waits until nothing is pending and prints `settled` (or `error TEXT`),
/// `state` prints `state JSON` (`Scope.stateJSON()`, sorted keys, one line), `quit` ends. Every item
/// an edit takes out of a collection (removed or moved) is printed as `unlinked UUID`, so the fuzzer
/// does not count it as a lost insert.
enum FuzzPeerCommand {
    static let usage = "usage: contrail fuzz peer --url ws://HOST:PORT/ --scope NAME [--seed N]"

    @MainActor
    static func run(_ arguments: [String]) async throws {
        var rest = arguments[...]
        var url: String?
        var name: String?
        var seed: UInt64 = 1
        while let argument = rest.popFirst() {
            guard let value = rest.popFirst() else { throw CLIError.usage("\(argument) needs a value\n\(usage)") }
            switch argument {
            case "--url": url = value
            case "--scope": name = value
            case "--seed": seed = UInt64(value) ?? 1
            default: throw CLIError.usage("unknown option '\(argument)'\n\(usage)")
            }
        }
        guard let url, let name else { throw CLIError.usage(usage) }
        ModelRegistry.register(Shelf.self)
        ModelRegistry.register(Item.self)
        let scope = Scope(name: name)
        let shelf = Shelf()
        scope.root = shelf
        var options = ClientOptions()
        options.reconnect = ReconnectPolicy(initial: .milliseconds(10), maximum: .milliseconds(200))
        options.pingInterval = .milliseconds(500)
        options.replyTimeout = .seconds(3)
        let client = try await Client.sync(scope, url: url, options: options)
        TestClientCommand.emit("ready")
        var random = SplitMix64(seed: seed)
        for await line in lines() {
            let words = line.split(separator: " ")
            switch words.first {
            case "edit", "atomic":
                let count = max(1, Int(words.dropFirst().first ?? "1") ?? 1)
                var unlinked: [UUID] = []
                if words.first == "atomic" {
                    scope.modifyAtomically { for _ in 0..<count { edit(shelf, &random, unlinked: &unlinked) } }
                } else {
                    scope.modify { for _ in 0..<count { edit(shelf, &random, unlinked: &unlinked) } }
                }
                for uuid in unlinked { TestClientCommand.emit("unlinked \(uuid.wireString)") }
            case "settle":
                do {
                    guard let session = client.session else { throw SyncError.closed }
                    try await session.sync(scope, timeout: .seconds(30))
                    TestClientCommand.emit("settled")
                } catch {
                    TestClientCommand.emit("error \(error)")
                }
            case "state":
                TestClientCommand.emit("state \(String(decoding: scope.stateJSON().serialized(sortedKeys: true), as: UTF8.self))")
            case "quit":
                await client.close()
                return
            default:
                TestClientCommand.emit("error unknown command '\(line)'")
            }
        }
        await client.close()
    }

    /// One random edit of `shelf`; items taken out of a collection are appended to `unlinked`.
    @MainActor
    static func edit(_ shelf: Shelf, _ random: inout SplitMix64, unlinked: inout [UUID]) {
        let left = random.next() % 2 == 0
        let items = left ? shelf.left : shelf.right
        switch random.next() % 8 {
        case 0, 1:
            let item = Item()
            item.label = "swift \(random.next() % 1000)"
            let index = Int(random.next() % UInt64(items.count + 1))
            if left { shelf.left.insert(item, at: index) } else { shelf.right.insert(item, at: index) }
        case 2:
            guard !items.isEmpty else { return }
            let index = Int(random.next() % UInt64(items.count))
            unlinked.append(items[index].uuid)
            if left { shelf.left.remove(at: index) } else { shelf.right.remove(at: index) }
        case 3:
            guard items.count > 1 else { return }
            var moved = items
            let item = moved.remove(at: Int(random.next() % UInt64(moved.count)))
            moved.insert(item, at: Int(random.next() % UInt64(moved.count + 1)))
            if left { shelf.left = moved } else { shelf.right = moved }
        case 4:
            guard !items.isEmpty else { return }
            let item = items[Int(random.next() % UInt64(items.count))]
            unlinked.append(item.uuid)
            if left {
                shelf.left.removeAll { $0 === item }
                shelf.right.insert(item, at: Int(random.next() % UInt64(shelf.right.count + 1)))
            } else {
                shelf.right.removeAll { $0 === item }
                shelf.left.insert(item, at: Int(random.next() % UInt64(shelf.left.count + 1)))
            }
        case 5:
            guard !items.isEmpty else { return }
            let item = items[Int(random.next() % UInt64(items.count))]
            if random.next() % 2 == 0 { item.label = "swift \(random.next() % 1000)" } else { item.count += 1 }
        case 6:
            let all = shelf.left + shelf.right
            shelf.featured = all.isEmpty || random.next() % 3 == 0 ? nil : all[Int(random.next() % UInt64(all.count))]
        default:
            if random.next() % 2 == 0 { shelf.title = "swift \(random.next() % 1000)" } else { shelf.step += 1 }
        }
    }

    /// The lines of standard input, read on a thread of their own (a blocking read never runs on the
    /// main actor or the cooperative pool).
    static func lines() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        Thread {
            while let line = readLine() { continuation.yield(line) }
            continuation.finish()
        }.start()
        return stream
    }
}
