import Foundation

/// A hash table from UUIDs to values, for loops that look up a UUID per element (restoring a log,
/// applying a collection edit): open addressing with linear probing, and a multiply-shift hash of the UUID's two
/// halves instead of `Hasher` (SipHash), which was most of a `Dictionary<UUID, _>` lookup's cost.
/// The multiplier is odd and random per process, so no fixed set of UUIDs collides in every run.
/// An empty table allocates nothing. Entries are never removed. Lookups and inserts are amortised O(1).
package struct UUIDTable<Value> {
    private struct Entry {
        var key: (UInt64, UInt64)
        /// `nil`: the slot is free.
        var value: Value?
    }

    private var entries: [Entry]
    private let shift: UInt64
    /// The number of entries.
    package private(set) var count = 0

    /// An empty table with room for `capacity` entries before it grows (none allocated for 0).
    package init(capacity: Int = 0) {
        var slots = capacity > 0 ? 16 : 0
        while slots * 3 < capacity * 4 { slots *= 2 }
        self.init(slots: slots)
    }

    private init(slots: Int) {
        entries = Array(repeating: Entry(key: (0, 0), value: nil), count: slots)
        shift = UInt64(64 - min(slots.trailingZeroBitCount, 63))
    }

    /// The value stored for `uuid`, if any.
    package subscript(uuid: UUID) -> Value? {
        entries.isEmpty ? nil : entries[slot(for: Self.key(uuid))].value
    }

    /// Stores `value` for `uuid` unless the table holds one already; returns the one it holds.
    package mutating func insert(_ value: Value, for uuid: UUID) -> Value? {
        if entries.isEmpty { self = UUIDTable(slots: 16) }
        let key = Self.key(uuid)
        let slot = slot(for: key)
        if let held = entries[slot].value { return held }
        entries[slot] = Entry(key: key, value: value)
        count += 1
        if count * 4 > entries.count * 3 { grow() }
        return nil
    }

    /// Stores `value` for `uuid`, replacing the one it holds, if any.
    package mutating func update(_ value: Value, for uuid: UUID) {
        if entries.isEmpty { self = UUIDTable(slots: 16) }
        let key = Self.key(uuid)
        let slot = slot(for: key)
        guard entries[slot].value == nil else {
            entries[slot].value = value
            return
        }
        _ = insert(value, for: uuid)
    }

    /// The slot that holds `key`, or the free slot where it would go.
    private func slot(for key: (UInt64, UInt64)) -> Int {
        let mask = entries.count - 1
        var slot = Int(truncatingIfNeeded: ((key.0 ^ (key.1 &* 0x9E37_79B9_7F4A_7C15)) &* uuidTableMultiplier) >> shift)
        while entries[slot].value != nil, entries[slot].key != key { slot = (slot + 1) & mask }
        return slot
    }

    private static func key(_ uuid: UUID) -> (UInt64, UInt64) {
        withUnsafeBytes(of: uuid.uuid) { ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
    }

    private mutating func grow() {
        var bigger = UUIDTable(slots: entries.count * 2)
        for entry in entries where entry.value != nil {
            bigger.entries[bigger.slot(for: entry.key)] = entry
        }
        bigger.count = count
        self = bigger
    }
}

/// ``UUIDTable``'s hash multiplier: odd, and random per process.
private let uuidTableMultiplier = UInt64.random(in: 1...UInt64.max) | 1
