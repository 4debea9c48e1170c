/// `ScopeFetch` (client → server, sequenced): asks for a scope by name (PROTOCOL.md §2.3).
///
/// ```json
/// {"type":"ScopeFetch","index":1,"name":"Canvas","params":{}}
/// ```
public struct ScopeFetch: Sendable, Equatable {
    /// The wire `type`.
    public static let typeName = "ScopeFetch"

    /// The client's sequence number (from 1).
    public var index: Int
    /// The scope's name.
    public var name: String
    /// App parameters handed to the server's fetch hook; `{}` when absent.
    public var params: [String: JSON]

    /// Creates the message.
    public init(index: Int, name: String, params: [String: JSON] = [:]) {
        self.index = index
        self.name = name
        self.params = params
    }

    /// Decodes and validates ("Invalid name").
    public init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        name = try fields.string("name", "Invalid name")
        params = try fields.object("params", "Invalid params")
    }

    /// The wire object.
    public var json: JSON {
        ["type": .string(Self.typeName), "index": .int(Int64(index)), "name": .string(name), "params": .object(params)]
    }
}
