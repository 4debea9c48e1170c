import Foundation

extension ChangeSet {
    /// One element a change set inserted into or moved within a collection that the server's merge
    /// left out (`ChangeSet.drops`): the change set then settles as `.partiallyReverted`, and the
    /// replica already shows the server's value.
    public struct Drop: Sendable, Hashable, CustomStringConvertible {
        /// Why the server left the element out.
        public enum Reason: String, Sendable, Hashable {
            /// Another client removed it concurrently and the removal won (a move within one
            /// collection), or the server no longer holds the object and can no longer restore it.
            case removedConcurrently
        }

        /// The object whose collection it is.
        public let object: UUID
        /// The collection's property name.
        public let property: String
        /// The element left out.
        public let element: UUID
        /// Why.
        public let reason: Reason

        /// Creates a drop.
        public init(object: UUID, property: String, element: UUID, reason: Reason) {
            self.object = object
            self.property = property
            self.element = element
            self.reason = reason
        }

        /// `object.property: element (reason)`.
        public var description: String { "\(object.wireString).\(property): \(element.wireString) (\(reason.rawValue))" }
    }
}
