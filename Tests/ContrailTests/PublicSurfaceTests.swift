import Contrail
import Foundation
import Testing

/// The public surface of the library modules: every public declaration is documented, and no
/// public type shares its name with a type of the standard library, Foundation, Dispatch,
/// Observation or SwiftUI. Both read the sources, so they cannot go stale.
@Suite struct PublicSurfaceTests {
    /// The library modules (products apps import).
    static let libraryModules = ["Contrail", "ContrailWebSocket", "ContrailServer", "ContrailNATS"]

    static let sourcesDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    /// Every public declaration of `module`'s sources.
    static func publicDeclarations(of module: String) throws -> [PublicDeclarationScanner.Declaration] {
        let directory = sourcesDirectory.appendingPathComponent(module)
        let enumerator = try #require(FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil))
        var files: [(String, String)] = []
        for case let url as URL in enumerator where url.pathExtension == "swift" {
            files.append((url.path.replacingOccurrences(of: sourcesDirectory.path + "/", with: ""), try String(contentsOf: url, encoding: .utf8)))
        }
        #expect(!files.isEmpty, "no sources found for \(module) in \(directory.path)")
        let scanner = PublicDeclarationScanner(sources: files.map(\.1))
        return files.sorted { $0.0 < $1.0 }.flatMap { scanner.declarations(in: $0.1, file: $0.0) }
    }

    @Test(arguments: libraryModules)
    func everyPublicDeclarationHasADocComment(module: String) throws {
        let declarations = try Self.publicDeclarations(of: module)
        #expect(declarations.count > 10)   // the scanner found the module's API at all
        let undocumented = declarations.filter { !$0.isDocumented }
        let list = undocumented.map(\.description).joined(separator: "\n")
        #expect(undocumented.isEmpty, "\(undocumented.count) undocumented public declarations in \(module):\n\(list)")
    }

    @Test func noPublicTypeNameCollidesWithAFrameworkType() throws {
        let frameworks = try FrameworkTypeNames.all()
        #expect(frameworks.contains("String") && frameworks.contains("Color") && frameworks.contains("NotificationQueue"))
        var collisions: [String] = []
        for module in Self.libraryModules {
            for declaration in try Self.publicDeclarations(of: module) {
                guard let name = declaration.typeName, frameworks.contains(name) else { continue }
                collisions.append("\(declaration) (\(name))")
            }
        }
        let list = collisions.joined(separator: "\n")
        #expect(collisions.isEmpty, "public types named like a framework type:\n\(list)")
    }

    // MARK: - The scanner itself

    static let sample = """
        import Foundation

        /// Documented.
        public struct Documented {
            /// Nested: not a top-level type name.
            public enum State { /** Documented too. */ case one }
            /// Documented member.
            @MainActor
            @discardableResult
            public func member() -> Int { 1 }
            public var undocumentedMember: Int {
                public struct NotADeclaration {}
                return 2
            }
            public static func multiLine(
                a: Int
            ) {}
            internal func notPublic() {}
        }

        public final class Undocumented {}

        struct Hidden {
            public func notReallyPublic() {}
        }

        extension Hidden {
            public func alsoNotPublic() {}
        }

        extension String {
            /// Documented.
            public func documentedOnString() {}
            public func undocumentedOnString() {}
        }

        /// A protocol.
        public protocol Requirements {
            func undocumentedRequirement()
            /// Documented.
            var documentedRequirement: Int { get }
        }

        /// An enum.
        public enum Choice {
            case undocumentedCase
            /// Documented.
            case documentedCase
            var text: String {
                switch self {
                case .undocumentedCase: "{"
                case .documentedCase: #"}"#
                }
            }
        }
        """

    @Test func scannerFindsUndocumentedPublicDeclarationsOnly() {
        let scanner = PublicDeclarationScanner(sources: [Self.sample])
        let found = scanner.declarations(in: Self.sample, file: "Sample.swift")
        let undocumented = found.filter { !$0.isDocumented }.map(\.text)
        #expect(undocumented == [
            "public var undocumentedMember: Int {",
            "public static func multiLine(",
            "public final class Undocumented {}",
            "public func undocumentedOnString() {}",
            "func undocumentedRequirement()",
            "case undocumentedCase",
        ])
        let documented = found.filter(\.isDocumented).map(\.text)
        #expect(documented == [
            "public struct Documented {",
            "public enum State { /** Documented too. */ case one }",
            "public func member() -> Int { 1 }",
            "public func documentedOnString() {}",
            "public protocol Requirements {",
            "var documentedRequirement: Int { get }",
            "public enum Choice {",
            "case documentedCase",
        ])
        #expect(found.compactMap(\.typeName) == ["Documented", "Undocumented", "Requirements", "Choice"])
    }
}

/// Values are not actors: plain property values encode and decode off the main actor.
@Suite struct NonisolatedValueTests {
    enum Mood: String, PropertyValue, Sendable { case calm, busy }

    @Test func plainValuesEncodeAndDecodeOffTheMainActor() async throws {
        let encoded = await Task.detached { ("text".wireValue(), Mood.busy.wireValue(), 3.wireValue()) }.value
        #expect(encoded.0 == .string("text") && encoded.1 == .string("busy") && encoded.2 == .int(3))
        let decoded = await Task.detached { try? Mood.decode(wire: .string("calm"), property: "mood", resolver: { _ in nil }) }.value
        #expect(decoded == .calm)
        let rejected = await Task.detached { () -> ModelError? in
            do throws(ModelError) {
                _ = try Mood.decode(wire: .int(1), property: "mood", resolver: { _ in nil })
                return nil
            } catch {
                return error
            }
        }.value
        #expect(rejected != nil)
    }
}
