import Foundation

/// What `Scope.apply(_:)` did besides applying: what it skipped and why.
public struct ApplyReport: Sendable, Equatable {
    /// Properties no class declares ("Shape.radius"), skipped.
    public var unknownProperties: [String] = []
    /// `change` fragments for objects the scope does not hold, skipped (as Jetstream does).
    public var unknownObjects: [UUID] = []
    /// Number of fragments applied.
    public var appliedFragments = 0

    /// An empty report: nothing skipped, nothing applied.
    public init() {}
}
