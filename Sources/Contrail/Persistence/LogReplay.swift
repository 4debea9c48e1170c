import Foundation

/// Restores one fragment-log record in a single pass over its payload bytes, without building a
/// JSON tree or ``SyncFragment`` values first: each fragment's object is found (or, for an `add`,
/// created by class name) as soon as its `uuid` and `clsName` have been read, and each property
/// value is parsed straight into a pending write. This is what makes restoring a large log fast.
///
/// It handles records that hold neither a sequence number nor a settle marker (snapshots, remote
/// and settled change sets) and whose `root` comes before `fragments`, the layout
/// ``FragmentLogEntry/encoded()`` writes. Anything else (a pending local change set, a marker, an
/// older layout) makes ``prepare(payload:offset:scope:)`` return `nil`: decode it with
/// ``FragmentLogEntry`` instead.
///
/// It applies what `Scope.apply` applies for remote fragments (references resolved within the
/// record in any order, the whole record decoded before anything changes, nothing recorded as
/// outgoing), without what a restore does not need: no change set is built or published and no old
/// values are kept. Changes to unknown objects are skipped; a value of the wrong type or a
/// malformed fragment throws and changes nothing but the root's identity. Values of properties a
/// class does not declare are kept beside their object (Protocol §8.23). A record that holds an
/// object of an unknown class (or any record, while the scope keeps such objects) or values of an
/// earlier `modelVersion` is left to the general path (`prepare` returns nil), which keeps the one
/// and migrates the other; a class of a newer `modelVersion` than the app's throws
/// `FragmentLogError.newerModel`.
@MainActor
struct LogReplay {
    /// The record's root UUID.
    private(set) var root: UUID?
    /// Objects the record adds that the scope did not hold, in the order it adds them, and their
    /// positions there by UUID. References mostly follow that order (a snapshot lists objects in
    /// pre-order, so a collection's elements come in a row): the resolver tries the object after
    /// the one it found last before it hashes.
    private var created: [(uuid: UUID, object: ModelObject)] = []
    private var createdIndex = UUIDTable<Int>()
    /// Property values in the order the record holds them, not yet decoded.
    private var writes: [Write] = []
    /// Fragments whose object could not be found when they were read (it is added later in the
    /// record, or the keys came in another order): resolved once the whole record is read.
    private var deferred: [(uuid: UUID, properties: JSON)] = []
    /// Values of properties their object's class does not sync: kept beside the object (Protocol §8.23).
    private var unknownValues: [(object: ModelObject, name: String, value: JSON)] = []
    /// The class whose synced property names `nameBytes` holds: UTF-8, one after the other, each
    /// at its range in `nameRanges` by property index (-1..<-1 when not synced). One flat array, so
    /// that comparing a key with a name retains nothing. `namesClass` identifies that class.
    private var namesInfo: ModelClassInfo?
    private var namesClass: ObjectIdentifier?
    private var nameBytes: [UInt8] = []
    private var nameRanges: [Range<Int>] = []
    /// By property index: the storage offset of a `Double` property, which a number is stored into
    /// without decoding it to `Any` (-1 for every other type).
    private var doubleOffsets: [Int] = []
    /// The class name read last (records hold runs of one class), its bytes, and its class once looked up.
    private var lastClassName: String?
    private var lastClassBytes: [UInt8] = []
    private var lastClassType: ModelObject.Type?
    /// For each property index + 1 (0: the start of a `properties` object), the property index
    /// that followed it last time: tried first, since records list properties in the same order.
    private var successor: [Int] = []
    /// The property index matched last in the current `properties` object (-1 before the first).
    private var previousName = -1
    /// The model versions the record was written with (`"versions"`, before `fragments`), by class name.
    private var versions: [String: Int] = [:]
    private let scope: Scope
    private let cache: LogReplayCache
    private let offset: Int
    private let payloadSize: Int

    /// Whether classes are checked against the record's model versions (some class has one).
    private var checksVersions: Bool { !versions.isEmpty || ModelRegistry.hasModelVersions }

    /// Thrown while reading a record this type leaves to the general path.
    private struct NeedsGeneralPath: Error {}

    /// A property value to store.
    private struct Write {
        let object: ModelObject
        let index: Int
        let value: Value

        enum Value {
            /// A number for a `Double` property, stored as it is into the storage at `offset`.
            case double(Double, offset: Int)
            /// Anything else: decoded for the property first.
            case wire(JSON)
        }
    }

    private init(cache: LogReplayCache, offset: Int, payloadSize: Int) {
        self.scope = cache.scope
        self.cache = cache
        self.offset = offset
        self.payloadSize = payloadSize
    }

    /// Reads the record at `offset` for `cache`'s scope. Returns `nil` when it is not one this type
    /// handles (see the type's description). O(payload size).
    static func prepare(payload: UnsafeRawBufferPointer, offset: Int, cache: LogReplayCache) throws(FragmentLogError) -> LogReplay? {
        let scope = cache.scope
        // A scope that keeps what its app does not understand restores through the general path:
        // references to unknown objects there are kept beside the values (Protocol §8.23).
        guard scope.unknown.objects.isEmpty else { return nil }
        var replay = LogReplay(cache: cache, offset: offset, payloadSize: payload.count)
        replay.writes.reserveCapacity(payload.count / 40)  // a property value takes 30 bytes or more
        var parser = JSONParser(bytes: payload, limits: JSONLimits())
        guard let p = parser.base else { throw .badRecord(offset: offset, reason: "empty record") }
        do {
            var sawRoot = false
            var sawFragments = false
            parser.skipWhitespace(p)
            try replay.expect(UInt8(ascii: "{"), &parser, p)
            parser.skipWhitespace(p)
            if try !replay.consume(UInt8(ascii: "}"), &parser, p) {
                repeat {
                    parser.skipWhitespace(p)
                    let key = try parser.parseKey(p)
                    switch key {
                    case "fragments":
                        guard sawRoot else { return nil }  // an older layout: the root comes after
                        sawFragments = true
                        try replay.readFragments(&parser, p)
                    case "root":
                        sawRoot = true
                        if case .string(let string) = try parser.parseValue(p) {
                            replay.root = UUID(wireString: string)
                            if let root = replay.root, scope.root != nil { scope.adoptRootUUID(root) }
                        }
                    case "seq", "settled", "members":
                        guard try parser.parseValue(p) == .null else { return nil }  // a pending change set or a marker
                    case "versions":
                        replay.versions = FragmentLogEntry.versions(from: try parser.parseValue(p))
                    default:
                        _ = try parser.parseValue(p)
                    }
                    parser.skipWhitespace(p)
                } while try replay.consume(UInt8(ascii: ","), &parser, p)
                try replay.expect(UInt8(ascii: "}"), &parser, p)
            }
            parser.skipWhitespace(p)
            if parser.position < parser.count { throw JSONError.unexpected(p[parser.position], at: parser.position) }
            guard sawFragments else { throw FragmentLogError.badRecord(offset: offset, reason: "no fragments") }
        } catch is NeedsGeneralPath {
            return nil
        } catch let error as JSONError {
            throw .badRecord(offset: offset, reason: "\(error)")
        } catch let error as FragmentLogError {
            throw error
        } catch let error as ModelError {
            throw .apply(offset: offset, error)
        } catch {
            throw .badRecord(offset: offset, reason: "\(error)")
        }
        return replay
    }

    /// Decodes every value, then (if all of them decoded) makes the record's root the scope's root
    /// when the scope has none, and stores the values. O(values).
    func apply() throws(ModelError) {
        var next = 0
        let resolver: ModelResolver = { [created, createdIndex, cache] uuid in
            if next < created.count, created[next].uuid == uuid {
                next += 1
                return created[next - 1].object
            }
            guard let index = createdIndex[uuid] else { return cache.object(for: uuid) }
            next = index + 1
            return created[index].object
        }
        var writes = self.writes
        var unknownValues = self.unknownValues
        for (uuid, properties) in deferred {
            guard let object = resolver(uuid), case .object(let members) = properties else { continue }
            for (name, wire) in members {
                guard let index = object.info.indexByName[name], object.info.properties[index].isSynced else {
                    unknownValues.append((object, name, wire))
                    continue
                }
                writes.append(Write(object: object, index: index, value: .wire(wire)))
            }
        }
        // Every value is decoded before anything changes; a number for a `Double` needs no decoding.
        var values: [Any] = []
        for write in writes {
            guard case .wire(let wire) = write.value else { continue }
            values.append(try write.object.info.decode(wire, at: write.index, resolver: resolver))
        }
        if created.count > 64 { scope.reserveObjects(created.count) }
        // A root the record creates is attached after its values are stored: one walk attaches the
        // whole tree, instead of one attach per child as each collection value is stored.
        let newRoot = scope.root == nil ? root.flatMap { createdIndex[$0].map { created[$0].object } } : nil
        scope.applyingRemote {
            var decoded = values.makeIterator()
            for write in writes {
                switch write.value {
                case .double(let number, let offset):
                    Property<Double>.store(typed: number, in: write.object, offset: offset, index: write.index)
                case .wire:
                    if let value = decoded.next() { write.object.setValue(value, at: write.index) }
                }
            }
        }
        if let newRoot { scope.root = newRoot }
        for kept in unknownValues where kept.object.scope === scope { scope.keepUnknown(kept.name, kept.value, of: kept.object.uuid) }
    }

    // MARK: - Reading

    /// Reads the `fragments` array.
    private mutating func readFragments(_ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) throws {
        try expect(UInt8(ascii: "["), &parser, p)
        parser.skipWhitespace(p)
        if try consume(UInt8(ascii: "]"), &parser, p) { return }
        repeat {
            parser.skipWhitespace(p)
            try readFragment(&parser, p)
            parser.skipWhitespace(p)
        } while try consume(UInt8(ascii: ","), &parser, p)
        try expect(UInt8(ascii: "]"), &parser, p)
    }

    /// Reads one fragment object, with the checks of ``SyncFragment/init(json:)``.
    private mutating func readFragment(_ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) throws {
        var kind: SyncFragment.Kind?
        var uuid: UUID?
        var className: String?
        var object: ModelObject?
        var laterProperties: JSON?
        let hasKeys: Bool
        var keyRead: FragmentKey?  // the usual head ends with the `properties` key already read
        if let head = matchHead(&parser, p), let name = lastClassName {
            kind = head.kind
            uuid = head.uuid
            className = name
            keyRead = .properties
            hasKeys = true
        } else {
            try expect(UInt8(ascii: "{"), &parser, p)
            parser.skipWhitespace(p)
            hasKeys = try !consume(UInt8(ascii: "}"), &parser, p)
        }
        if hasKeys {
            repeat {
                parser.skipWhitespace(p)
                let key: FragmentKey
                if let read = keyRead {
                    key = read
                    keyRead = nil
                } else {
                    key = try fragmentKey(&parser, p)
                }
                switch key {
                case .type:
                    if matchString("change", &parser, p) {
                        kind = .change
                    } else if matchString("add", &parser, p) {
                        kind = .add
                    } else {
                        guard case .string(let name) = try parser.parseValue(p), let parsed = SyncFragment.Kind(rawValue: name) else {
                            throw invalid("Invalid type")
                        }
                        kind = parsed
                    }
                case .uuid:
                    uuid = try readUUID(&parser, p)
                case .clsName:
                    if lastClassName != nil, matchBytes(lastClassBytes, &parser, p) {
                        className = lastClassName
                    } else {
                        guard case .string(let name) = try parser.parseValue(p) else { throw invalid("Invalid clsName") }
                        className = name
                        (lastClassName, lastClassBytes, lastClassType) = (name, Array(name.utf8), nil)
                    }
                case .properties:
                    if let kind, let uuid, let className {
                        object = try resolve(kind: kind, uuid: uuid, className: className)
                    }
                    if let object {
                        try readProperties(of: object, &parser, p)
                    } else {
                        laterProperties = try parser.parseValue(p)
                    }
                case .text:
                    // Shared texts (§8.21): each replaces its plain value's write with plain + operations.
                    guard case .object(let members) = try parser.parseValue(p) else { throw invalid("Invalid text") }
                    combineTexts(members, of: object, later: &laterProperties)
                case .other:
                    _ = try parser.parseValue(p)
                }
                parser.skipWhitespace(p)
            } while try consume(UInt8(ascii: ","), &parser, p)
            try expect(UInt8(ascii: "}"), &parser, p)
        }
        guard let kind else { throw invalid("Invalid type") }
        guard let uuid else { throw invalid("Invalid uuid") }
        guard let className else { throw invalid("Invalid clsName") }
        if object == nil { _ = try resolve(kind: kind, uuid: uuid, className: className) }
        switch laterProperties {
        case nil, .null?:
            break
        case .object(let members)?:
            for (key, value) in members {
                if case .object(let combined) = value, combined["text"] != nil { continue }  // a shared text, combined above
                if let problem = SyncFragment.problem(with: value) { throw invalid("Property '\(key)': \(problem)") }
            }
            deferred.append((uuid, .object(members)))
        default:
            throw invalid("Invalid properties")
        }
    }

    /// Turns the plain values of shared texts already read (a write of `object`, or `later`
    /// properties) into `{"plain", "text"}`, which `SharedText` decodes with its operations.
    private mutating func combineTexts(_ members: [String: JSON], of object: ModelObject?, later: inout JSON?) {
        for (name, member) in members {
            if let object, let index = object.info.indexByName[name],
               let position = writes.lastIndex(where: { $0.object === object && $0.index == index }),
               case .wire(let plain) = writes[position].value {
                writes[position] = Write(object: object, index: index, value: .wire(.object(["plain": plain, "text": member])))
            } else if case .object(var properties)? = later, let plain = properties[name] {
                properties[name] = .object(["plain": plain, "text": member])
                later = .object(properties)
            }
        }
    }

    /// Reads `{"type":"change"` (or `"add"`) `,"uuid":"…","clsName":"…","properties":` if it is next,
    /// exactly as the log writes it and with the class name read last: most fragments of a record.
    /// `nil` (and the position unchanged) for anything else, which the general path reads.
    private nonisolated func matchHead(_ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) -> (kind: SyncFragment.Kind, uuid: UUID)? {
        let start = parser.position
        let kind: SyncFragment.Kind
        if matchRaw(#"{"type":"change","uuid":""#, &parser, p) {
            kind = .change
        } else if matchRaw(#"{"type":"add","uuid":""#, &parser, p) {
            kind = .add
        } else {
            return nil
        }
        let uuidStart = parser.position
        guard lastClassName != nil, uuidStart + 36 <= parser.count,
              let uuid = UUID(wireBytes: UnsafeBufferPointer(start: p + uuidStart, count: 36)) else {
            parser.position = start
            return nil
        }
        parser.position += 36
        let matched = lastClassBytes.withUnsafeBufferPointer { name in
            matchRaw(#"","clsName":""#, &parser, p) && matchRaw(name.baseAddress, name.count, &parser, p)
                && matchRaw(#"","properties":"#, &parser, p)
        }
        guard matched else {
            parser.position = start
            return nil
        }
        return (kind, uuid)
    }

    /// Skips the bytes of `literal` if they are next; whether they were.
    private nonisolated func matchRaw(_ literal: StaticString, _ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) -> Bool {
        matchRaw(literal.utf8Start, literal.utf8CodeUnitCount, &parser, p)
    }

    /// Skips the `length` bytes at `bytes` if they are next; whether they were.
    private nonisolated func matchRaw(_ bytes: UnsafePointer<UInt8>?, _ length: Int, _ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) -> Bool {
        let start = parser.position
        guard start + length <= parser.count, length == 0 || memcmp(p + start, bytes.unsafelyUnwrapped, length) == 0 else { return false }
        parser.position = start + length
        return true
    }

    /// The fragment's object: the scope's or one the record created, and for an `add` of an object
    /// neither holds, a new one of `className`. `nil` for a change to an object not (yet) known.
    private mutating func resolve(kind: SyncFragment.Kind, uuid: UUID, className: String) throws -> ModelObject? {
        if let known = cache.object(for: uuid) {
            if checksVersions { try check(type(of: known), className: className) }
            return known
        }
        guard kind == .add else {
            if let index = createdIndex[uuid] { return created[index].object }
            // A change of an object the general path keeps (an unknown class) is the general path's too.
            if !scope.unknown.objects.isEmpty, scope.unknown.objects[uuid] != nil { throw NeedsGeneralPath() }
            return nil
        }
        let type: ModelObject.Type
        if let known = lastClassType, className == lastClassName {
            type = known
        } else {
            guard scope.knowsClass(className) else { throw NeedsGeneralPath() }  // kept as it is, there
            type = try ModelRegistry.modelClass(named: className)
            try check(type, className: className)
            if className == lastClassName { lastClassType = type }
        }
        if created.isEmpty {  // about as many adds as fit (each takes 100 bytes or more)
            created.reserveCapacity(payloadSize / 96)
            createdIndex = UUIDTable(capacity: payloadSize / 96)
        }
        if let earlier = createdIndex.insert(created.count, for: uuid) { return created[earlier].object }
        let object = type.init(uuid: uuid)
        created.append((uuid, object))
        return object
    }

    /// The key of the member that starts at `keyStart` (read again: only for the rare unknown name),
    /// leaving the parser where it was.
    private nonisolated func nameOfValue(at keyStart: Int, _ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) throws -> String {
        let position = parser.position
        defer { parser.position = position }
        parser.position = keyStart
        return try parser.parseKey(p)
    }

    /// Refuses a class the record holds in a newer model version than the app's, and leaves one of
    /// an older version (to migrate) to the general path.
    private func check(_ type: ModelObject.Type, className: String) throws {
        let recorded = versions[className] ?? 0
        guard recorded != type.modelVersion else { return }
        if recorded > type.modelVersion {
            throw FragmentLogError.newerModel(className: className, version: recorded, supported: type.modelVersion)
        }
        throw NeedsGeneralPath()
    }

    /// Reads a `properties` object into `writes`; values of properties the class does not sync are
    /// kept beside the object (`unknownValues`).
    private mutating func readProperties(of object: ModelObject, _ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) throws {
        parser.skipWhitespace(p)
        if parser.position < parser.count, p[parser.position] == UInt8(ascii: "n") {
            guard case .null = try parser.parseValue(p) else { throw invalid("Invalid properties") }
            return
        }
        guard parser.position < parser.count, p[parser.position] == UInt8(ascii: "{") else { throw invalid("Invalid properties") }
        parser.position += 1
        parser.skipWhitespace(p)
        if try consume(UInt8(ascii: "}"), &parser, p) { return }
        // The class is compared by its metadata, which (unlike `object.info`) retains nothing.
        if namesClass != ObjectIdentifier(type(of: object)) {
            let info = object.info
            namesClass = ObjectIdentifier(type(of: object))
            namesInfo = info
            nameBytes = []
            nameRanges = info.properties.map { property in
                guard property.isSynced else { return -1 ..< -1 }
                let start = nameBytes.count
                nameBytes += property.name.utf8
                return start ..< nameBytes.count
            }
            doubleOffsets = info.properties.map { ObjectIdentifier($0.storage) == ObjectIdentifier(Property<Double>.self) ? $0.offset : -1 }
            successor = (0...nameRanges.count).map { $0 % max(nameRanges.count, 1) }
        }
        previousName = -1
        repeat {
            parser.skipWhitespace(p)
            let keyStart = parser.position
            let index: Int?
            if let matched = matchPropertyName(&parser, p) {
                index = matched
            } else {
                parser.position = keyStart
                let name = try parser.parseKey(p)
                let info = namesInfo.unsafelyUnwrapped  // set above
                index = info.indexByName[name].flatMap { info.properties[$0].isSynced ? $0 : nil }
            }
            let value: JSON
            if parser.position < parser.count, p[parser.position] == UInt8(ascii: "-") || p[parser.position] &- UInt8(ascii: "0") < 10 {
                value = try parser.parseNumber(p)  // the most common value, and always an acceptable one
            } else {
                value = try parser.parseValue(p)
                if let problem = SyncFragment.problem(with: value) {
                    parser.position = keyStart
                    throw invalid("Property '\(try parser.parseKey(p))': \(problem)")
                }
            }
            guard let index else {
                unknownValues.append((object, try nameOfValue(at: keyStart, &parser, p), value))
                parser.skipWhitespace(p)
                continue
            }
            let offset = doubleOffsets[index]
            if offset >= 0, let number = value.numberAsDouble {
                writes.append(Write(object: object, index: index, value: .double(number, offset: offset)))
            } else {
                writes.append(Write(object: object, index: index, value: .wire(value)))
            }
            parser.skipWhitespace(p)
        } while try consume(UInt8(ascii: ","), &parser, p)
        try expect(UInt8(ascii: "}"), &parser, p)
    }

    /// A UUID string, read from the bytes in place when it has no escapes.
    private nonisolated func readUUID(_ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) throws -> UUID {
        let start = parser.position
        if start + 38 <= parser.count, p[start] == UInt8(ascii: "\""), p[start + 37] == UInt8(ascii: "\""),
           let uuid = UUID(wireBytes: UnsafeBufferPointer(start: p + start + 1, count: 36)) {
            parser.position += 38
            return uuid
        }
        guard case .string(let string) = try parser.parseValue(p), let uuid = UUID(wireString: string) else {
            throw invalid("Invalid uuid")
        }
        return uuid
    }

    /// The keys of a fragment object.
    private enum FragmentKey {
        case type, uuid, clsName, properties, text, other

        init(_ name: String) {
            switch name {
            case "type": self = .type
            case "uuid": self = .uuid
            case "clsName": self = .clsName
            case "properties": self = .properties
            case "text": self = .text
            default: self = .other
            }
        }
    }

    /// Reads a fragment's key and its colon, comparing bytes (no string is made for the usual keys).
    private nonisolated func fragmentKey(_ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) throws(JSONError) -> FragmentKey {
        if matchKey("type", &parser, p) { return .type }
        if matchKey("uuid", &parser, p) { return .uuid }
        if matchKey("clsName", &parser, p) { return .clsName }
        if matchKey("properties", &parser, p) { return .properties }
        return FragmentKey(try parser.parseKey(p))
    }

    /// Skips `"literal"` if it is next (exactly those bytes, no escapes); whether it was.
    private nonisolated func matchString(_ literal: StaticString, _ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) -> Bool {
        matchString(literal.utf8Start, literal.utf8CodeUnitCount, &parser, p)
    }

    /// Skips the JSON string of exactly `bytes` (no escapes) if it is next; whether it was.
    private nonisolated func matchBytes(_ bytes: [UInt8], _ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) -> Bool {
        bytes.withUnsafeBufferPointer { matchString($0.baseAddress, $0.count, &parser, p) }
    }

    /// Skips the JSON string of the `length` bytes at `bytes` if it is next; whether it was.
    private nonisolated func matchString(_ bytes: UnsafePointer<UInt8>?, _ length: Int, _ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) -> Bool {
        let start = parser.position
        guard start + length + 2 <= parser.count, p[start] == UInt8(ascii: "\""), p[start + length + 1] == UInt8(ascii: "\"") else { return false }
        parser.position += 1
        guard matchRaw(bytes, length, &parser, p) else {
            parser.position = start
            return false
        }
        parser.position += 1
        return true
    }

    /// Skips `"literal"` and the colon after it if they are next; whether they were.
    private nonisolated func matchKey(_ literal: StaticString, _ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) -> Bool {
        let start = parser.position
        guard matchString(literal, &parser, p) else { return false }
        return skipColon(start, &parser, p)
    }

    /// The synced property whose name is the plain (escape-free) key next, with its colon skipped;
    /// `nil` (position unspecified) for an escaped, unknown or local property name.
    private nonisolated mutating func matchPropertyName(_ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) -> Int? {
        let start = parser.position
        guard start < parser.count, p[start] == UInt8(ascii: "\"") else { return nil }
        var end = start + 1
        while end < parser.count, p[end] != UInt8(ascii: "\""), p[end] != UInt8(ascii: "\\") { end += 1 }
        guard end < parser.count, p[end] == UInt8(ascii: "\"") else { return nil }
        let length = end - start - 1
        // Nonisolated, like the other byte-level helpers: a closure isolated to the main actor pays a
        // dynamic executor check on every call, which was a tenth of a restore.
        func matches(_ index: Int) -> Bool {
            guard index < nameRanges.count else { return false }
            let range = nameRanges[index]
            guard range.lowerBound >= 0, range.count == length else { return false }
            return length == 0 || nameBytes.withUnsafeBufferPointer { memcmp(p + start + 1, $0.baseAddress.unsafelyUnwrapped + range.lowerBound, length) == 0 }
        }
        let guess = successor[previousName + 1]
        guard let index = matches(guess) ? guess : nameRanges.indices.first(where: matches) else { return nil }
        successor[previousName + 1] = index
        previousName = index
        parser.position = end + 1
        return skipColon(start, &parser, p) ? index : nil
    }

    /// Skips whitespace, a colon and whitespace; if there is no colon, goes back to `start` and says so.
    private nonisolated func skipColon(_ start: Int, _ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) -> Bool {
        parser.skipWhitespace(p)
        guard parser.position < parser.count, p[parser.position] == UInt8(ascii: ":") else {
            parser.position = start
            return false
        }
        parser.position += 1
        parser.skipWhitespace(p)
        return true
    }

    private nonisolated func expect(_ byte: UInt8, _ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) throws(JSONError) {
        guard parser.position < parser.count else { throw parser.endOfInput() }
        guard p[parser.position] == byte else { throw JSONError.unexpected(p[parser.position], at: parser.position) }
        parser.position += 1
    }

    /// Skips `byte` if it is next; whether it was.
    private nonisolated func consume(_ byte: UInt8, _ parser: inout JSONParser, _ p: UnsafePointer<UInt8>) throws(JSONError) -> Bool {
        guard parser.position < parser.count else { throw parser.endOfInput() }
        guard p[parser.position] == byte else { return false }
        parser.position += 1
        return true
    }

    private nonisolated func invalid(_ reason: String) -> FragmentLogError {
        .badRecord(offset: offset, reason: "\(WireError.invalidFragment(index: nil, reason: reason))")
    }
}
