/// A computed property whose observers fire when one of its dependencies changes.
///
/// ```swift
/// final class Shape: ModelObject {
///     @Property var width = 100.0
///     @Property var height = 100.0
///     var area: Double { width * height }
///     override class var compositeProperties: [CompositeProperty] {
///         [CompositeProperty(\Shape.area, dependsOn: \Shape.width, \Shape.height)]
///     }
/// }
/// shape.observeChange(self, \.area) { … }   // fires when width or height changes
/// ```
/// Composite properties are never synced.
public struct CompositeProperty {
    let keyPath: AnyKeyPath
    let dependencies: [AnyKeyPath]

    /// A composite property: observers of `keyPath` fire whenever one of `dependencies` changes.
    public init<Model: ModelObject, Value>(_ keyPath: KeyPath<Model, Value>, dependsOn dependencies: PartialKeyPath<Model>...) {
        self.keyPath = keyPath
        self.dependencies = dependencies
    }
}
