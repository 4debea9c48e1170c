import Foundation

/// An integer that replicas change by adding to it, so that concurrent changes all count
/// (Protocol §8.21): two replicas that each add 1 to 5 end with 7, where a plain `Int` would end
/// with 6.
///
/// ```swift
/// final class Post: ModelObject {
///     @Property var likes = SharedCounter()
/// }
/// post.likes.increment()          // travels as "+1" beside the plain total
/// post.likes.add(-3)
/// print(post.likes.value)
/// ```
///
/// On the wire the property is the plain integer total (what an original Jetstream peer reads and
/// writes) and a change also carries its delta in the fragment's `counter` member, which a Contrail
/// server adds to its current total. A plain write without a delta (an original peer's) sets the
/// total: increments the server applied before it are overwritten, later ones add to it.
public struct SharedCounter: PropertyValue, Hashable, Sendable, CustomStringConvertible {
    /// The total.
    public private(set) var value: Int64

    /// A counter at `value`.
    public init(_ value: Int64 = 0) {
        self.value = value
    }

    /// Adds `delta` (negative: subtracts), wrapping on overflow.
    public mutating func add(_ delta: Int64) {
        value &+= delta
    }

    /// Adds 1.
    public mutating func increment() { add(1) }

    /// Subtracts 1.
    public mutating func decrement() { add(-1) }

    /// The total as text.
    public var description: String { String(value) }

    /// The plain total (Protocol §3.1: a number).
    public func wireValue() -> JSON { .int(value) }

    /// Decodes the plain total; throws `ModelError` for anything but an integer.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> SharedCounter {
        SharedCounter(try Int64.decode(wire: wire, property: property, resolver: resolver))
    }
}
