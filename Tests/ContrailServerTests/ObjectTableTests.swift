import Contrail
@testable import ContrailServer
import Foundation
import Testing

/// The server's table of a scope's objects (`ObjectTable`): rows per shape, an index by UUID, a
/// removed object's row filled by its slab's last, shared texts beside the rows, and copies that
/// do not see each other's changes.
@Suite struct ObjectTableTests {
    static func tile(_ index: Int) -> StoredObject {
        StoredObject(className: "Tile", properties: ["a": .int(Int64(index)), "b": .int(Int64(2 * index)), "c": .int(3)])
    }

    /// A table of `count` tiles (tile i at `uuids[i]`).
    static func tiles(_ count: Int) -> (table: ObjectTable, uuids: [UUID]) {
        var table = ObjectTable()
        let uuids = (0..<count).map { _ in UUID() }
        for (index, uuid) in uuids.enumerated() { table.set(tile(index), for: uuid) }
        return (table, uuids)
    }

    @Test func setReplaceAndReadBack() throws {
        var (table, uuids) = Self.tiles(100)
        #expect(table.count == 100 && table.shapeCount == 1)
        for (index, uuid) in uuids.enumerated() {
            #expect(table[uuid] == Self.tile(index))
            #expect(table.contains(uuid) && table.className(of: uuid) == "Tile")
            #expect(table.properties(of: uuid) == Self.tile(index).properties)
        }
        // In place, same shape.
        table[uuids[7]] = Self.tile(1_000)
        #expect(table[uuids[7]] == Self.tile(1_000) && table.count == 100)
        #expect(table[uuids[8]] == Self.tile(8), "the neighbour's row is untouched")
        // Another shape: moved to that shape's rows.
        var card = StoredObject(className: "Card", properties: ["title": "t", "ref": .string(uuids[0].wireString)])
        table[uuids[9]] = card
        #expect(table[uuids[9]] == card && table.shapeCount == 2 && table.count == 100)
        #expect(table[uuids[99]] == Self.tile(99), "the slab's last row filled the hole")
        card["title"] = nil
        table[uuids[9]] = card
        #expect(table[uuids[9]]?.properties == ["ref": .string(uuids[0].wireString)])
        #expect(table[UUID()] == nil && !table.contains(UUID()))
        let unknown = UUID()
        var seen: [String] = []
        let foundUnknown = table.forEachProperty(of: unknown) { _, key, _ in seen.append(key) }
        #expect(!foundUnknown && seen.isEmpty)
        var values: [StoredValue] = []
        let found = table.forEachProperty(of: uuids[3]) { className, key, value in
            seen.append(className + "." + key)
            values.append(value)
        }
        #expect(found && seen == ["Tile.a", "Tile.b", "Tile.c"])
        #expect(values == [.int(3), .int(6), .int(3)])
    }

    @Test func removingFillsTheHoleWithTheLastRowAndKeepsEveryOtherObject() {
        var (table, uuids) = Self.tiles(50)
        var expected = Dictionary(uniqueKeysWithValues: uuids.enumerated().map { ($1, Self.tile($0)) })
        for uuid in uuids where uuids.firstIndex(of: uuid)! % 3 == 0 {
            table[uuid] = nil
            expected[uuid] = nil
        }
        table.remove(UUID())  // absent: nothing happens
        #expect(table.count == expected.count)
        for (uuid, object) in expected { #expect(table[uuid] == object) }
        #expect(Set(table.keys) == Set(expected.keys))
        #expect(Dictionary(uniqueKeysWithValues: table.map { ($0.key, $0.value) }) == expected)
        // The last object of a shape gone: the shape is no longer counted.
        for uuid in expected.keys { table[uuid] = nil }
        #expect(table.count == 0 && table.shapeCount == 0 && Array(table).isEmpty)
    }

    @Test func removeAllKeepingReturnsWhatItRemoved() {
        var (table, uuids) = Self.tiles(30)
        let kept = Set(uuids.prefix(10))
        let removed = table.removeAll(keeping: kept.contains)
        #expect(Set(removed.map(\.0)) == Set(uuids.dropFirst(10)))
        for (uuid, object) in removed { #expect(object == Self.tile(uuids.firstIndex(of: uuid)!)) }
        #expect(Set(table.keys) == kept)
        // Many shapes emptied: their rows are dropped and the rest renumbered, objects intact.
        var many = ObjectTable()
        let others = (0..<100).map { _ in UUID() }
        for (index, uuid) in others.enumerated() { many[uuid] = StoredObject(className: "C\(index)", properties: ["x": .int(Int64(index))]) }
        #expect(many.shapeCount == 100)
        let survivors = Set(others.suffix(5))
        _ = many.removeAll(keeping: survivors.contains)
        #expect(many.shapeCount == 5 && many.count == 5)
        for uuid in survivors {
            let index = others.firstIndex(of: uuid)!
            #expect(many[uuid] == StoredObject(className: "C\(index)", properties: ["x": .int(Int64(index))]))
        }
        // A survivor can still move to another shape and back.
        let moved = others[99]
        many[moved] = StoredObject(className: "C0", properties: ["x": 0])
        #expect(many[moved]?.className == "C0" && many.count == 5)
    }

    @Test func sharedTextsAreKeptBesideTheRows() {
        var (table, uuids) = Self.tiles(3)
        let state: JSON = .object(["ops": .array([])])
        var withText = Self.tile(1)
        withText.texts = ["c": state]
        table[uuids[1]] = withText
        #expect(table[uuids[1]]?.texts == ["c": state] && table.texts(of: uuids[1]) == ["c": state])
        #expect(table[uuids[0]]?.texts == [:])
        table[uuids[1]] = Self.tile(1)
        #expect(table.texts(of: uuids[1]) == [:], "replaced without texts")
        table[uuids[2]] = withText
        table[uuids[2]] = nil
        table[uuids[2]] = Self.tile(2)
        #expect(table.texts(of: uuids[2]) == [:], "removed with the object")
    }

    @Test func objectsOfOneShapeShareItsInstance() {
        let (table, _) = Self.tiles(10)
        #expect(Set(table.values.map { ObjectIdentifier($0.shape) }).count == 1)
        let fresh = ObjectShape(className: "Tile", keys: ["a", "b", "c"])
        #expect(table.canonical(fresh) !== fresh && table.canonical(fresh) == fresh)
        let other = ObjectShape(className: "Tile", keys: ["a"])
        #expect(table.canonical(other) === other, "a shape no object has stays itself")
    }

    @Test func aCopyDoesNotSeeTheOriginalsChanges() {
        let (table, uuids) = Self.tiles(10)
        var changed = table
        changed[uuids[0]] = nil
        changed[uuids[1]] = Self.tile(500)
        changed[UUID()] = Self.tile(600)
        #expect(table.count == 10 && table[uuids[0]] == Self.tile(0) && table[uuids[1]] == Self.tile(1))
        #expect(changed.count == 10 && changed[uuids[0]] == nil && changed[uuids[1]] == Self.tile(500))
    }
}
