/// `ScopeFetch` (client → server, sequenced): asks for a scope by name (Protocol §2.3).
///
/// ```json
/// {"type":"ScopeFetch","index":1,"name":"Canvas","params":{}}
/// ```
package struct ScopeFetch: Sendable, Equatable {
    /// The wire `type`.
    package static let typeName = "ScopeFetch"

    /// The client's sequence number (from 1).
    package var index: Int
    /// The scope's name.
    package var name: String
    /// App parameters handed to the server's fetch hook; `{}` when absent.
    package var params: [String: JSON]

    /// Creates the message.
    package init(index: Int, name: String, params: [String: JSON] = [:]) {
        self.index = index
        self.name = name
        self.params = params
    }

    /// Decodes and validates ("Invalid name").
    package init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        name = try fields.string("name", "Invalid name")
        params = try fields.object("params", "Invalid params")
    }

    /// The wire object.
    package var json: JSON {
        ["type": .string(Self.typeName), "index": .int(Int64(index)), "name": .string(name), "params": .object(params)]
    }
}
