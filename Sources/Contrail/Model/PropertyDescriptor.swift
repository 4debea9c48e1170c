/// One `@Property` of a model class: its wire name, position and how to reach its storage.
@MainActor
struct PropertyDescriptor {
    /// The wire name: the declared name without the wrapper's underscore.
    let name: String
    /// Position in the class's property list (declaration order, superclass first).
    let index: Int
    /// Byte offset of the `Property<Value>` storage inside the object.
    let offset: Int
    let storage: any PropertyStorage.Type
    let options: PropertyOptions

    var valueKind: PropertyValueKind { storage.valueKind }
    var isSynced: Bool { !options.isLocal }
}
