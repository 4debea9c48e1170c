/// Decoding wire values into a class's properties (the model layer knows no wire values).
extension ModelClassInfo {
    /// Decodes a wire value for property `index`. A `null` for a property that cannot hold nil
    /// (a JavaScript peer's cleared value) takes the class's declared default, the value a new
    /// instance holds, and `[]` for a collection, so every replica reads it the same way (floating
    /// point properties read `null` as NaN). Only a non-optional model reference refuses it.
    func decode(_ wire: JSON, at index: Int, resolver: ModelResolver) throws(ModelError) -> Any {
        let property = properties[index]
        do {
            return try coder(at: index).decode(wire, property: property.name, resolver: resolver)
        } catch {
            guard case .null = wire, property.valueKind != .reference else { throw error }
            if property.valueKind == .collection {
                return try coder(at: index).decode(.array([]), property: property.name, resolver: resolver)
            }
            return property.storage.value(in: probe, offset: property.offset)
        }
    }
}
