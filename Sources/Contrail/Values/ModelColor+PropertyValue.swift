import Foundation

/// A color on the wire: the unsigned 32-bit number `0xRRGGBBAA`.
extension ModelColor: PropertyValue {
    /// The wire value (Protocol §3.1).
    public func wireValue() -> JSON { .int(Int64(rgba)) }

    /// Decodes a wire value; throws `ModelError` when it does not fit this type.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> ModelColor {
        ModelColor(rgba: try UInt32.decode(wire: wire, property: property, resolver: resolver))
    }
}
