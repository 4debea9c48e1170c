/// The scopes a session may use: scope names or patterns mapped to an access level. In a pattern,
/// `*` stands for any run of characters (none included): `"board-*"`, `"*"`, `"team/*/notes"`.
/// When several entries match a scope, the highest access wins; none matching: no access.
///
/// ```swift
/// let grants: ScopeGrants = ["board-17": .read, "notes-alice": .write, "public.*": .read]
/// ```
public struct ScopeGrants: Sendable, Equatable, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// The entries as given: name or pattern → access.
    public let entries: [String: ScopeAccess]
    /// The entries without `*`, looked up directly.
    private let exact: [String: ScopeAccess]
    /// The entries with `*`, as UTF-8 bytes, matched one by one.
    private let patterns: [(pattern: [UInt8], access: ScopeAccess)]

    /// Every scope, writable.
    public static let everything: ScopeGrants = ["*": .write]
    /// No scope at all.
    public static let nothing = ScopeGrants([:])

    /// Grants from name or pattern → access.
    public init(_ entries: [String: ScopeAccess]) {
        self.entries = entries
        exact = entries.filter { !$0.key.contains("*") }
        patterns = entries.filter { $0.key.contains("*") }.map { (Array($0.key.utf8), $0.value) }
            .sorted { $0.access > $1.access }
    }

    /// Grants from dictionary literal entries; a repeated key keeps the higher access.
    public init(dictionaryLiteral elements: (String, ScopeAccess)...) {
        self.init(Dictionary(elements, uniquingKeysWith: max))
    }

    /// The highest access any entry gives to `scope`; nil for none. O(entries × name length) at
    /// worst; a scope named exactly with `write` is one dictionary lookup.
    public func access(to scope: String) -> ScopeAccess? {
        var best = exact[scope]
        if best == .write { return best }
        if patterns.isEmpty { return best }
        let name = Array(scope.utf8)
        for entry in patterns where best.map({ entry.access > $0 }) ?? true {
            if Self.matches(entry.pattern, name) {
                best = entry.access
                if best == .write { return best }
            }
        }
        return best
    }

    /// Whether the grants allow `access` (or more) to `scope`.
    public func allow(_ access: ScopeAccess, _ scope: String) -> Bool {
        guard let granted = self.access(to: scope) else { return false }
        return granted >= access
    }

    /// The entries sorted by name, as `name: access` pairs.
    public var description: String {
        entries.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
    }

    /// Equal when the entries are.
    public static func == (lhs: ScopeGrants, rhs: ScopeGrants) -> Bool { lhs.entries == rhs.entries }

    /// Glob matching with `*` only (iterative, backtracking to the last `*`): O(pattern × name) at worst.
    static func matches(_ pattern: [UInt8], _ name: [UInt8]) -> Bool {
        let star = UInt8(ascii: "*")
        var p = 0
        var n = 0
        var lastStar: Int?
        var resume = 0
        while n < name.count {
            if p < pattern.count, pattern[p] == star {
                lastStar = p
                resume = n
                p += 1
            } else if p < pattern.count, pattern[p] == name[n] {
                p += 1
                n += 1
            } else if let star = lastStar {
                p = star + 1
                resume += 1
                n = resume
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == star { p += 1 }
        return p == pattern.count
    }
}
