import ContrailWire

/// One object of a server-side scope: its class name and its properties as wire values.
/// The server knows no schema; a property's meaning comes from its values (see ``PropertyKind``).
struct StoredObject: Sendable, Equatable {
    /// The bare class name; empty for a root nobody has named yet.
    var className: String
    /// Property name → wire value.
    var properties: [String: JSON]
    /// Property name → the `TextDocument` state of a shared text (§8.21); its plain text is in
    /// `properties`.
    var texts: [String: JSON] = [:]
}
