/// Why the options of a class's `@Property` declarations could not be matched to its properties.
///
/// Options are recorded while a probe instance initialises, with where each `@Property` is
/// declared, and matched to the class's stored properties by declaration order and storage type.
/// A wrapper made explicitly in an initialiser (`_secret = Property(wrappedValue: 0, local: true)`)
/// reports the initialiser's position instead of the declaration's, and an initialiser that makes
/// models of its own can report more; then no property's options are known, and as a `local` one
/// could start syncing, the class is refused.
struct PropertyOptionsMismatch: Error, Equatable {
    /// The class whose declarations did not line up.
    let className: String
    /// How many `@Property` initialisers reported options.
    let declarations: Int
    /// How many `@Property` fields the class (with its superclasses) has.
    let properties: Int

    /// What went wrong and how to fix it, in words (the debug-build trap's message too).
    var message: String {
        "the @Property options of class '\(className)' cannot be matched to its properties (\(declarations) "
            + "@Property initialisers reported options for \(properties) properties, not in declaration order); "
            + "give options in the declaration (`@Property(local: true) var x = …`), not to a Property made in an initialiser"
    }
}
