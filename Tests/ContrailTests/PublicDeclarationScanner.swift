import Foundation

/// Finds the public declarations of Swift source files and whether each has a doc comment, by
/// reading the text: attributes (`@MainActor`, `@discardableResult`, on their own lines or not),
/// declarations over several lines, members of public types and extensions, requirements of public
/// protocols and cases of public enums. Members of non-public types count as not public; bodies
/// of functions and accessors are skipped.
struct PublicDeclarationScanner {
    /// One public declaration.
    struct Declaration: Equatable, CustomStringConvertible {
        var file: String
        var line: Int
        var text: String
        var isDocumented: Bool
        /// The declared name when it declares a top-level type (class, struct, enum, protocol, actor, typealias).
        var typeName: String?

        var description: String { "\(file):\(line): \(text)" }
    }

    /// What a `{` opened.
    private enum Scope {
        /// A type or extension body; `isPublic` when its members can be public, `implicit` when
        /// they are public without the keyword (protocol requirements, enum cases).
        case type(isPublic: Bool, isProtocol: Bool, isEnum: Bool)
        /// Code: a function, accessor, closure or initializer expression.
        case code
    }

    private static let typeKeywords: Set<String> = ["class", "struct", "enum", "protocol", "actor", "extension", "typealias"]
    private static let declarationKeywords: Set<String> = [
        "func", "var", "let", "init", "subscript", "case", "associatedtype", "class", "struct", "enum", "protocol",
        "actor", "typealias", "extension", "deinit", "macro", "operator", "precedencegroup",
    ]
    private static let modifiers: Set<String> = [
        "public", "open", "package", "internal", "private", "fileprivate", "final", "static", "override", "mutating",
        "nonmutating", "nonisolated", "convenience", "required", "lazy", "dynamic", "indirect", "isolated", "weak",
        "unowned", "optional", "consuming", "borrowing", "distributed", "prefix", "postfix", "infix",
    ]

    /// Names of the types declared non-public anywhere in the scanned sources (their extensions'
    /// members are not public either).
    let nonPublicTypes: Set<String>

    /// A scanner for a module whose sources are `sources` (needed to know which types are public).
    init(sources: [String]) {
        var names: Set<String> = []
        for source in sources {
            for line in source.split(separator: "\n", omittingEmptySubsequences: false) {
                let words = Self.words(Self.code(of: String(line)))
                guard let index = words.firstIndex(where: { Self.typeKeywords.contains($0) && $0 != "extension" }),
                      index + 1 < words.count else { continue }
                let access = words[..<index]
                if !access.contains("public") && !access.contains("open") {
                    names.insert(Self.identifier(words[index + 1]))
                }
            }
        }
        nonPublicTypes = names
    }

    /// The public declarations of one file, in order. O(n) in the file's length.
    func declarations(in source: String, file: String) -> [Declaration] {
        let lines = source.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var result: [Declaration] = []
        var stack: [Scope] = []
        var pendingType: Scope?          // a type header whose `{` has not come yet
        var inMultilineString = false
        var inBlockComment = false
        for (index, raw) in lines.enumerated() {
            var line = raw
            // Multi-line strings and block comments hold no declarations and no braces.
            if inMultilineString {
                if line.contains("\"\"\"") { inMultilineString = false }
                continue
            }
            if inBlockComment {
                guard let end = line.range(of: "*/") else { continue }
                inBlockComment = false
                line = String(line[end.upperBound...])
            }
            if line.components(separatedBy: "\"\"\"").count == 2 {
                inMultilineString = true
                line = line.components(separatedBy: "\"\"\"")[0]
            }
            var code = Self.code(of: line)
            while let start = code.range(of: "/*") {
                guard let end = code.range(of: "*/", range: start.upperBound..<code.endIndex) else {
                    inBlockComment = true
                    code = String(code[..<start.lowerBound])
                    break
                }
                code.removeSubrange(start.lowerBound..<end.upperBound)
            }
            let inCode = stack.contains { if case .code = $0 { true } else { false } }
            var opens: Scope = .code
            if !inCode, pendingType == nil, let declaration = Self.declaration(code) {
                let enclosing = stack.last
                let enclosingPublic: Bool
                var implicit = false
                switch enclosing {
                case .type(let isPublic, let isProtocol, let isEnum)?:
                    enclosingPublic = isPublic
                    implicit = isPublic && (isProtocol || (isEnum && declaration.keyword == "case"))
                case .code?: enclosingPublic = false
                case nil: enclosingPublic = true
                }
                let explicit = declaration.access == "public" || declaration.access == "open"
                var isPublic = enclosingPublic && (explicit || implicit)
                if declaration.keyword == "extension" {
                    let extended = Self.identifier(declaration.name.split(separator: ".").last.map(String.init) ?? "")
                    let isExtensionPublic = declaration.access != "private" && declaration.access != "fileprivate"
                        && declaration.access != "internal" && declaration.access != "package"
                    pendingType = .type(isPublic: isExtensionPublic && !nonPublicTypes.contains(extended), isProtocol: false, isEnum: false)
                    isPublic = false   // an extension is not a declaration of its own
                } else if Self.typeKeywords.contains(declaration.keyword) && declaration.keyword != "typealias" {
                    pendingType = .type(isPublic: isPublic, isProtocol: declaration.keyword == "protocol",
                                        isEnum: declaration.keyword == "enum")
                }
                if isPublic {
                    let isType = Self.typeKeywords.contains(declaration.keyword) && stack.isEmpty
                    result.append(Declaration(file: file, line: index + 1, text: raw.trimmingCharacters(in: .whitespaces),
                                              isDocumented: Self.isDocumented(lines, before: index),
                                              typeName: isType ? Self.identifier(declaration.name) : nil))
                }
            }
            for character in code {
                if character == "{" {
                    if let type = pendingType {
                        opens = type
                        pendingType = nil
                    } else {
                        opens = .code
                    }
                    stack.append(opens)
                } else if character == "}" {
                    _ = stack.popLast()
                }
            }
        }
        return result
    }

    // MARK: - Lines

    /// The declaration a line starts, after attributes and modifiers: its access keyword, its
    /// keyword and the word after it.
    private static func declaration(_ code: String) -> (access: String, keyword: String, name: String)? {
        var words = self.words(code)[...]
        var access = ""
        while let first = words.first {
            let bare = first.split(separator: "(").first.map(String.init) ?? first
            let next = words.dropFirst().first ?? ""
            if first.hasPrefix("@") {
                // An attribute: `@MainActor`, `@available(...)` (its arguments are one word here).
            } else if ["public", "open", "package", "internal", "private", "fileprivate"].contains(bare) {
                if !first.contains("(") { access = bare }   // `private(set)` is not the declaration's access
            } else if bare == "class" {
                guard ["func", "var", "let", "subscript"].contains(next) else { break }   // `class func`
            } else if !modifiers.contains(bare) {
                break
            }
            words = words.dropFirst()
        }
        guard let keyword = words.first, declarationKeywords.contains(keyword) else { return nil }
        let name = words.dropFirst().first ?? ""
        return (access, keyword, name)
    }

    /// Whether the lines above `index` (past attributes) end in a doc comment.
    private static func isDocumented(_ lines: [String], before index: Int) -> Bool {
        var cursor = index - 1
        while cursor >= 0 {
            let line = lines[cursor].trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("@") || line.hasPrefix("#if") || line.hasPrefix("#endif") {
                cursor -= 1
                continue
            }
            return line.hasPrefix("///") || line.hasSuffix("*/")
        }
        return false
    }

    /// The line without its `//` comment and with string literals (raw ones too) emptied.
    private static func code(of line: String) -> String {
        let characters = Array(line)
        var result = ""
        var index = 0
        while index < characters.count {
            let character = characters[index]
            if character == "/" && index + 1 < characters.count && characters[index + 1] == "/" { break }
            if character == "\"" {
                let raw = index > 0 && characters[index - 1] == "#"
                index += 1
                while index < characters.count {
                    if !raw && characters[index] == "\\" {
                        index += 2
                        continue
                    }
                    if characters[index] == "\"" && (!raw || (index + 1 < characters.count && characters[index + 1] == "#")) { break }
                    index += 1
                }
                result += "\"\""
                index += raw ? 2 : 1
                continue
            }
            result.append(character)
            index += 1
        }
        return result
    }

    /// The words of a line of code, split at spaces and at `:`, `<`, `{`, `(` after a name.
    private static func words(_ code: String) -> [String] {
        var separated = ""
        var depth = 0
        for character in code {
            if character == "(" { depth += 1 }
            if character == ")" { depth = max(0, depth - 1) }
            if depth > 0 && character == " " { continue }   // keep `private(set)` and `@available(...)` whole
            separated.append(character == ":" || character == "{" || character == "<" || character == "," || character == "=" ? " " : character)
        }
        return separated.split(separator: " ").map(String.init)
    }

    /// The identifier at the start of `word` (`Foo<T>` → `Foo`, `init(x:)` → `init`).
    private static func identifier(_ word: String) -> String {
        String(word.prefix { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." })
    }
}
