/// A weak reference to a model object (for maps that must not keep objects alive).
@MainActor
struct WeakObject {
    weak var object: ModelObject?
    init(_ object: ModelObject) { self.object = object }
}
