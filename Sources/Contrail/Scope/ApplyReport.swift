import Foundation

/// What `Scope.apply(_:)` did besides applying: what it skipped and why.
public struct ApplyReport: Sendable, Equatable {
    /// Properties the object's class does not declare ("Shape.radius"): not applied to the model,
    /// kept with the object as they are (`Scope.unknownValues(of:)`, Protocol §8.23).
    public var unknownProperties: [String] = []
    /// `change` fragments for objects the scope does not hold, skipped (as Jetstream does).
    public var unknownObjects: [UUID] = []
    /// Number of fragments applied.
    public var appliedFragments = 0

    /// An empty report: nothing skipped, nothing applied.
    public init() {}
}
