/// `SessionCreate` (client → server, index 0): opens a session (Protocol §2.1).
///
/// ```json
/// {"type":"SessionCreate","index":0,"version":"0.2.0","params":{"userId":"42"}}
/// ```
package struct SessionCreate: Sendable, Equatable {
    /// The wire `type`.
    package static let typeName = "SessionCreate"

    /// Always 0 from clients; the server accepts any unsigned integer.
    package var index: Int
    /// Client protocol version; must be valid semver (iOS sends "0.2.0", JS "0.1.0").
    package var version: String
    /// App parameters handed to the server's session hook; `{}` when absent.
    package var params: [String: JSON]

    /// Creates the message.
    package init(index: Int = 0, version: String, params: [String: JSON] = [:]) {
        self.index = index
        self.version = version
        self.params = params
    }

    /// Decodes and validates: `version` must be semver ("Requires version" / "Requires valid version").
    package init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        guard let version = fields.members["version"], !version.isNull else {
            throw fields.failure("Requires version")
        }
        guard case .string(let text) = version, Semver.isValid(text) else {
            throw fields.failure("Requires valid version")
        }
        self.version = text
        params = try fields.object("params", "Invalid params")
    }

    /// The wire object.
    package var json: JSON {
        ["type": .string(Self.typeName), "index": .int(Int64(index)), "version": .string(version), "params": .object(params)]
    }
}
