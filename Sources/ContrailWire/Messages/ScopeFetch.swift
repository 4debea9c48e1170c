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
    /// Contrail extension (§8.25): the client reads a large state as `ScopeStateChunk`s (sent only
    /// to a server that lists `ScopeStateChunk` in `extensions`; an original server ignores it).
    package var chunks: Bool

    /// Creates the message.
    package init(index: Int, name: String, params: [String: JSON] = [:], chunks: Bool = false) {
        self.index = index
        self.name = name
        self.params = params
        self.chunks = chunks
    }

    /// Decodes and validates ("Invalid name").
    package init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        name = try fields.string("name", "Invalid name")
        params = try fields.object("params", "Invalid params")
        chunks = fields.members["chunks"] == .bool(true)
    }

    /// The wire object.
    package var json: JSON {
        var object: [String: JSON] = ["type": .string(Self.typeName), "index": .int(Int64(index)), "name": .string(name),
                                      "params": .object(params)]
        if chunks { object["chunks"] = .bool(true) }
        return .object(object)
    }
}
