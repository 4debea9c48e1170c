/// What one operation changed in the visible text, for a text view: positions are offsets in
/// Unicode scalars (code points) of the text as it was just before this change.
public enum TextChange: Hashable, Sendable {
    /// `text` was inserted at `position`.
    case insert(position: Int, text: String)
    /// `count` characters were deleted from `position`.
    case delete(position: Int, count: Int)
}
