/// One place where a model object is held: a parent and the index of the property holding it.
@MainActor
struct ParentLink {
    weak var parent: ModelObject?
    let property: Int
}
