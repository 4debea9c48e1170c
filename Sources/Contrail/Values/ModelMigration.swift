/// A model class whose values changed shape between versions of the app: it raises its
/// `modelVersion` and says how to read values an earlier version wrote.
///
/// ```swift
/// final class Board: ModelObject, ModelMigration {
///     @Property var tags: [String] = []                       // version 0 kept one comma-separated String
///     override class var modelVersion: Int { 1 }
///     static func migrate(_ values: inout [String: JSON], from version: Int) {
///         if version < 1, case .string(let joined)? = values["tags"] {
///             values["tags"] = .array(joined.split(separator: ",").map { .string(String($0)) })
///         }
///     }
/// }
/// ```
/// A fragment log restore calls it for every object of the class that a record of an earlier
/// version holds, before anything is decoded.
@MainActor
public protocol ModelMigration: ModelObject {
    /// Rewrites `values` (wire name → wire value, as a record of class version `version` holds
    /// them) into the shape of the current `modelVersion`. Names are the stored ones (earlier
    /// property names are read into their properties afterwards).
    static func migrate(_ values: inout [String: JSON], from version: Int)
}
