/// Marks `[SomeModel]`, an array of model objects: its wire value is exactly its models' UUIDs in
/// order (no nulls, no nesting), so the scope can keep and rebuild a change of it as UUIDs and
/// models, without the wire value (``PropertyStorage/isModelList``).
protocol ModelList {
    /// The array of `models`, boxed; nil when one from `start` on is not of the element class (the
    /// ones before are known to be: they come from a value of this type). O(n - start): the
    /// array is taken as it is, without a copy.
    @MainActor static func value(of models: [ModelObject], checkingFrom start: Int) -> Any?
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

    @MainActor static func value(of models: [ModelObject], checkingFrom start: Int) -> Any? {
        for model in models[Swift.min(Swift.max(start, 0), models.count)...] where !(model is Element) { return nil }
        // Every model is of the element class: the buffer of class references is taken as one of them.
        return unsafeBitCast(models, to: [Element].self)
    }
}
