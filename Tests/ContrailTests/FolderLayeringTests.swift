import Foundation
import Testing

/// The folders inside `Sources/Contrail` point one way, as the modules do:
///
///     Sync → Persistence → Scope (with Procedures) → Query, Presence, Values → Model (with Observation)
///
/// - **Model and Observation know neither Scope nor the wire.** A model object belongs to a
///   `ModelObjectHost` (the base class `Scope` overrides), which it reports its sets, attaches,
///   detaches and refused links to; it never names `Scope`, `ChangeSet` or a fragment. What the
///   tree needs of a property's value is `ModelValue`; Model files neither import `ContrailWire`
///   nor name its types.
/// - **Query knows Model and Observation only.** A live query keeps a host's objects in order;
///   the scope owns the queries' hub and reports its members to it, so Query never names `Scope`.
/// - **Values is the one place values meet the wire.** `PropertyValue` (refining `ModelValue`
///   with `wireValue()` and `decode`), its conformances, the `@Property` wrapper that requires it,
///   and the type-erased coders (`PropertyCoding`) the layers above read and write wire values
///   through. It knows Model, nothing above.
/// - **Scope knows Values and Model, not Persistence or Sync.** A scope records changes into
///   change sets and applies fragments; whether another layer settles its change sets is a
///   neutral flag (`awaitsSettlement`) that Sync sets. Procedures (constraints checked on a
///   flush) sit with it.
/// - **Presence knows Model and Observation only.** A scope's ephemeral peers and value
///   (`ScopePresence`): the scope holds it, the sync layer carries it, it records nothing.
/// - **Persistence knows Scope and below, not Sync.** A fragment log restores a scope and records
///   its change sets; it does not know whether anything syncs them.
/// - **Sync knows everything below it**, and nothing below knows Sync.
///
/// The check reads every source file, collects the top-level type names each folder declares,
/// strips comments and string literals, and fails when a file names a type of a folder its own
/// folder may not know, or a `ContrailWire` type in a folder that may not know the wire.
@Suite("Folder layering inside Contrail")
struct FolderLayeringTests {
    /// The folders each folder's files may name types of (its own included).
    static let allowed: [String: Set<String>] = [
        "Model": ["Model", "Observation"],
        "Observation": ["Model", "Observation"],
        "Query": ["Query", "Model", "Observation"],
        "Values": ["Values", "Model", "Observation"],
        "Presence": ["Presence", "Model", "Observation"],
        "Scope": ["Scope", "Presence", "Procedures", "Query", "Values", "Model", "Observation"],
        "Procedures": ["Scope", "Presence", "Procedures", "Query", "Values", "Model", "Observation"],
        "Persistence": ["Persistence", "Scope", "Presence", "Procedures", "Query", "Values", "Model", "Observation"],
        "Sync": ["Sync", "Persistence", "Scope", "Presence", "Procedures", "Query", "Values", "Model", "Observation"],
    ]

    /// Folders whose files may not name `ContrailWire` types nor import it.
    static let wireFree: Set<String> = ["Model", "Observation"]

    static var sourcesRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
    }

    /// `source` without comments and string literals (their text is replaced by spaces).
    static func code(_ source: String) -> String {
        let chars = Array(source.unicodeScalars)
        var out = String.UnicodeScalarView()
        var i = 0
        func at(_ k: Int) -> Unicode.Scalar? { k < chars.count ? chars[k] : nil }
        while i < chars.count {
            let c = chars[i]
            if c == "/", at(i + 1) == "/" {
                while i < chars.count, chars[i] != "\n" { i += 1 }
            } else if c == "/", at(i + 1) == "*" {
                var depth = 0
                repeat {
                    if chars[i] == "/", at(i + 1) == "*" { depth += 1; i += 2 } else if chars[i] == "*", at(i + 1) == "/" { depth -= 1; i += 2 } else { i += 1 }
                } while depth > 0 && i < chars.count
                out.append(" ")
            } else if c == "\"" {
                let triple = at(i + 1) == "\"" && at(i + 2) == "\""
                i += triple ? 3 : 1
                while i < chars.count {
                    if chars[i] == "\\" { i += 2; continue }
                    if triple, chars[i] == "\"", at(i + 1) == "\"", at(i + 2) == "\"" { i += 3; break }
                    if !triple, chars[i] == "\"" || chars[i] == "\n" { i += 1; break }
                    i += 1
                }
                out.append(" ")
            } else {
                out.append(c)
                i += 1
            }
        }
        return String(out)
    }

    /// The identifiers in `code`.
    static func identifiers(in code: String) -> Set<String> {
        var result: Set<String> = []
        var current = ""
        for scalar in code.unicodeScalars {
            if scalar == "_" || CharacterSet.alphanumerics.contains(scalar) {
                current.unicodeScalars.append(scalar)
            } else {
                if let first = current.unicodeScalars.first, !CharacterSet.decimalDigits.contains(first) { result.insert(current) }
                current = ""
            }
        }
        if !current.isEmpty { result.insert(current) }
        return result
    }

    /// The types `code` declares at the top level (brace depth 0).
    static func topLevelTypes(in code: String) -> Set<String> {
        var result: Set<String> = []
        var depth = 0
        var line = ""
        func scan(_ text: String) {
            let words = text.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") }).map(String.init)
            for (index, word) in words.enumerated().dropLast()
            where ["class", "struct", "enum", "protocol", "actor", "typealias"].contains(word) {
                result.insert(words[index + 1])
            }
        }
        for character in code {
            if character == "{" {
                if depth == 0 { scan(line) }
                depth += 1
                line = ""
            } else if character == "}" {
                depth -= 1
                line = ""
            } else if character == "\n" {
                if depth == 0 { scan(line) }
                line = ""
            } else {
                line.append(character)
            }
        }
        if depth == 0 { scan(line) }
        return result
    }

    /// The Swift files under `directory`, as (path relative to it, code without comments and strings).
    static func files(under directory: URL) throws -> [(path: String, code: String)] {
        guard let enumerator = FileManager.default.enumerator(atPath: directory.path) else { return [] }
        var result: [(String, String)] = []
        for case let path as String in enumerator where path.hasSuffix(".swift") {
            let source = try String(contentsOf: directory.appendingPathComponent(path), encoding: .utf8)
            result.append((path, code(source)))
        }
        return result.sorted { $0.0 < $1.0 }
    }

    /// Every forbidden use under `sourcesRoot` (which holds `Contrail/<Folder>/` and `ContrailWire/`),
    /// as "Folder/File.swift: names Type (Folder)".
    static func violations(sourcesRoot: URL) throws -> [String] {
        let contrail = sourcesRoot.appendingPathComponent("Contrail")
        let all = try files(under: contrail)
        var declared: [String: String] = [:]   // type → folder
        for file in all {
            guard let folder = file.path.split(separator: "/").first.map(String.init), allowed[folder] != nil else { continue }
            for type in topLevelTypes(in: file.code) { declared[type] = folder }
        }
        var wireTypes: Set<String> = []
        for file in try files(under: sourcesRoot.appendingPathComponent("ContrailWire")) {
            wireTypes.formUnion(topLevelTypes(in: file.code))
        }
        wireTypes.subtract(declared.keys)
        var found: [String] = []
        for file in all {
            guard let folder = file.path.split(separator: "/").first.map(String.init), let permitted = allowed[folder] else { continue }
            let names = identifiers(in: file.code)
            for name in names.sorted() {
                if let owner = declared[name], !permitted.contains(owner) {
                    found.append("\(file.path): names \(name) (\(owner))")
                }
                if wireFree.contains(folder), wireTypes.contains(name) {
                    found.append("\(file.path): names \(name) (ContrailWire)")
                }
            }
            if wireFree.contains(folder), file.code.range(of: #"import\s+ContrailWire\b"#, options: .regularExpression) != nil {
                found.append("\(file.path): imports ContrailWire")
            }
        }
        return found
    }

    @Test("no folder names a type of a folder above it, and Model does not speak the wire")
    func foldersPointOneWay() throws {
        let root = Self.sourcesRoot
        // Positive control: the checker sees the folders and types it is meant to check.
        let folders = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Contrail").path)
        #expect(Set(folders).isSuperset(of: Self.allowed.keys))
        let scopeTypes = try Self.files(under: root.appendingPathComponent("Contrail/Scope")).reduce(into: Set<String>()) {
            $0.formUnion(Self.topLevelTypes(in: $1.code))
        }
        #expect(scopeTypes.isSuperset(of: ["Scope", "ChangeSet"]))
        let violations = try Self.violations(sourcesRoot: root)
        #expect(violations.isEmpty, "forbidden uses:\n\(violations.joined(separator: "\n"))")
    }

    @Test("a file naming a type of a higher folder, or a wire type in Model, is reported")
    func violationsAreReported() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("folders-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        func write(_ path: String, _ text: String) throws {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        try write("ContrailWire/Wire.swift", "public struct WireThing {}\n")
        try write("Contrail/Scope/Holder.swift", "final class Holder {\n    struct Nested {}\n}\n")
        try write("Contrail/Sync/Syncer.swift", "final class Syncer { let holder: Holder? = nil }\n")
        try write("Contrail/Model/Bad.swift", "final class Bad {\n    weak var holder: Holder?\n    var wire: WireThing?\n}\n")
        try write("Contrail/Model/Quiet.swift", "/// Holder and WireThing, in words only.\nlet text = \"Holder \\(1) WireThing\"\n/* Holder */ struct Quiet { let nested = 0 }\n")
        try write("Contrail/Model/Importer.swift", "import ContrailWire\n")
        try write("Contrail/Scope/Upward.swift", "func sync(_ syncer: Syncer) {}\n")
        let violations = try Self.violations(sourcesRoot: root)
        #expect(violations == [
            "Model/Bad.swift: names Holder (Scope)",
            "Model/Bad.swift: names WireThing (ContrailWire)",
            "Model/Importer.swift: imports ContrailWire",
            "Scope/Upward.swift: names Syncer (Sync)",
        ])
    }
}
