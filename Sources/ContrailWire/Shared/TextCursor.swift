/// A position in a `TextDocument` that stays attached to a character across remote edits: the
/// position just before character `id` (or the end of the text when `id` is nil). Cheap to carry
/// as JSON, e.g. in presence: `{"replica":"a1","seq":42}`, or `null` for the end.
public struct TextCursor: Hashable, Sendable {
    /// The character the cursor stands before; nil for the end of the text.
    public var id: TextID?

    /// A cursor before `id` (nil: at the end).
    public init(before id: TextID?) {
        self.id = id
    }

    /// `{"replica":…,"seq":…}`, or `null` for the end.
    public var json: JSON {
        guard let id else { return .null }
        return .object(["replica": .string(id.replica), "seq": .int(Int64(id.seq))])
    }

    /// Decodes ``json``; throws `TextError.malformed` for anything else.
    public init(json: JSON) throws(TextError) {
        if json.isNull {
            id = nil
            return
        }
        guard case .string(let replica)? = json["replica"], TextID.isValidReplica(replica),
              let seq = json["seq"]?.int64Value, seq >= 0, seq <= Int64(Int32.max)
        else { throw .malformed("a cursor is {\"replica\",\"seq\"} or null") }
        id = TextID(replica: replica, seq: Int(seq))
    }
}
