import Foundation
import Testing

/// The package's layers point one way (the README's design section gives the reason for each
/// arrow). SwiftPM puts every module of the package on the search path, so an `import` of a module
/// the manifest does not list can still compile; this test reads every source file and fails on an
/// import its layer may not make.
@Suite("Module layering")
struct ModuleLayeringTests {
    /// The package's own modules each layer may import. A layer missing here may import anything.
    static let allowed: [String: Set<String>] = [
        "CContrailSystem": [],
        "ContrailSupport": ["CContrailSystem"],
        "ContrailTLS": ["ContrailSupport"],
        "ContrailWebSocket": ["ContrailSupport", "ContrailTLS"],
        "ContrailNATS": ["ContrailSupport", "ContrailTLS"],
        "ContrailWire": ["ContrailSupport", "CContrailSystem"],
        "ContrailTransport": ["ContrailWire", "ContrailWebSocket", "ContrailSupport", "ContrailTLS"],
        "Contrail": ["ContrailTransport", "ContrailWire", "ContrailSupport", "CContrailSystem"],
        "ContrailServer": ["ContrailTransport", "ContrailWire", "ContrailWebSocket", "ContrailNATS", "ContrailSupport", "ContrailTLS"],
        "ContrailBenchModels": ["Contrail"],
    ]

    static let packageModules: Set<String> = [
        "CContrailSystem", "ContrailSupport", "ContrailTLS", "ContrailWebSocket", "ContrailNATS", "ContrailWire",
        "ContrailTransport", "Contrail", "ContrailServer", "ContrailBenchModels", "ContrailFuzz",
        "ContrailTestSupport",
    ]

    /// The package modules a Swift source imports, in any form (`@testable`, `@_exported`, …).
    static func importedModules(in source: String) -> Set<String> {
        var modules: Set<String> = []
        for line in source.split(separator: "\n", omittingEmptySubsequences: true) {
            var words = line.split(separator: " ").map(String.init)
            while let first = words.first, first.hasPrefix("@") { words.removeFirst() }
            guard words.count >= 2, words[0] == "import" else { continue }
            // `import struct Foo.Bar` names the module after the kind.
            let name = words.count >= 3 && ["struct", "class", "enum", "protocol", "func", "var", "let", "typealias"]
                .contains(words[1]) ? words[2] : words[1]
            let module = String(name.split(separator: ".").first ?? "")
            if packageModules.contains(module) { modules.insert(module) }
        }
        return modules
    }

    /// Every forbidden import under `Sources/`, as "Layer/path: imports Module".
    static func violations(sourcesRoot: URL) throws -> [String] {
        var found: [String] = []
        let fileManager = FileManager.default
        for layer in try fileManager.contentsOfDirectory(atPath: sourcesRoot.path).sorted() {
            guard let permitted = allowed[layer] else { continue }
            let layerRoot = sourcesRoot.appendingPathComponent(layer)
            guard let files = fileManager.enumerator(atPath: layerRoot.path) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") {
                let source = try String(contentsOf: layerRoot.appendingPathComponent(file), encoding: .utf8)
                for module in importedModules(in: source).subtracting(permitted).subtracting([layer]).sorted() {
                    found.append("\(layer)/\(file): imports \(module)")
                }
            }
        }
        return found
    }

    static var sourcesRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
    }

    @Test("no layer imports a module above it or beside it")
    func noForbiddenImports() throws {
        // Positive control: the checker sees the layers it is meant to check.
        let layers = try FileManager.default.contentsOfDirectory(atPath: Self.sourcesRoot.path)
        #expect(Set(layers).isSuperset(of: ["ContrailSupport", "ContrailWire", "ContrailServer", "Contrail"]))
        let violations = try Self.violations(sourcesRoot: Self.sourcesRoot)
        #expect(violations.isEmpty, "forbidden imports:\n\(violations.joined(separator: "\n"))")
    }

    @Test("a forbidden import in a layer is reported")
    func forbiddenImportIsReported() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("layering-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let server = root.appendingPathComponent("ContrailServer/Scopes")
        let wire = root.appendingPathComponent("ContrailWire")
        try FileManager.default.createDirectory(at: server, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: wire, withIntermediateDirectories: true)
        try "import Foundation\n@testable import Contrail\nimport ContrailWire\n"
            .write(to: server.appendingPathComponent("Bad.swift"), atomically: true, encoding: .utf8)
        try "@_exported import ContrailWebSocket\n"
            .write(to: wire.appendingPathComponent("Leak.swift"), atomically: true, encoding: .utf8)
        try "import ContrailSupport\n"
            .write(to: wire.appendingPathComponent("Fine.swift"), atomically: true, encoding: .utf8)
        let violations = try Self.violations(sourcesRoot: root)
        #expect(violations == ["ContrailServer/Scopes/Bad.swift: imports Contrail",
                               "ContrailWire/Leak.swift: imports ContrailWebSocket"])
    }
}
