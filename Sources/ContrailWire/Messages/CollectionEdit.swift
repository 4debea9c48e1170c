import ContrailSupport
import Foundation

/// One edit of an ordered collection as operations (Protocol §8.24): what turns the collection the
/// sender saw (its base, named by ``baseCount`` and ``baseDigest``) into its new value, without
/// either array. Removals name elements; inserts and moves name each placed element with its
/// anchor, the element right before it in the new value (nil: at the front), in new-value order.
///
/// Applied to its base (``applied(to:)``) the edit gives back exactly the sender's new value, so a
/// peer holding the base runs ``CollectionMerge`` on the same three arrays as with `bases`, and
/// reaches the same result. A server that no longer holds the base applies the edit to its current
/// value instead (``appliedLoosely(to:)``).
///
/// ```json
/// {"n":3,"digest":"9c0f3a…","remove":["…"],"place":[["b1…","a0…"],["c2…",null,1]]}
/// ```
///
/// Collections that hold an element twice have no edit (``init(base:new:)`` returns nil); they go
/// as whole arrays.
public struct CollectionEdit: Sendable, Hashable {
    /// One placed element: inserted (not in the base) or moved (in the base, out of its order).
    public struct Placement: Sendable, Hashable {
        /// The element.
        public var element: UUID
        /// The element right before it in the new value; nil: it is first.
        public var anchor: UUID?
        /// Whether the element was in the base (a move) rather than new to it (an insert).
        public var isMove: Bool

        /// A placement.
        public init(element: UUID, anchor: UUID?, isMove: Bool) {
            self.element = element
            self.anchor = anchor
            self.isMove = isMove
        }
    }

    /// The number of elements in the base.
    public var baseCount: Int
    /// ``digest(of:)`` of the base.
    public var baseDigest: UInt64
    /// Elements of the base that the new value lacks.
    public var removed: [UUID]
    /// Inserted and moved elements, in new-value order.
    public var placements: [Placement]

    /// An edit with these parts.
    public init(baseCount: Int, baseDigest: UInt64, removed: [UUID], placements: [Placement]) {
        self.baseCount = baseCount
        self.baseDigest = baseDigest
        self.removed = removed
        self.placements = placements
    }

    /// The edit base → new: removals, and the elements ``CollectionMerge/placed(base:new:)`` names
    /// with their anchors. Nil when either array holds an element twice. The common prefix and
    /// suffix are kept as they are, so an edit of a few elements of a long collection costs O(b + n)
    /// comparisons and a duplicate check, plus O(m log m) for the m elements between them.
    public init?(base: [UUID], new: [UUID]) {
        guard Self.isDuplicateFree(base), Self.isDuplicateFree(new) else { return nil }
        self.init(duplicateFreeBase: base, new: new, baseDigest: Self.digest(of: base))
    }

    /// The edit base → new for two arrays the caller knows hold no element twice (not checked),
    /// with `baseDigest` as given (a pending change set's edit, whose digest is computed only when
    /// it goes on the wire). Without duplicates, an element between the common prefix and suffix
    /// (``trim(base:new:)``) of one array is not in the other's prefix or suffix: the edit of the
    /// middles is an edit of the whole. O(b + n) comparisons of UUIDs (no hashing, no strings) plus
    /// O(m log m) for the m elements between prefix and suffix.
    package init(duplicateFreeBase base: [UUID], new: [UUID], baseDigest: UInt64) {
        let (prefix, suffix) = Self.trim(base: base, new: new)
        self.init(baseCount: base.count, anchor: prefix > 0 ? new[prefix - 1] : nil, baseMiddle: Array(base[prefix..<(base.count - suffix)]),
                  newMiddle: Array(new[prefix..<(new.count - suffix)]), baseDigest: baseDigest)
    }

    /// The edit of a duplicate-free base of `baseCount` elements into a new value that share a
    /// common prefix (whose last element is `anchor`, nil when it is empty) and suffix, between
    /// which the base holds `baseMiddle` and the new value `newMiddle` (what ``trim(base:new:)``
    /// leaves). The elements outside the middles are not needed: O(m log m) for the m elements
    /// of the middles, nothing for the rest.
    package init(baseCount: Int, anchor: UUID?, baseMiddle: [UUID], newMiddle: [UUID], baseDigest: UInt64) {
        var placements: [Placement] = []
        var removed: [UUID] = []
        if baseMiddle.isEmpty {
            // Inserts only (an append, an insert): every new element is placed, in order.
            placements.reserveCapacity(newMiddle.count)
            var previous = anchor
            for element in newMiddle {
                placements.append(Placement(element: element, anchor: previous, isMove: false))
                previous = element
            }
        } else if newMiddle.isEmpty {
            removed = baseMiddle  // removals only
        } else {
            let baseSet = Set(baseMiddle)
            let newSet = Set(newMiddle)
            let placed = Set(CollectionMerge.placed(base: baseMiddle, new: newMiddle))
            placements.reserveCapacity(placed.count)
            var previous = anchor
            for element in newMiddle {
                if placed.contains(element) { placements.append(Placement(element: element, anchor: previous, isMove: baseSet.contains(element))) }
                previous = element
            }
            removed = baseMiddle.filter { !newSet.contains($0) }
        }
        self.init(baseCount: baseCount, baseDigest: baseDigest, removed: removed, placements: placements)
    }

    /// The lengths of the common prefix and of the common suffix (not overlapping the prefix) of
    /// `base` and `new`. O(b + n) comparisons of UUIDs at most; O(1) for equal-length arrays that
    /// differ at both ends.
    package static func trim(base: [UUID], new: [UUID]) -> (prefix: Int, suffix: Int) {
        base.commonEnds(with: new, by: ==)
    }

    /// Whether no element of `elements` is there twice. O(n), without `Hasher`.
    package static func isDuplicateFree(_ elements: [UUID]) -> Bool {
        guard elements.count > 1 else { return true }
        var seen = UUIDTable<Bool>(capacity: elements.count)
        for element in elements where seen.insert(true, for: element) != nil { return false }
        return true
    }

    /// Whether `value` is this edit's base (its count and digest match). O(n).
    public func isBase(_ value: [UUID]) -> Bool {
        value.count == baseCount && Self.digest(of: value) == baseDigest
    }

    /// The sender's new value, when `base` is this edit's base; nil otherwise (or when the edit does
    /// not fit it: an element it removes or moves is missing, an anchor is absent). O(b + p).
    public func applied(to base: [UUID]) -> [UUID]? {
        guard isBase(base) else { return nil }
        return placing(into: base, strict: true)
    }

    /// Turns `value`, known to be this edit's base (not checked: no digest is computed), into the
    /// sender's new value; should the edit not fit it after all, it is applied loosely. Inserts at
    /// the end (each anchored on the element before it) are appended in place: O(p); any other
    /// edit O(b + p).
    package func apply(to value: inout [UUID]) {
        if removed.isEmpty, isAppend(to: value) {
            value.append(contentsOf: placements.lazy.map(\.element))
            return
        }
        value = placing(into: value, strict: true) ?? appliedLoosely(to: value)
    }

    /// Whether every placement inserts an element at the end of `base`, after the one before it.
    private func isAppend(to base: [UUID]) -> Bool {
        isAppend(after: base.last)
    }

    /// Whether the edit only appends (no removal; every placement an insert after the one before
    /// it, the first after `last`) to a base whose last element is `last` (nil: empty). O(p).
    package func isAppend(after last: UUID?) -> Bool {
        guard removed.isEmpty else { return false }
        var last = last
        for placement in placements {
            guard !placement.isMove, placement.anchor == last else { return false }
            last = placement.element
        }
        return true
    }

    /// The edit applied to `value` whatever it is (the fallback where its base is gone): elements it
    /// removes or moves go; a moved element that `value` lacks stays out (removal wins); each inserted
    /// or moved element goes right after its anchor, or, when `value` lacks the anchor, right after
    /// the element placed before it, else at the end. O(n + p).
    public func appliedLoosely(to value: [UUID]) -> [UUID] {
        placing(into: value, strict: false) ?? value
    }

    /// Removes, then hangs each placement after its anchor and writes the kept elements each
    /// followed by what hangs after it (a placement's anchor is a kept element or an earlier
    /// placement, so this is one pass). Elements of `base` are found by position in a ``UUIDTable``
    /// (no `Hasher` per element of a long collection). O(n + p).
    private func placing(into base: [UUID], strict: Bool) -> [UUID]? {
        // Position + 1 in `base` of each of its elements.
        var positions = UUIDTable<Int>(capacity: base.count)
        for (index, element) in base.enumerated() where positions.insert(index + 1, for: element) != nil {
            return strict ? nil : base
        }
        var isTaken = [Bool](repeating: false, count: base.count)
        for element in removed + placements.lazy.filter(\.isMove).map(\.element) {
            guard let position = positions[element] else {
                if strict { return nil }
                continue
            }
            isTaken[position - 1] = true
        }
        let isPresent = { (element: UUID) in positions[element] != nil }
        let isKept = { (element: UUID) in positions[element].map { !isTaken[$0 - 1] } ?? false }
        var isFollowed = [Bool](repeating: false, count: base.count)
        var followers: [UUID: [UUID]] = [:]
        var atFront: [UUID] = []
        var atEnd: [UUID] = []
        var placed: Set<UUID> = []
        var previous: UUID?
        for placement in placements {
            let element = placement.element
            if placement.isMove, !isPresent(element) { continue }
            if isKept(element) || placed.contains(element) || (strict && !placement.isMove && isPresent(element)) {
                if strict { return nil }
                continue
            }
            if let anchor = placement.anchor {
                if isKept(anchor) || placed.contains(anchor) {
                    followers[anchor, default: []].append(element)
                    if let position = positions[anchor] { isFollowed[position - 1] = true }
                } else if strict {
                    return nil
                } else if let previous {
                    followers[previous, default: []].append(element)
                } else {
                    atEnd.append(element)
                }
            } else {
                atFront.append(element)
            }
            placed.insert(element)
            previous = element
        }
        var result: [UUID] = []
        result.reserveCapacity(base.count + placed.count)
        var stack: [UUID] = []
        func emit(_ elements: [UUID]) {
            stack.append(contentsOf: elements.reversed())
            while let element = stack.popLast() {
                result.append(element)
                if let after = followers[element] { stack.append(contentsOf: after.reversed()) }
            }
        }
        emit(atFront)
        for (index, element) in base.enumerated() where !isTaken[index] {
            result.append(element)
            if isFollowed[index], let after = followers[element] { emit(after) }
        }
        emit(atEnd)
        return result
    }

    /// A 64-bit digest of a collection's elements in order, which names a base without sending it:
    /// FNV-1a over 64-bit words, each UUID's 16 bytes read as two little-endian words (the hash is
    /// xored with a word, then multiplied by the FNV prime 0x100000001b3). O(n).
    public static func digest(of elements: [UUID]) -> UInt64 {
        digest(of: elements, continuing: 0xcbf2_9ce4_8422_2325)
    }

    /// ``digest(of:)`` of a collection's elements followed by `elements`, given `hash`, the digest
    /// of the elements before them (FNV-1a runs element by element). O(`elements`).
    package static func digest(of elements: [UUID], continuing hash: UInt64) -> UInt64 {
        var hash = hash
        for element in elements {
            let (first, second) = withUnsafeBytes(of: element.uuid) { bytes in
                (UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                 UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
            }
            hash = (hash ^ first) &* 0x0000_0100_0000_01b3
            hash = (hash ^ second) &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    // MARK: Wire form

    /// The wire object: `{"n", "digest", "remove"?, "place"?}`, each placement `[element, anchor]`,
    /// with a third member `1` for a move.
    public var json: JSON {
        var members: [String: JSON] = ["n": .int(Int64(baseCount)), "digest": .string(Self.hex(baseDigest))]
        if !removed.isEmpty { members["remove"] = .array(removed.map { .string($0.wireString) }) }
        if !placements.isEmpty {
            members["place"] = .array(placements.map { placement in
                var entry: [JSON] = [.string(placement.element.wireString), placement.anchor.map { .string($0.wireString) } ?? .null]
                if placement.isMove { entry.append(.int(1)) }
                return .array(entry)
            })
        }
        return .object(members)
    }

    /// Decodes the wire object, checking every member (hostile input gets a ``WireError``, never a
    /// trap). O(size).
    public init(json: JSON, key: String) throws(WireError) {
        func invalid(_ reason: String) -> WireError {
            .invalidFragment(index: nil, reason: "Collection operations '\(key)': \(reason)")
        }
        guard case .object(let members) = json else { throw invalid("not an object") }
        guard let count = members["n"]?.int64Value, count >= 0, count <= Int64(Int32.max) else { throw invalid("invalid n") }
        guard case .string(let digestText)? = members["digest"], digestText.utf8.count == 16,
              let digest = UInt64(digestText, radix: 16)
        else { throw invalid("invalid digest") }
        var removed: [UUID] = []
        switch members["remove"] {
        case nil, .null?: break
        case .array(let elements)?:
            removed.reserveCapacity(elements.count)
            for element in elements {
                guard case .string(let text) = element, let uuid = UUID(wireString: text) else { throw invalid("remove is not an array of UUIDs") }
                removed.append(uuid)
            }
        default: throw invalid("remove is not an array of UUIDs")
        }
        var placements: [Placement] = []
        switch members["place"] {
        case nil, .null?: break
        case .array(let entries)?:
            placements.reserveCapacity(entries.count)
            for entry in entries {
                guard case .array(let parts) = entry, parts.count == 2 || parts.count == 3,
                      case .string(let elementText) = parts[0], let element = UUID(wireString: elementText)
                else { throw invalid("invalid placement") }
                var anchor: UUID?
                switch parts[1] {
                case .null: anchor = nil
                case .string(let text):
                    guard let uuid = UUID(wireString: text) else { throw invalid("invalid anchor") }
                    anchor = uuid
                default: throw invalid("invalid anchor")
                }
                var isMove = false
                if parts.count == 3 {
                    guard let flag = parts[2].int64Value, flag == 1 || flag == 0 else { throw invalid("invalid placement") }
                    isMove = flag == 1
                }
                placements.append(Placement(element: element, anchor: anchor, isMove: isMove))
            }
        default: throw invalid("place is not an array")
        }
        self.init(baseCount: Int(count), baseDigest: digest, removed: removed, placements: placements)
    }

    private static func hex(_ value: UInt64) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: 16 - text.count) + text
    }
}
