/// One fenced code block of a Markdown document: its language (the info string's first word), the
/// line of its opening fence, and its text.
///
/// ```swift
/// let blocks = try MarkdownCodeBlock.blocks(in: text, document: "README.md")
/// blocks.filter(\.isSwift).count
/// ```
struct MarkdownCodeBlock: Sendable, Equatable {
    /// How a Swift block takes part in its document's module (see ``DocumentationSnippetTests``).
    enum Role: Sendable, Equatable {
        /// A file of its own: declarations only.
        case file
        /// Top-level code: the document's `main.swift` (first line `// main.swift`).
        case main
        /// More of the document's `main.swift` (first line `// main.swift, continued`).
        case mainContinued
    }

    /// The document's path relative to the repository (for messages).
    var document: String
    /// The 1-based line of the opening fence.
    var fenceLine: Int
    /// The info string's first word, lowercased; empty when the fence has none.
    var language: String
    /// The block's lines, with the fence's indentation removed.
    var lines: [String]

    /// Whether the block is Swift, and so compiled.
    var isSwift: Bool { language == "swift" }

    /// The 1-based document line of the block's first line.
    var firstLine: Int { fenceLine + 1 }

    /// The block's role, from its first line.
    var role: Role {
        switch lines.first?.trimmingWhitespace() {
        case "// main.swift": return .main
        case "// main.swift, continued": return .mainContinued
        default: return .file
        }
    }

    /// The block's text.
    var text: String { lines.joined(separator: "\n") }

    /// A block that a document does not close.
    struct Unterminated: Error, CustomStringConvertible {
        var document: String
        var fenceLine: Int
        var description: String { "\(document):\(fenceLine): the code block opened here is never closed" }
    }

    /// Every fenced block (```` ``` ```` or `~~~`, indented by up to any amount, as inside lists) of
    /// `text`, in order. O(n) in the text's length.
    static func blocks(in text: String, document: String) throws(Unterminated) -> [MarkdownCodeBlock] {
        var blocks: [MarkdownCodeBlock] = []
        var open: (fence: String, indent: Int, block: MarkdownCodeBlock)?
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (offset, line) in lines.enumerated() {
            let indent = line.prefix { $0 == " " }.count
            let trimmed = String(line.dropFirst(indent))
            if var current = open {
                if trimmed.hasPrefix(current.fence), trimmed.trimmingWhitespace().allSatisfy({ $0 == current.fence.first }) {
                    blocks.append(current.block)
                    open = nil
                } else {
                    let removable = min(current.indent, line.prefix { $0 == " " }.count)
                    current.block.lines.append(String(line.dropFirst(removable)))
                    open = current
                }
                continue
            }
            guard let marker = trimmed.first, marker == "`" || marker == "~" else { continue }
            let fence = String(trimmed.prefix { $0 == marker })
            guard fence.count >= 3 else { continue }
            let info = trimmed.dropFirst(fence.count).trimmingWhitespace()
            let language = info.split(separator: " ").first.map { $0.lowercased() } ?? ""
            open = (fence, indent, MarkdownCodeBlock(document: document, fenceLine: offset + 1, language: language, lines: []))
        }
        if let open { throw Unterminated(document: document, fenceLine: open.block.fenceLine) }
        return blocks
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    func trimmingWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
