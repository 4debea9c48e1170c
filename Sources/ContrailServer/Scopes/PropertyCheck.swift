import ContrailWire
import Foundation

/// The outcome of checking one property value against what the server knows of its kind.
enum PropertyCheck {
    /// The value is acceptable.
    case success(CheckedValue)
    /// The value is rejected, with the §5.2 message.
    case failure(WireErrorBody)
}

/// A value accepted for a property: the value to store (references lowercased), the kind it
/// settles (if the kind was open), and the objects it references.
struct CheckedValue {
    var value: JSON
    var kind: PropertyKind?
    var references: [UUID]
}
