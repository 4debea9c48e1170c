/// Marks `[SomeModel]`, an array of model objects: its wire value is exactly its models' UUIDs in
/// order (no nulls, no nesting), so the scope can keep and rebuild a change of it as UUIDs and
/// models, without the wire value (``PropertyStorage/isModelList``).
protocol ModelList {
    /// The array of `models`, boxed; nil when one is not of the element class. O(n).
    @MainActor static func value(of models: [ModelObject]) -> Any?
}

extension Array: ModelList where Element: ModelObject {
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
