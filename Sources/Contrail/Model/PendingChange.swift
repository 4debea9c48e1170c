import Foundation

/// The change a host (a scope) is recording for one object during its current flush: whether the
/// object joined in the flush, and what its touched properties held before. It is kept on the
/// object's tracking record, so it holds no reference to the object.
@MainActor
struct PendingChange {
    /// Whether the object joined the host in this flush or changed in it.
    enum Kind {
        /// The object joined in this flush: all of it is new.
        case add
        /// The object was there before: only the touched properties changed.
        case change
    }

    /// `add` when the object joined the host in this flush.
    let kind: Kind
    /// Touched properties in order of first touch, with the value each had before.
    var originals = PropertyOriginals()

    /// Touched properties in order of first touch.
    var touched: [Int] { originals.properties }

    /// An entry of `kind` with no touched property yet.
    init(kind: Kind) {
        self.kind = kind
    }

    /// A `change` entry whose first touched property is `property`, which had value `original`.
    init(changing property: Int, from original: consuming Any) {
        kind = .change
        originals = PropertyOriginals(first: property, original)
    }
}

/// The values properties had before their first touch in a flush, in order of first touch. The
/// first one is stored inline (a property index of -1 means none), so recording a change of one
/// property allocates nothing and copies no optional. Lookups are O(touched properties), a handful.
@MainActor
struct PropertyOriginals {
    private var firstProperty = -1
    private var firstValue: Any = ()
    private var rest: [(property: Int, value: Any)] = []

    init() {}

    /// Originals whose first touched property is `property`, with value `value`.
    init(first property: Int, _ value: consuming Any) {
        firstProperty = property
        firstValue = value
    }

    /// Whether `property` was touched.
    func contains(_ property: Int) -> Bool {
        firstProperty == property || (!rest.isEmpty && rest.contains { $0.property == property })
    }

    var properties: [Int] {
        firstProperty < 0 ? [] : [firstProperty] + rest.map(\.property)
    }

    /// The original of `property`, if it was touched. Setting nil is not supported (nothing un-touches).
    subscript(property: Int) -> Any? {
        get {
            if firstProperty >= 0, firstProperty == property { return firstValue }
            return rest.first { $0.property == property }?.value
        }
        set {
            guard let newValue, !contains(property) else { return }
            if firstProperty < 0 {
                firstProperty = property
                firstValue = newValue
            } else {
                rest.append((property, newValue))
            }
        }
    }
}
