import Contrail
import Foundation
import Testing

/// The public surface of the library modules. `swift format lint` in `.ci/run` checks that every
/// declaration marked `public` has a doc comment (rule `AllPublicDeclarationsHaveDocumentation`);
/// these tests check what that rule does not see: cases of public enums, requirements of public
/// protocols and `open` declarations are documented too, and no public type shares its name with a
/// type of the standard library, Foundation, Dispatch, Observation or SwiftUI. They read the sources
/// (laid out in the house style: four-space indentation, a body closed by `}` at its header's
/// indentation), so they cannot go stale.
@Suite struct PublicSurfaceTests {
    /// The library modules (products apps import).
    static let libraryModules = ["Contrail", "ContrailWebSocket", "ContrailServer", "ContrailNATS"]

    static let packageDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let sourcesDirectory = packageDirectory.appendingPathComponent("Sources")

    /// A declaration found in a source, and whether a doc comment precedes it.
    struct Declaration: CustomStringConvertible {
        var file: String
        var line: Int
        var text: String
        var isDocumented: Bool

        var description: String { "\(file):\(line): \(text)" }
    }

    /// The Swift sources of `module` as (path under `Sources`, text), sorted by path.
    static func sources(of module: String) throws -> [(path: String, text: String)] {
        let directory = sourcesDirectory.appendingPathComponent(module)
        let enumerator = try #require(FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil))
        var files: [(path: String, text: String)] = []
        for case let url as URL in enumerator where url.pathExtension == "swift" {
            let path = url.path.replacingOccurrences(of: sourcesDirectory.path + "/", with: "")
            files.append((path, try String(contentsOf: url, encoding: .utf8)))
        }
        #expect(!files.isEmpty, "no sources found for \(module) in \(directory.path)")
        return files.sorted { $0.path < $1.path }
    }

    /// A public enum or protocol whose body opens at the end of the header line.
    static var publicContainer: Regex<(Substring, Substring, Substring)> {
        /^( *)(?:@\S+ +)*(?:public|open) +(?:indirect +)*(enum|protocol) +[^{]*\{ *(?:\/\/.*)?$/
    }
    /// A declaration marked `open`.
    static var openDeclaration: Regex<Substring> { /^ *(?:@\S+ +)*open +/ }
    /// A top-level public type: its name.
    static var publicType: Regex<(Substring, Substring)> {
        /^(?:@\S+ +)*(?:public|open) +(?:final +|indirect +)*(?:class|struct|enum|protocol|actor|typealias) +(\w+)/
    }

    /// The declarations of `text` that are public without saying `public`: the cases of public enums
    /// and the requirements of public protocols (the members one level inside their bodies), and
    /// every `open` declaration. O(n) in the text's length.
    static func publicWithoutTheKeyword(in text: String, file: String) -> [Declaration] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var found: [Declaration] = []
        func record(_ index: Int) {
            found.append(Declaration(file: file, line: index + 1, text: lines[index].trimmingCharacters(in: .whitespaces),
                                     isDocumented: isDocumented(lines, before: index)))
        }
        for (index, line) in lines.enumerated() {
            if line.contains(openDeclaration) { record(index) }
            guard let header = line.wholeMatch(of: publicContainer) else { continue }
            let memberIndent = String(repeating: " ", count: header.1.count + 4)
            let end = String(header.1) + "}"
            let isEnum = header.2 == "enum"
            for member in (index + 1)..<lines.count {
                let memberLine = lines[member]
                if memberLine.hasPrefix(end) { break }
                guard memberLine.hasPrefix(memberIndent), memberLine.dropFirst(memberIndent.count).first != " " else { continue }
                let code = memberLine.trimmingCharacters(in: .whitespaces)
                if code.isEmpty || code.hasPrefix("//") || code.hasPrefix("@") || code.hasPrefix("#") || code.first.map(")]}.".contains) == true {
                    continue
                }
                if isEnum ? code.hasPrefix("case ") : !code.hasPrefix("public ") { record(member) }
            }
        }
        return found
    }

    /// Whether the lines above `index` (past attributes) end in a doc comment.
    static func isDocumented(_ lines: [String], before index: Int) -> Bool {
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

    /// The names of the public types `text` declares at top level.
    static func publicTypeNames(in text: String) -> [String] {
        text.split(separator: "\n").compactMap { line in line.prefixMatch(of: publicType).map { String($0.1) } }
    }

    @Test func theLintDocumentsEveryPublicDeclaration() throws {
        let configuration = try Data(contentsOf: Self.packageDirectory.appendingPathComponent(".ci/swift-format.json"))
        let rules = try #require(try JSONSerialization.jsonObject(with: configuration) as? [String: Any])["rules"]
        #expect((rules as? [String: Bool])?["AllPublicDeclarationsHaveDocumentation"] == true)
        let run = try String(contentsOf: Self.packageDirectory.appendingPathComponent(".ci/run"), encoding: .utf8)
        #expect(run.contains("swift format lint") && run.contains("--configuration .ci/swift-format.json"))
    }

    @Test(arguments: libraryModules)
    func casesRequirementsAndOpenDeclarationsHaveADocComment(module: String) throws {
        let declarations = try Self.sources(of: module).flatMap { Self.publicWithoutTheKeyword(in: $0.text, file: $0.path) }
        let undocumented = declarations.filter { !$0.isDocumented }
        let list = undocumented.map(\.description).joined(separator: "\n")
        #expect(undocumented.isEmpty, "\(undocumented.count) undocumented public declarations in \(module):\n\(list)")
    }

    @Test func theLibraryModulesHaveCasesRequirementsAndOpenDeclarations() throws {
        // Positive control: the reader finds the enum cases, requirements and `open` members it is meant to check.
        var texts: [String] = []
        for module in Self.libraryModules {
            for file in try Self.sources(of: module) {
                texts += Self.publicWithoutTheKeyword(in: file.text, file: file.path).map(\.text)
            }
        }
        #expect(texts.count > 50)
        #expect(texts.contains("open class ModelObject: @MainActor Identifiable, Observable {"))
        #expect(texts.contains { $0.hasPrefix("case protocolViolation(") })
    }

    @Test func noPublicTypeNameCollidesWithAFrameworkType() throws {
        let frameworks = try FrameworkTypeNames.all()
        #expect(frameworks.contains("String") && frameworks.contains("Color") && frameworks.contains("NotificationQueue"))
        var names: [String] = []
        for module in Self.libraryModules {
            for file in try Self.sources(of: module) { names += Self.publicTypeNames(in: file.text) }
        }
        #expect(names.contains("Scope") && names.contains("WebSocketConnection") && names.count > 40)
        let collisions = names.filter { frameworks.contains($0) }
        #expect(collisions.isEmpty, "public types named like a framework type: \(collisions)")
    }

    // MARK: - The reader itself

    static let sample = """
        import Foundation

        /// Documented.
        public struct Documented {
            /// Nested.
            public enum State {
                /// Documented.
                case one
                case undocumentedNested
            }
            public func member() -> Int { 1 }
        }

        /// A protocol.
        public protocol Requirements {
            func undocumentedRequirement()
            /// Documented.
            @MainActor
            var documentedRequirement: Int { get }
        }

        /// An enum.
        public enum Choice: String, Sendable {
            case undocumentedCase
            /// Documented.
            case documentedCase
            /// Not a case.
            public var text: String {
                switch self {
                case .undocumentedCase: "{"
                case .documentedCase: #"}"#
                }
            }
        }

        open class Open {
            /// Documented.
            open func member() {}
        }

        @MainActor public final class Attributed {}
        enum Internal { case notPublic }
        """

    @Test func theReaderFindsUndocumentedCasesRequirementsAndOpenDeclarations() {
        let found = Self.publicWithoutTheKeyword(in: Self.sample, file: "Sample.swift")
        #expect(found.filter { !$0.isDocumented }.map(\.text) == [
            "case undocumentedNested", "func undocumentedRequirement()", "case undocumentedCase", "open class Open {",
        ])
        #expect(found.filter(\.isDocumented).map(\.text) == [
            "case one", "var documentedRequirement: Int { get }", "case documentedCase", "open func member() {}",
        ])
        #expect(Self.publicTypeNames(in: Self.sample) == ["Documented", "Requirements", "Choice", "Open", "Attributed"])
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
