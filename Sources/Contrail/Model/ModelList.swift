/// Marks `[SomeModel]`, an array of model objects: its wire value is exactly its models' UUIDs in
/// order (no nulls, no nesting), so the scope can keep and rebuild a change of it as UUIDs and
/// models, without the wire value (``PropertyStorage/isModelList``).
protocol ModelList {
    /// The array of `models`, boxed; nil when one is not of the element class. O(n).
    @MainActor static func value(of models: [ModelObject]) -> Any?
    /// The models of a boxed array of this type, as they are (no copy, no per-element cast); nil
    /// for another value. O(1).
    static func models(of value: Any) -> [ModelObject]?
}

extension Array: ModelList where Element: ModelObject {
    static func models(of value: Any) -> [ModelObject]? {
        // An array of a model class has the layout of an array of `ModelObject` (one buffer of
        // class references; what Swift's own class-array upcast reinterprets), so it is taken as
        // one without copying: `as [ModelObject]` copies and retains element by element on Linux.
        (value as? [Element]).map { unsafeBitCast($0, to: [ModelObject].self) }
    }

    @MainActor static func value(of models: [ModelObject]) -> Any? {
        var typed: [Element] = []
        typed.reserveCapacity(models.count)
        for model in models {
            guard let element = model as? Element else { return nil }
            typed.append(element)
        }
        return typed
    }
}
