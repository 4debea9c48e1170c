@testable import Contrail
import Foundation
import Testing

/// Version 1 of an app's models: what an older app knows of a scope that a newer one also writes.
final class CompatBoard: ModelObject {
    @Property var title = ""
    @Property var cards: [CompatCard] = []
    @Property var featured: CompatCard?
    @Property var notes: [CompatNote] = []
    @Property var tagged: [CompatTagged] = []
}

final class CompatCard: ModelObject {
    @Property var title = ""
}

/// A class renamed from `CompatMemo`, whose `body` was called `text`.
final class CompatNote: ModelObject {
    @Property var body = ""
    override class var previousWireNames: [String] { ["CompatMemo"] }
    override class var previousPropertyWireNames: [String: [String]] { ["body": ["text"]] }
}

/// A class whose `tags` were one comma-separated string in model version 0.
final class CompatTagged: ModelObject, ModelMigration {
    @Property var tags: [String] = []
    override class var modelVersion: Int { 1 }
    static func migrate(_ values: inout [String: JSON], from version: Int) {
        if version < 1, case .string(let joined)? = values["tags"] {
            values["tags"] = .array(joined.split(separator: ",").map { .string(String($0)) })
        }
    }
}

/// Forward compatibility inside a scope (Protocol §8.23): what a replica keeps that its app does not
/// understand, through remote changes, local edits, undo, full states and fragment logs.
@MainActor
@Suite struct ForwardCompatibilityTests {
    let board = CompatBoard()
    let scope = Scope(name: "compat")
    let person = UUID(), sticker = UUID(), first = UUID(), second = UUID()

    init() {
        scope.root = board
    }

    func wire(_ uuids: UUID...) -> JSON { .array(uuids.map { .string($0.wireString) }) }

    /// What a newer app version wrote: a `CompatPerson` (a class this app lacks) as the board's
    /// owner, a `CompatSticker` between two cards and featured, tags, and a note on a card.
    func newerWrites() -> [SyncFragment] {
        [
            SyncFragment(kind: .add, uuid: person, className: "CompatPerson", properties: ["name": "Ada", "friend": .null]),
            SyncFragment(kind: .add, uuid: sticker, className: "CompatSticker", properties: ["text": "hi", "owner": .string(person.wireString)]),
            SyncFragment(kind: .add, uuid: first, className: "CompatCard", properties: ["title": "one", "note": "from v2"]),
            SyncFragment(kind: .add, uuid: second, className: "CompatCard", properties: ["title": "two"]),
            SyncFragment(kind: .change, uuid: board.uuid, className: "CompatBoard", properties: [
                "cards": wire(first, sticker, second), "owner": .string(person.wireString), "tags": ["a", "b"],
                "featured": .string(sticker.wireString),
            ]),
        ]
    }

    @Test func unknownObjectsAndValuesAreKeptBesideWhatTheAppSees() throws {
        let report = try scope.apply(newerWrites())
        #expect(report.appliedFragments == 5)
        #expect(board.cards.map(\.title) == ["one", "two"])
        #expect(board.featured == nil)
        #expect(Set(scope.unknownObjects.map(\.uuid)) == [person, sticker])
        let kept = scope.unknownValues(of: board)
        #expect(kept["owner"] == .string(person.wireString))
        #expect(kept["tags"] == ["a", "b"])
        #expect(kept["cards"] == wire(first, sticker, second))
        #expect(kept["featured"] == .string(sticker.wireString))
        #expect(scope.unknownValues(of: board.cards[0])["note"] == "from v2")
        // The whole object, as the scope writes it: everything the newer app wrote is there.
        let state = scope.stateJSON()
        let objects = try #require(state["objects"]?.objectValue)
        #expect(objects.count == 5)
        #expect(objects[person.wireString]?["properties"]?["name"] == "Ada")
        #expect(objects[sticker.wireString]?["clsName"] == "CompatSticker")
        #expect(objects[board.uuid.wireString]?["properties"]?["cards"] == wire(first, sticker, second))
        #expect(objects[first.wireString]?["properties"]?["note"] == "from v2")
        #expect(scope.snapshot().count == 5)
    }

    @Test func aCollectionEditKeepsTheUnknownElementsWhereTheyWere() throws {
        try scope.apply(newerWrites())
        let (one, two) = (board.cards[0], board.cards[1])
        let third = CompatCard()
        // Append: the sticker stays between the first two cards.
        let append = try #require(scope.modify { board.cards.append(third) })
        let sent = try #require(append.fragments.first { $0.uuid == board.uuid })
        #expect(sent.properties["cards"] == wire(first, sticker, second, third.uuid))
        #expect(sent.bases?["cards"] == [first, sticker, second])
        // Move: the sticker keeps its neighbour.
        let move = try #require(scope.modify { board.cards = [two, one, third] })
        let moved = try #require(move.fragments.first { $0.uuid == board.uuid }?.properties["cards"]?.arrayValue)
        #expect(moved.count == 4)
        #expect(moved.compactMap { $0.stringValue.flatMap(UUID.init(wireString:)) }.filter { $0 != sticker } == [second, first, third.uuid])
        #expect(scope.unknownValues(of: board)["cards"]?.arrayValue?.count == 4)
        // Undo of both: still there, once.
        scope.undo()
        scope.undo()
        scope.flush()
        #expect(board.cards.map(\.title) == ["one", "two"])
        let whole = try #require(scope.unknownValues(of: board)["cards"]?.arrayValue)
        #expect(whole.filter { $0 == .string(sticker.wireString) }.count == 1)
        #expect(whole.count == 3)
        #expect(Set(scope.unknownObjects.map(\.uuid)) == [person, sticker])
    }

    @Test func anAddOfAKnownObjectWritesItsUnknownValuesBack() throws {
        try scope.apply(newerWrites())
        let one = board.cards[0]
        scope.modify { board.cards.removeFirst() }
        #expect(one.scope == nil)
        scope.undo()
        let redo = try #require(scope.flush() ?? scope.history.last)
        let add = try #require(redo.fragments.first { $0.uuid == first && $0.kind == .add })
        #expect(add.properties["note"] == "from v2")
        #expect(add.properties["title"] == "one")
    }

    @Test func aReferenceTheAppSetsGoesOutAsSetAndTheKeptOneGoesAway() throws {
        try scope.apply(newerWrites())
        let changeSet = try #require(scope.modify { board.featured = board.cards[1] })
        #expect(changeSet.fragments.first?.properties["featured"] == .string(second.wireString))
        #expect(scope.unknownValues(of: board)["featured"] == nil)
        // The sticker is still in the cards, so still kept.
        #expect(scope.unknownObjects.contains { $0.uuid == sticker })
    }

    @Test func unknownObjectsLeaveWithTheirLastReference() throws {
        try scope.apply(newerWrites())
        // The newer app unlinks the sticker from the cards and featured: the person still has the owner.
        try scope.apply([SyncFragment(kind: .change, uuid: board.uuid, className: "CompatBoard",
                                      properties: ["cards": wire(first, second), "featured": .null])])
        #expect(scope.unknownObjects.map(\.uuid) == [person])
        #expect(scope.unknownValues(of: board)["cards"] == nil)
        #expect(scope.unknownValues(of: board)["featured"] == nil)
        try scope.apply([SyncFragment(kind: .change, uuid: board.uuid, className: "CompatBoard", properties: ["owner": .null])])
        #expect(scope.unknownObjects.isEmpty)
        #expect(scope.unknownValues(of: board)["owner"] == .null)
        // A local edit that drops the last reference forgets it too (a collection the app edits).
        try scope.apply([
            SyncFragment(kind: .add, uuid: sticker, className: "CompatSticker", properties: [:]),
            SyncFragment(kind: .change, uuid: board.uuid, className: "CompatBoard", properties: ["cards": wire(sticker, first)]),
        ])
        #expect(scope.unknownObjects.map(\.uuid) == [sticker])
        scope.modify { board.cards = [] }
        #expect(scope.unknownObjects.map(\.uuid) == [sticker], "an edit keeps the elements it cannot see")
    }

    @Test func knownObjectsOnlyUnknownOnesHoldStayInTheScope() throws {
        let held = UUID()
        try scope.apply([
            SyncFragment(kind: .add, uuid: sticker, className: "CompatSticker", properties: ["cards": wire(held)]),
            SyncFragment(kind: .add, uuid: held, className: "CompatCard", properties: ["title": "under a sticker"]),
            SyncFragment(kind: .change, uuid: board.uuid, className: "CompatBoard", properties: ["stickers": wire(sticker)]),
        ])
        let card = try #require(scope.object(for: held) as? CompatCard)
        #expect(card.title == "under a sticker")
        #expect(card.scope === scope)
        #expect(scope.snapshot().contains { $0.uuid == held })
        // Changes reach it like any member's.
        try scope.apply([SyncFragment(kind: .change, uuid: held, className: "CompatCard", properties: ["title": "renamed"])])
        #expect(card.title == "renamed")
        try scope.apply([SyncFragment(kind: .change, uuid: board.uuid, className: "CompatBoard", properties: ["stickers": wire()])])
        #expect(scope.unknownObjects.isEmpty)
        #expect(card.scope == nil)
        #expect(scope.object(for: held) == nil)
    }

    @Test func aFullStateReplacesWhatIsKept() throws {
        try scope.apply(newerWrites())
        try scope.applyState(rootUUID: board.uuid, fragments: [
            SyncFragment(kind: .change, uuid: board.uuid, className: "CompatBoard", properties: ["cards": wire(first), "tags": ["c"]]),
            SyncFragment(kind: .add, uuid: first, className: "CompatCard", properties: ["title": "one"]),
        ])
        #expect(scope.unknownObjects.isEmpty)
        #expect(scope.unknownValues(of: board) == ["tags": ["c"]])
        #expect(scope.unknownValues(of: board.cards[0]).isEmpty)
    }

    @Test func renamedClassesAndPropertiesAreReadUnderTheirNewNames() throws {
        let memo = UUID()
        try scope.apply([
            SyncFragment(kind: .add, uuid: memo, className: "CompatMemo", properties: ["text": "hello"]),
            SyncFragment(kind: .change, uuid: board.uuid, className: "CompatBoard", properties: ["notes": wire(memo)]),
        ])
        let note = try #require(board.notes.first)
        #expect(note.body == "hello")
        #expect(note.className == "CompatNote")
        #expect(scope.unknownObjects.isEmpty && scope.unknownValues(of: note).isEmpty)
        let add = scope.snapshot().first { $0.uuid == memo }
        #expect(add?.className == "CompatNote")
        #expect(add?.properties == ["body": "hello"])
        #expect(try ModelRegistry.modelClass(named: "CompatMemo") == CompatNote.self)
    }

    // MARK: - Fragment logs

    func temporaryURL() -> URL {
        FileManager.default.temporaryDirectory.appending(path: "contrail-compat-\(UUID().uuidString).log")
    }

    /// A fresh replica restored from the log at `url`.
    func restored(from url: URL) throws -> (Scope, CompatBoard) {
        let scope = Scope(name: "compat")
        let board = CompatBoard()
        scope.root = board
        let log = FragmentLog(url: url)
        try log.attach(to: scope)
        try log.close()
        return (scope, board)
    }

    @Test(arguments: [false, true])
    func aFragmentLogKeepsWhatTheAppDoesNotUnderstand(compacted: Bool) async throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let log = FragmentLog(url: url)
        try log.attach(to: scope)
        try scope.apply(newerWrites())
        scope.modify { board.cards.append(CompatCard()) }
        if compacted { try log.compact() }
        try await log.waitUntilDurable()
        try log.close()
        let (copy, copyBoard) = try restored(from: url)
        #expect(copy.stateJSON() == scope.stateJSON())
        #expect(copyBoard.cards.count == 3)
        #expect(Set(copy.unknownObjects.map(\.uuid)) == [person, sticker])
        #expect(copy.unknownValues(of: copyBoard)["tags"] == ["a", "b"])
    }

    /// A pending change set that replaced a kept reference (`featured` named the sticker, a class
    /// this app lacks), restored from the log after a restart, knows it did, as the one its flush
    /// made knew: a refusal of it then fetches the scope again to get the sticker back, instead of
    /// leaving the reference empty.
    @Test func aRestoredChangeSetKnowsTheKeptReferenceItReplaced() async throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let log = FragmentLog(url: url)
        try log.attach(to: scope)
        scope.isSynced = true  // local change sets stay pending until a session settles them
        try scope.apply(newerWrites())
        let made = try #require(scope.modify { board.featured = board.cards[1] })
        #expect(made.replacedKeptReferences == [board.uuid])  // the flush's, before the restart
        let plain = try #require(scope.modify { board.title = "renamed" })
        #expect(plain.replacedKeptReferences.isEmpty)  // control: a scalar edit replaces nothing kept
        try await log.waitUntilDurable()
        try log.close()
        let (copy, copyBoard) = try restored(from: url)
        let restored = copy.unsettledRestored
        #expect(restored.count == 2)
        #expect(restored.first?.replacedKeptReferences == [copyBoard.uuid])
        #expect(restored.last?.replacedKeptReferences.isEmpty == true)
    }

    /// A log an earlier version wrote: a class and a property under their old names, and tags in
    /// their old shape (model version 0, so no `versions` in the records).
    @Test func aLogOfAnEarlierVersionRestoresIntoTheNewClasses() throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = board.uuid.wireString, memo = UUID().wireString, tagged = UUID().wireString
        let (file, _) = try LogFile.open(at: url)
        try file.append(.changeSet, Array(#"{"root":"\#(root)","fragments":[{"type":"add","uuid":"\#(root)","clsName":"CompatBoard","properties":{"title":"old","notes":["\#(memo)"],"tagged":["\#(tagged)"]}},{"type":"add","uuid":"\#(memo)","clsName":"CompatMemo","properties":{"text":"hello"}},{"type":"add","uuid":"\#(tagged)","clsName":"CompatTagged","properties":{"tags":"x,y"}}]}"#.utf8))
        try file.append(.changeSet, Array(#"{"root":"\#(root)","origin":"remote","fragments":[{"type":"change","uuid":"\#(tagged)","clsName":"CompatTagged","properties":{"tags":"x,y,z"}}]}"#.utf8))
        try file.close()
        let (copy, copyBoard) = try restored(from: url)
        #expect(copyBoard.title == "old")
        #expect(copyBoard.notes.first?.body == "hello")
        #expect(copyBoard.tagged.first?.tags == ["x", "y", "z"])
        #expect(copy.unknownObjects.isEmpty)
    }

    /// A log a newer version wrote (a model version above this app's): refused with a typed error,
    /// and the scope is as it was before the attempt (also after the records before it applied).
    @Test func aLogOfANewerVersionIsRefusedWholeWithATypedError() throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = board.uuid.wireString, tagged = UUID().wireString
        let (file, _) = try LogFile.open(at: url)
        try file.append(.changeSet, Array(#"{"root":"\#(root)","fragments":[{"type":"add","uuid":"\#(root)","clsName":"CompatBoard","properties":{"title":"before","cards":[]}}]}"#.utf8))
        try file.append(.changeSet, Array(#"{"root":"\#(root)","origin":"remote","versions":{"CompatTagged":2},"fragments":[{"type":"add","uuid":"\#(tagged)","clsName":"CompatTagged","properties":{"tags":7}},{"type":"change","uuid":"\#(root)","clsName":"CompatBoard","properties":{"tagged":["\#(tagged)"],"title":"after"}}]}"#.utf8))
        try file.close()
        board.title = "mine"
        scope.flush()
        let rootBefore = board.uuid
        let log = FragmentLog(url: url)
        #expect(throws: FragmentLogError.newerModel(className: "CompatTagged", version: 2, supported: 1)) {
            try log.attach(to: scope)
        }
        #expect(board.title == "mine", "the first record is not left applied")
        #expect(board.uuid == rootBefore)
        #expect(board.tagged.isEmpty)
        // Positive control: the same log without the newer record restores.
        let control = temporaryURL()
        defer { try? FileManager.default.removeItem(at: control) }
        let (good, _) = try LogFile.open(at: control)
        try good.append(.changeSet, Array(#"{"root":"\#(root)","fragments":[{"type":"add","uuid":"\#(root)","clsName":"CompatBoard","properties":{"title":"before","cards":[]}}]}"#.utf8))
        try good.close()
        let (_, restoredBoard) = try restored(from: control)
        #expect(restoredBoard.title == "before")
    }

    /// Records of a class with a model version say so, so that an older app can refuse them.
    @Test func recordsCarryTheModelVersionsOfTheirClasses() async throws {
        let url = temporaryURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let log = FragmentLog(url: url)
        try log.attach(to: scope)
        let tagged = CompatTagged()
        tagged.tags = ["q"]
        scope.modify { board.tagged = [tagged] }
        try await log.waitUntilDurable()
        try log.close()
        let payloads = try LogFile.read(at: url).records.map { String(decoding: $0.payload, as: UTF8.self) }
        #expect(payloads.contains { $0.contains(#""versions":{"CompatTagged":1}"#) })
        #expect(payloads.first.map { !$0.contains("versions") } == true, "a record without such a class names none")
        let (_, copyBoard) = try restored(from: url)
        #expect(copyBoard.tagged.first?.tags == ["q"])
    }
}
