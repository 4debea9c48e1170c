import Foundation

/// What a scope holds that its app does not understand (Protocol §8.23): objects of classes no
/// model class is registered for, and, per known object, wire values its class does not declare or
/// cannot show. Nothing of it is materialized as a `ModelObject`; all of it is written back
/// unchanged wherever the scope writes an object whole (an `add`, a snapshot, `stateJSON`).
@MainActor
struct UnknownState {
    /// An object of a class this app does not know: its class name and wire values, as received.
    struct Record {
        var className: String
        var properties: [String: JSON]
    }

    /// Objects of unknown classes by UUID.
    var objects: [UUID: Record] = [:]
    /// Per known object (by UUID): the wire values of properties its class does not declare (or
    /// does not sync), and the whole wire value of a reference or collection property that holds
    /// objects of unknown classes (the app sees the value without them).
    var extras: [UUID: [String: JSON]] = [:]
    /// Known objects that something above reaches (an unknown object, an extra value): they stay
    /// attached whatever their model parents say.
    var held: Set<UUID> = []
    /// The model versions fragment logs gave for classes this app does not know, written back with them.
    var versions: [String: Int] = [:]

    /// Whether the scope holds nothing it does not understand (the common case: every check is skipped).
    var isEmpty: Bool { objects.isEmpty && extras.isEmpty && held.isEmpty }

    /// Every UUID a wire value names (a reference, or the elements of a collection). Strings in UUID
    /// form count, as for the server's reachability (Protocol §3.2, §3.3).
    static func uuids(in value: JSON) -> [UUID] {
        switch value {
        case .string(let string): UUID(wireString: string).map { [$0] } ?? []
        case .array(let elements): elements.compactMap { $0.stringValue.flatMap(UUID.init(wireString:)) }
        default: []
        }
    }

    /// `visible` with the elements of `full` that `isHidden` says the app cannot see put back where
    /// they were: each right after the nearest element before it in `full` that `visible` still
    /// holds (at the front when there is none). O(full + visible).
    static func weave(_ full: [UUID], into visible: [UUID], isHidden: (UUID) -> Bool) -> [UUID] {
        let shown = Set(visible)
        var after: [UUID?: [UUID]] = [:]
        var anchor: UUID?
        for element in full {
            if shown.contains(element) {
                anchor = element
            } else if isHidden(element) {
                after[anchor, default: []].append(element)
            }
        }
        guard !after.isEmpty else { return visible }
        var result = after[nil] ?? []
        for element in visible {
            result.append(element)
            if let hidden = after[element] { result += hidden }
        }
        return result
    }
}
