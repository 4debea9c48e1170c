/// What a property holds, as far as the model tree is concerned.
public enum PropertyValueKind: Sendable {
    /// A plain value (number, string, date, enum, array of values, …).
    case value
    /// A reference to one model object (`var owner: Person?`): the target gets this object as a parent.
    case reference
    /// An ordered collection of model objects (`var shapes: [Shape]`): every element gets this object as a parent.
    case collection
}
