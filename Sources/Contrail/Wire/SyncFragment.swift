import Foundation
// Placeholder: replaced by the full implementation on the wire branch.
public struct SyncFragment: Sendable, Hashable {
    public enum Kind: String, Sendable, Codable { case add, change }
    public var kind: Kind
    public var uuid: UUID
    public var className: String
    public var properties: [String: JSON]
    public var bases: [String: [UUID]]?
    public init(kind: Kind, uuid: UUID, className: String, properties: [String: JSON], bases: [String: [UUID]]? = nil) {
        self.kind = kind; self.uuid = uuid; self.className = className; self.properties = properties; self.bases = bases
    }
}
