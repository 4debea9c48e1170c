import Contrail
@testable import ContrailServer
import ContrailSupport
import Foundation
import Testing

/// The server's compact form of a scope's objects (`StoredObject`, `StoredValue`, `ObjectShape`):
/// every wire value comes back exactly as it came, through the store, its snapshot and its state,
/// and an object of a few scalar properties costs a bounded number of bytes.
@Suite struct CompactStoreTests {
    static let reference = UUID()
    static let elements = [UUID(), UUID()]

    /// One property of each kind the wire has, with the edge cases the compact form must keep.
    static let everyKind: [String: JSON] = [
        "int": .int(42),
        "negative": .int(-7),
        "beyond2to53": .int(9_007_199_254_740_993),
        "int64Max": .int(Int64.max),
        "int64Min": .int(Int64.min),
        "uint64Max": .uint(UInt64.max),
        "double": .double(0.1),
        "integralDouble": .double(1.0),
        "huge": .double(1e300),
        "short": .string("héllo"),
        "empty": .string(""),
        "long": .string(String(repeating: "a long string, over fifteen bytes ", count: 4)),
        "yes": .bool(true),
        "no": .bool(false),
        "nothing": .null,
        "ref": .string(reference.wireString),
        "upperUUID": .string(reference.wireString.uppercased()),
        "list": .array(elements.map { .string($0.wireString) }),
        "emptyList": .array([]),
        "mixed": .array([.string("a"), .int(1), .null]),
        "mixedCase": .array([.string(elements[0].wireString), .string(elements[1].wireString.uppercased())]),
        "date": .string("2026-11-27T10:00:00.000Z"),
        "timestamp": .double(1_795_000_000_000.5),
        "nested": .object(["a": .object(["b": .array([.int(1), .double(2.5), .string("c")])]), "d": .null]),
        "arrayOfObjects": .array([.object(["x": .int(1)]), .object([:])]),
        "numbers": .array([.int(1), .double(2.5), .null]),
        "strings": .array([.string("a"), .string("b")]),
    ]

    /// The kinds a scope accepts as they are: not a mixed array, an array of objects, or a UUID in
    /// upper case (the scope lowercases a reference).
    static let storable = everyKind.filter { !["upperUUID", "mixedCase", "mixed", "arrayOfObjects"].contains($0.key) }

    @Test func everyValueKindRoundTripsThroughTheCompactForm() {
        for (key, value) in Self.everyKind {
            let stored = StoredValue(value)
            #expect(stored.json == value, "\(key)")
            // The wire spelling too (an Int64 beyond 2^53 stays exact, a UUID keeps its case).
            #expect(stored.json.serialized() == value.serialized(), "\(key)")
        }
        let object = StoredObject(className: "Unknown", properties: Self.everyKind)
        #expect(object.properties == Self.everyKind)
        #expect(object.propertyCount == Self.everyKind.count)
        // Only the lowercase wire form of a UUID is held as 16 bytes; the rest stay as they came.
        #expect(StoredValue(Self.everyKind["ref"]!) == .uuid(Self.reference))
        #expect(StoredValue(Self.everyKind["list"]!) == .uuids(Self.elements))
        if case .string = StoredValue(Self.everyKind["upperUUID"]!) {} else { Issue.record("an upper-case UUID stays a string") }
        if case .other = StoredValue(Self.everyKind["mixedCase"]!) {} else { Issue.record("a mixed-case list stays verbatim") }
        if case .int = StoredValue(.int(1)), case .double = StoredValue(.double(1)) {} else { Issue.record("1 and 1.0 stay apart") }
    }

    @Test func theSubscriptAddsReplacesAndRemovesKeepingNamesSorted() {
        var object = StoredObject(className: "Card", properties: ["b": 1, "d": 2])
        object["c"] = "three"
        object["a"] = .null
        object["b"] = .double(1.5)
        #expect(object.shape.keys == ["a", "b", "c", "d"])
        #expect(object.properties == ["a": .null, "b": .double(1.5), "c": "three", "d": 2])
        object["c"] = nil
        object["z"] = nil
        #expect(object.properties == ["a": .null, "b": .double(1.5), "d": 2])
        #expect(object["c"] == nil && object["a"] == .null)
        object.className = "Other"
        #expect(object.className == "Other" && object.properties.count == 3)
    }

    /// Objects of every kind of value go through a change set, the snapshot record (serialised and
    /// parsed, as a restart reads it) and the state a fetch sends, unchanged; so do an unknown
    /// class's properties and a shared text's state.
    @Test func theStoreKeepsEveryValueThroughApplySnapshotAndState() throws {
        var store = ScopeStore()
        let root = store.rootUUID
        let item = UUID()
        let targets = [Self.reference] + Self.elements
        var fragments = [SyncFragment(kind: .change, uuid: root, className: "Board",
                                      properties: ["items": .array([.string(item.wireString)]),
                                                   "targets": .array(targets.map { .string($0.wireString) })])]
        fragments.append(SyncFragment(kind: .add, uuid: item, className: "NeverDeclared", properties: Self.storable))
        for target in targets { fragments.append(SyncFragment(kind: .add, uuid: target, className: "Target", properties: ["n": 1])) }
        let outcome = store.apply(fragments, atomic: true, maxObjects: 100)
        #expect(outcome.replies.allSatisfy { $0.isAccepted })
        #expect(store.objects[item]?.properties == Self.storable)

        let text = store.snapshotJSON(name: "s").serialized()
        let restored = try #require(ScopeStore(snapshot: try JSON(parsing: text)))
        #expect(restored.objects[item]?.properties == Self.storable)
        #expect(restored.objects.count == store.objects.count)
        #expect(restored.stateJSON() == store.stateJSON())

        let state = store.stateFragments()
        let sent = try #require(state.first { $0.uuid == item })
        #expect(sent.properties == Self.storable)
        // The wire has no nested objects (a fragment holding one is refused as it arrives): the
        // server keeps one a snapshot holds, but a client could not read it.
        let wire = Self.storable.filter { $0.key != "nested" }
        let fragment = SyncFragment(kind: .add, uuid: item, className: "NeverDeclared",
                                    properties: try #require(state.first { $0.uuid == item }).properties.filter { $0.key != "nested" })
        let parsed = try SyncFragment(json: JSON(parsing: SyncFragment.serialized([fragment])).arrayValue?.first ?? .null)
        #expect(parsed.properties == wire)
    }

    /// The store shares one shape among the objects of a class with the same names, also after a
    /// restore, so their names cost nothing per object.
    @Test func objectsOfOneClassShareOneShape() throws {
        let store = try Self.tiles(1_000)
        #expect(store.objects.count == 1_001)
        // The root's and the tiles'.
        #expect(store.shapeCount == 2)
        let shapes = Set(store.objects.values.map { ObjectIdentifier($0.shape) })
        #expect(shapes.count == 2)
        // A changed value keeps the shape; a new name makes a new one (positive control).
        var applied = store
        let tile = try #require(applied.objects.first { $0.value.className == "Tile" }?.key)
        _ = applied.apply([SyncFragment(kind: .change, uuid: tile, className: "Tile", properties: ["a": 5, "extra": true])],
                          atomic: false, maxObjects: 10_000)
        #expect(applied.objects[tile]?.properties == ["a": 5, "b": 2, "c": 3, "extra": true])
        #expect(applied.shapeCount == 3)
    }

    /// A scope of tiles with three integers each holds at most 150 bytes of allocations per tile:
    /// its entry in the index (a UUID and 8 bytes, in a table at most 75 % full: about 33 here),
    /// its row (three values and its UUID: 88) and its share of the root's collection (16), counted
    /// by the allocator, both restored from a snapshot and built by change sets as a log's replay
    /// builds it. No tile has a heap allocation of its own: the same tiles each with its own array
    /// of values, in a dictionary (the compact form before rows), exceed the bound, and so do
    /// dictionaries of wire values, as the server held objects before that (positive controls).
    /// What a structure holds is what the allocator takes back when it is dropped, read just before
    /// and just after the drop: a window of microseconds, so what other tests allocate or free
    /// meanwhile hardly counts (measured over the whole build, CI once saw 303 bytes for 80).
    /// Three rounds: the smallest for the bound, the largest for the controls. 24,000 tiles fill
    /// the index to 73 % (a table is at most 75 % full).
    @Test(.enabled(if: Platform.allocatedBytes() != nil, "needs glibc's allocator accounting (not under ThreadSanitizer)"))
    func aTileCostsABoundedNumberOfBytes() throws {
        let count = 24_000
        let snapshot = try JSON(parsing: Self.tilesSnapshot(count).serialized())
        var restored: [Int] = []
        var replayed: [Int] = []
        var arrays: [Int] = []
        var dictionaries: [Int] = []
        for _ in 0..<3 {
            var store = ScopeStore(snapshot: snapshot)
            try #require(store != nil)
            #expect(store?.objects.count == count + 1)

            var perObject: [UUID: StoredObject]? = [:]
            for (uuid, object) in store!.objects { perObject?[uuid] = object }
            #expect(perObject?.count == count + 1)
            arrays.append(Self.bytesFreed(dropping: &perObject) / count)
            restored.append(Self.bytesFreed(dropping: &store) / count)

            var built: ScopeStore? = ScopeStore()
            let changeSets = Self.tileChangeSets(count, root: built!.rootUUID)
            for fragments in changeSets {
                let outcome = built!.apply(fragments, atomic: true, maxObjects: .max)
                #expect(outcome.replies.allSatisfy { $0.isAccepted })
            }
            built!.shrinkToFit()
            #expect(built?.objects.count == count + 1 + count / 1_000)
            replayed.append(Self.bytesFreed(dropping: &built) / count)

            var plain: [UUID: (String, [String: JSON])]? = [:]
            if case .object(let objects)? = snapshot["objects"] {
                for (key, value) in objects {
                    if let uuid = UUID(wireString: key), case .object(let properties)? = value["properties"] {
                        plain?[uuid] = (value["clsName"]?.stringValue ?? "", properties.mapValues { $0 })
                    }
                }
            }
            #expect(plain?.count == count + 1)
            dictionaries.append(Self.bytesFreed(dropping: &plain) / count)
        }
        let bound = 150
        #expect(restored.min()! <= bound, "bytes per tile restored: \(restored)")
        #expect(replayed.min()! <= bound, "bytes per tile replayed: \(replayed)")
        // Nothing is free: a drop that gave back almost nothing measured nothing.
        #expect(restored.max()! >= 60 && replayed.max()! >= 60, "restored \(restored), replayed \(replayed)")
        // The controls: other shapes of the same objects measure more. An array each costs 166 B
        // per tile measured alone, close to the bound, and a run with the suite beside it once read
        // 150 three times (other threads allocating around the drop): it is compared with the
        // compact store's own figure (136 alone), not with the bound.
        #expect(arrays.max()! > restored.min()!, "bytes per tile with an array each: \(arrays), restored: \(restored)")
        #expect(dictionaries.max()! > bound, "the dictionaries' bytes per tile: \(dictionaries)")
        // What a row costs per value: a word and a tag (a UUID: 16 bytes and a tag).
        #expect(MemoryLayout<StoredValue>.stride <= 24)
    }

    /// What the allocator takes back when `value` is dropped (set to nil), read just before and
    /// just after.
    static func bytesFreed<T>(dropping value: inout T?) -> Int {
        let held = Platform.allocatedBytes() ?? 0
        value = nil
        return held - (Platform.allocatedBytes() ?? 0)
    }

    /// `count` tiles (a: the index, b: twice it, c: 3) added in change sets of nine groups of 1,000
    /// to the root's `groups`, as `contrail bench store` writes them.
    static func tileChangeSets(_ count: Int, root: UUID) -> [[SyncFragment]] {
        var changeSets: [[SyncFragment]] = []
        var groups: [UUID] = []
        var written = 0
        while written < count {
            var fragments: [SyncFragment] = []
            for _ in 0..<9 where written < count {
                let group = UUID()
                groups.append(group)
                let tiles = (written..<min(count, written + 1_000)).map { _ in UUID() }
                fragments.append(SyncFragment(kind: .add, uuid: group, className: "Group",
                                              properties: ["tiles": .array(tiles.map { .string($0.wireString) })]))
                for (offset, tile) in tiles.enumerated() {
                    let n = Int64(written + offset)
                    fragments.append(SyncFragment(kind: .add, uuid: tile, className: "Tile", properties: ["a": .int(n), "b": .int(2 * n), "c": .int(3)]))
                }
                written += tiles.count
            }
            changeSets.append(fragments)
        }
        // The root's collection first in each change set (it names the groups the set adds).
        var named: [UUID] = []
        for index in changeSets.indices {
            named += changeSets[index].filter { $0.className == "Group" }.map(\.uuid)
            changeSets[index].insert(SyncFragment(kind: .change, uuid: root, className: "Board",
                                                  properties: ["groups": .array(named.map { .string($0.wireString) })]), at: 0)
        }
        return changeSets
    }

    /// A store of `count` tiles (a: the tile's index, b: 2, c: 3) in the root's `tiles`, restored from a snapshot.
    static func tiles(_ count: Int) throws -> ScopeStore {
        try #require(ScopeStore(snapshot: tilesSnapshot(count)))
    }

    /// The snapshot record of ``tiles(_:)``.
    static func tilesSnapshot(_ count: Int) -> JSON {
        let root = UUID()
        let uuids = (0..<count).map { _ in UUID() }
        var objects: [String: JSON] = [
            root.wireString: .object(["clsName": "Board", "properties": .object(["tiles": .array(uuids.map { .string($0.wireString) })])]),
        ]
        for (index, uuid) in uuids.enumerated() {
            objects[uuid.wireString] = .object(["clsName": "Tile", "properties": .object([
                "a": .int(Int64(index)), "b": .int(2), "c": .int(3),
            ])])
        }
        return .object(["root": .string(root.wireString), "objects": .object(objects),
                        "kinds": .object(["Board": .object(["tiles": "collection"])])])
    }
}
