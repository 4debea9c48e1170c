/// The server's merge of shared properties (Protocol §8.21), in `ContrailWire` so that client and
/// server agree: a `SharedCounter` sums the deltas of concurrent change sets, a `SharedText` applies
/// the text operations of each to the text's state (`TextDocument`). Both work on wire values, so
/// the schema-agnostic server needs no model.
public enum SharedMerge {
    /// The replica name under which a server writes an original peer's plain text into a shared text.
    public static let serverReplica = "server"
    /// The `extensions` entry of a server that merges `SharedText` operations (§8.12).
    public static let textExtension = "SharedText"
    /// The `extensions` entry of a server that sums `SharedCounter` deltas (§8.12).
    public static let counterExtension = "SharedCounter"

    /// `current` (an integer wire value; nil or null counts as 0) plus `delta`; nil when `current`
    /// is not an integer or the sum overflows 64 bits.
    public static func addCounter(_ current: JSON?, _ delta: Int64) -> JSON? {
        let base: Int64
        switch current {
        case nil, .null?: base = 0
        case .some(let value):
            guard let number = value.int64Value else { return nil }
            base = number
        }
        let (sum, overflow) = base.addingReportingOverflow(delta)
        return overflow ? nil : .int(sum)
    }

    /// The document a shared text's `state` holds, or, without one, the text of `plain` typed by the
    /// reserved initial replica (how every replica reads a plain string it had no state for).
    public static func document(state: JSON?, plain: JSON?, replica: String) throws(TextError) -> TextDocument {
        if let state, !state.isNull { return try TextDocument(replica: replica, state: state) }
        return TextDocument(replica: replica, initialText: plain?.stringValue ?? "")
    }

    /// Applies a fragment's `text` member for one key to the server's `state` (or `plain` text when
    /// it has none): operations (`{"replicas","ops"}`) are applied in order; a state
    /// (`{"replicas","runs"}`, in an `add`) is taken as the object's text when there is none yet, and
    /// otherwise ignored (the text the server holds wins, as for any value of an `add` of an object
    /// it holds). Returns the new state and its plain text. O(characters of the text + operations).
    public static func applyText(state: JSON?, plain: JSON?, member: JSON) throws(TextError) -> (state: JSON, text: String) {
        if member["runs"] != nil, state == nil || state?.isNull == true {
            let incoming = try TextDocument(replica: serverReplica, state: member)
            return (incoming.stateJSON, incoming.text)
        }
        let document = try document(state: state, plain: plain, replica: serverReplica)
        if member["runs"] == nil { try document.apply(try TextOperation.decode(member)) }
        return (document.stateJSON, document.text)
    }

    /// Writes `newText` over the shared text in `state` as the server's replica would type it (the
    /// common prefix and suffix kept, the middle deleted and retyped): what an original peer's plain
    /// write of a shared text means. Returns the new state, its text and the operations (to
    /// broadcast, so that Contrail replicas merge the write instead of replacing their text).
    public static func replaceText(state: JSON?, plain: JSON?, with newText: String) throws(TextError) -> (state: JSON, text: String, operations: JSON) {
        let document = try document(state: state, plain: plain, replica: serverReplica)
        let operations = try document.replace(with: newText)
        return (document.stateJSON, document.text, TextOperation.json(operations))
    }
}
