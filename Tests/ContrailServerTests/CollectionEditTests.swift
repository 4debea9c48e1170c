import Contrail
import ContrailFuzz
@testable import ContrailServer
import Foundation
import Testing

@Suite("Collection edits (Protocol §8.24)")
struct CollectionEditTests {
    /// A random edit of `list`: some removed, some fresh ones inserted, maybe one moved.
    private static func edit(_ list: [UUID], fresh: () -> UUID, using random: inout SplitMix64) -> [UUID] {
        var result = list.filter { _ in Int.random(in: 0..<5, using: &random) != 0 }
        for _ in 0..<Int.random(in: 0...2, using: &random) {
            result.insert(fresh(), at: Int.random(in: 0...result.count, using: &random))
        }
        if result.count > 1, Bool.random(using: &random) {
            let moved = result.remove(at: Int.random(in: 0..<result.count, using: &random))
            result.insert(moved, at: Int.random(in: 0...result.count, using: &random))
        }
        return result
    }

    @Test func anEditAppliedToItsBaseGivesTheNewValueBackAndNothingElse() throws {
        var random = SplitMix64(seed: 30)
        for _ in 0..<5_000 {
            let base = (0..<Int.random(in: 0...8, using: &random)).map { _ in UUID() }
            let new = Self.edit(base, fresh: { UUID() }, using: &random)
            let edit = try #require(CollectionEdit(base: base, new: new))
            #expect(edit.applied(to: base) == new)
            #expect(try CollectionEdit(json: JSON(parsing: edit.json.jsonString), key: "items") == edit)
            // Positive control of the digest: any other value is not its base.
            if !base.isEmpty { #expect(edit.applied(to: base.dropLast() + [UUID()]) == nil) }
        }
        // Arrays holding an element twice have no edit (they go whole).
        let a = UUID()
        #expect(CollectionEdit(base: [a, a], new: [a]) == nil)
        #expect(CollectionEdit(base: [a], new: [a, UUID()]) != nil)
    }

    /// The server applies a change set sent as edits exactly as the same change set sent with whole
    /// arrays and bases (§8.4), on random histories of clients that queue several edits on stale
    /// values before sending them.
    @Test func operationMergesEqualArrayMergesOnRandomHistories() throws {
        var random = SplitMix64(seed: 2430)
        for history in 0..<60 {
            let root = UUID()
            var whole = (store: ScopeStore(rootUUID: root), core: ScopeCore(name: "w", limits: ServerOptions().limits, procedures: []))
            var edits = (store: ScopeStore(rootUUID: root),
                         core: ScopeCore(name: "e", limits: ServerOptions().limits, procedures: [], keepsRecentCollections: true))
            let seed = SyncFragment(kind: .change, uuid: root, className: "Board", properties: ["items": .array([])])
            _ = whole.core.apply(ScopeSync(index: 1, scopeIndex: 0, fragments: [seed]), to: &whole.store, from: nil)
            _ = edits.core.apply(ScopeSync(index: 1, scopeIndex: 0, fragments: [seed]), to: &edits.store, from: nil)
            struct Client { var local: [UUID] = []; var queue: [(base: [UUID], new: [UUID])] = [] }
            var clients = Array(repeating: Client(), count: 3)
            var added: Set<UUID> = []
            var sent = 0
            for step in 0..<80 {
                let which = Int.random(in: 0..<clients.count, using: &random)
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<4:
                    let new = Self.edit(clients[which].local, fresh: { UUID() }, using: &random)
                    clients[which].queue.append((clients[which].local, new))
                    clients[which].local = new
                case 4..<8:
                    guard !clients[which].queue.isEmpty else { continue }
                    let (base, new) = clients[which].queue.removeFirst()
                    let change = SyncFragment(kind: .change, uuid: root, className: "Board",
                                              properties: ["items": .array(new.map { .string($0.wireString) })], bases: ["items": base])
                    let adds = new.filter { added.insert($0).inserted }.map { SyncFragment(kind: .add, uuid: $0, className: "Item", properties: ["n": 1]) }
                    sent += 1
                    _ = whole.core.apply(ScopeSync(index: 2, scopeIndex: 0, fragments: [change] + adds), to: &whole.store, from: nil)
                    _ = edits.core.apply(ScopeSync(index: 2, scopeIndex: 0, fragments: [change.withCollectionEdits()] + adds),
                                         to: &edits.store, from: nil)
                    let context = "history \(history) step \(step)"
                    #expect(edits.store.collectionValue(root, "items") == whole.store.collectionValue(root, "items"), "\(context)")
                    #expect(Set(edits.store.objects.keys) == Set(whole.store.objects.keys), "\(context)")
                default:
                    guard clients[which].queue.isEmpty else { continue }
                    clients[which].local = whole.store.collectionValue(root, "items") ?? []
                }
            }
            #expect(sent > 10)
        }
    }

    /// A base the server does not hold (neither the current value nor a recent one): the edit is
    /// applied to the current value: removals win, placed elements go after their anchors, or after
    /// the element placed before them, or at the end.
    @Test func anEditWhoseBaseIsGoneIsAppliedToTheCurrentValue() throws {
        let (a, b, c, x, y, z) = (UUID(), UUID(), UUID(), UUID(), UUID(), UUID())
        // The sender saw [a, b, c], removed b, appended x after c and y after x.
        let edit = try #require(CollectionEdit(base: [a, b, c], new: [a, c, x, y]))
        #expect(edit.applied(to: [a, b, c]) == [a, c, x, y])
        #expect(edit.applied(to: [a, b, c, z]) == nil, "not its base")
        #expect(edit.appliedLoosely(to: [a, b, c, z]) == [a, c, x, y, z])
        // c is gone: x goes to the end, y after x.
        #expect(edit.appliedLoosely(to: [z, a]) == [z, a, x, y])
        // Through the server: a scope whose value the sender never saw.
        let root = UUID()
        var store = ScopeStore(rootUUID: root)
        var core = ScopeCore(name: "s", limits: ServerOptions().limits, procedures: [], keepsRecentCollections: true)
        let setup = [SyncFragment(kind: .change, uuid: root, className: "Board", properties: ["items": .array([.string(a.wireString), .string(z.wireString)])])]
            + [a, z].map { SyncFragment(kind: .add, uuid: $0, className: "Item") }
        _ = core.apply(ScopeSync(index: 1, scopeIndex: 0, fragments: setup), to: &store, from: nil)
        var change = SyncFragment(kind: .change, uuid: root, className: "Board", collectionEdits: ["items": edit])
        change.properties = [:]
        let adds = [x, y].map { SyncFragment(kind: .add, uuid: $0, className: "Item") }
        _ = core.apply(ScopeSync(index: 2, scopeIndex: 0, fragments: [change] + adds), to: &store, from: nil)
        #expect(store.collectionValue(root, "items") == [a, z, x, y])
    }

    @Test func hostileCollectionOperationsAreTypedErrors() throws {
        let u = UUID().wireString
        let bad: [String] = [
            #"{"n":-1,"digest":"0000000000000000"}"#,
            #"{"n":1,"digest":"xyz"}"#,
            #"{"n":1,"digest":"00000000000000000"}"#,
            #"{"n":1,"digest":"0000000000000000","remove":[1]}"#,
            #"{"n":1,"digest":"0000000000000000","place":[["\#(u)"]]}"#,
            #"{"n":1,"digest":"0000000000000000","place":[["\#(u)",7]]}"#,
            #"{"n":1,"digest":"0000000000000000","place":[["\#(u)",null,5]]}"#,
            #"[]"#,
        ]
        for text in bad {
            #expect(throws: WireError.self, "\(text)") { try CollectionEdit(json: JSON(parsing: text), key: "items") }
        }
        // Positive control.
        #expect(throws: Never.self) {
            try CollectionEdit(json: JSON(parsing: #"{"n":1,"digest":"0000000000000000","place":[["\#(u)",null,1]]}"#), key: "items")
        }
        let edit = #"{"n":0,"digest":"cbf29ce484222325"}"#
        // Beside a value of the same key, or on an add: refused.
        #expect(throws: WireError.self) {
            try SyncFragment(json: JSON(parsing: #"{"type":"change","uuid":"\#(u)","clsName":"B","properties":{"items":[]},"collectionOps":{"items":\#(edit)}}"#))
        }
        #expect(throws: WireError.self) {
            try SyncFragment(json: JSON(parsing: #"{"type":"add","uuid":"\#(u)","clsName":"B","properties":{},"collectionOps":{"items":\#(edit)}}"#))
        }
        let fragment = try SyncFragment(json: JSON(parsing: #"{"type":"change","uuid":"\#(u)","clsName":"B","properties":{},"collectionOps":{"items":\#(edit)}}"#))
        #expect(fragment.collectionEdits?["items"]?.isBase([]) == true)
    }

    // MARK: - On the wire

    @Test func anAppendTravelsAsAnEditAndOriginalPeersStillGetArrays() async throws {
        let server = try ContrailServer(options: Wire.options())
        let a = ServerTestClient(server: server)
        let b = ServerTestClient(server: server)
        try await a.send(["type": "SessionCreate", "index": 0, "version": "0.2.0", "params": [:]])
        let created = try await a.next()
        #expect(created["extensions"]?.arrayValue?.contains("collectionOps") == true)
        try await b.createSession()
        let (_, state) = try await a.fetch("S", index: 1)
        _ = try await b.fetch("S", index: 1)
        let root = try #require(state["rootUUID"]?.stringValue)
        let rootUUID = try #require(UUID(wireString: root))
        let items = (0..<200).map { _ in UUID() }
        let setup = [Wire.fragment("change", root, "Board", ["items": Wire.array(items.map(\.wireString))])]
            + items.map { Wire.fragment("add", $0.wireString, "Item", ["n": 1]) }
        _ = try await a.sync(index: 2, fragments: setup)
        _ = try await b.next()
        let appended = UUID()
        let edit = try #require(CollectionEdit(base: items, new: items + [appended]))
        let change = SyncFragment(kind: .change, uuid: rootUUID, className: "Board", collectionEdits: ["items": edit]).json
        let frame: JSON = ["type": "ScopeSync", "index": 3, "scopeIndex": 0,
                           "fragments": [change, Wire.fragment("add", appended.wireString, "Item", ["n": 2])]]
        #expect(frame.jsonString.utf8.count < 1_000, "an append to 200 items is a few hundred bytes")
        try await a.send(frame)
        let reply = try await a.next()
        #expect(reply["type"] == "ScopeSyncReply")
        // The merged value is what the edit made: not sent back.
        #expect(reply["fragmentReplies"]?[0] == [:])
        let broadcast = try await b.next()
        #expect(broadcast["fragments"]?[0]?["properties"]?["items"] == Wire.array((items + [appended]).map(\.wireString)))
        // A stale base: the edit is merged onto the current value like an array with its base.
        let stale = try #require(CollectionEdit(base: items, new: [appended] + items))
        let moved = SyncFragment(kind: .change, uuid: rootUUID, className: "Board", collectionEdits: ["items": stale]).json
        let second = try await a.sync(index: 4, fragments: [moved])
        let expected = CollectionMerge.merge(base: items, new: [appended] + items, current: items + [appended])
        // Not made on the current value: the merge goes back, as for an array with its base.
        #expect(second["fragmentReplies"]?[0]?["modifications"]?["items"] == Wire.array(expected.map(\.wireString)))
        let stored = await server.state(ofScope: "S")?["objects"]?[root]?["properties"]?["items"]
        #expect(stored == Wire.array(expected.map(\.wireString)))
        await server.stop()
    }
}
