import Foundation

/// The fragment a scope is building for one object during the current flush. It is kept on the
/// object's tracking record (see `PendingFragments`), so it holds no reference to the object.
@MainActor
struct PendingFragment {
    /// `add` when the object joined the scope in this flush.
    let kind: SyncFragment.Kind
    /// Touched properties in order of first touch, with the value each had before.
    var originals = PropertyOriginals()
    /// Collection contents before the first touch, for the server's three-way merge (§8.4).
    var bases: [Int: [UUID]] = [:]

    /// Touched properties in order of first touch.
    var touched: [Int] { originals.properties }

    /// An entry of `kind` with no touched property yet.
    init(kind: SyncFragment.Kind) {
        self.kind = kind
    }

    /// A `change` entry whose first touched property is `property`, which had value `original`
    /// (and, for a collection, the elements `base`).
    init(changing property: Int, from original: Any, base: [UUID]?) {
        kind = .change
        originals = PropertyOriginals(first: property, original)
        if let base { bases = [property: base] }
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
    init(first property: Int, _ value: Any) {
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
