import Foundation
import Testing

/// Every ```` ```swift ```` block of the README and of the DocC catalog compiles, as written.
///
/// The convention (say it in a block's first line, where a reader sees it too):
/// - Each document is one module, and each Swift block one file of it: declarations in one block
///   (the Quick start's `Shape` and `Canvas`) are visible in the document's other blocks. Such a file
///   holds declarations only (types, functions, extensions).
/// - A block whose first line is `// main.swift` is the document's top-level code, as pasted into an
///   executable's `main.swift` (one per document). Blocks whose first line is
///   `// main.swift, continued` are appended to it, in document order.
/// - Code that is not Swift is marked with its language (```` ```sh ````, ```` ```text ````,
///   ```` ```json ````, ```` ```js ````); a fence without a language fails the test, so Swift cannot
///   hide from it. Code meant for Apple platforms only sits in `#if canImport(SwiftUI)`.
///
/// Blocks are type-checked with the `swiftc` that built the package (`-typecheck -swift-version 6`,
/// `-I` the build's `Modules`), one compiler run per document, documents in parallel. A failure
/// names the document, the line and the compiler's message. A missing compiler or build fails, never
/// skips: CI has the same toolchain.
@Suite struct DocumentationSnippetTests {
    /// The repository root: three levels above this file.
    static let repository = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// README.md and every article of the catalog, relative to the repository.
    static let documents: [String] = {
        let catalog = "Sources/Contrail/Contrail.docc"
        let articles = ((try? FileManager.default.contentsOfDirectory(atPath: repository.appending(path: catalog).path)) ?? [])
            .filter { $0.hasSuffix(".md") }
            .sorted()
            .map { "\(catalog)/\($0)" }
        return ["README.md"] + articles
    }()

    @Test func theDocumentsAreFound() {
        #expect(Self.documents.contains("README.md"))
        for article in ["Contrail", "Protocol", "Architecture", "Convergence", "Measurements"] {
            #expect(Self.documents.contains("Sources/Contrail/Contrail.docc/\(article).md"), "missing article \(article).md")
        }
    }

    /// The README's Quick start is what a newcomer pastes into a `main.swift`: its first Swift block
    /// is the README's top-level code, so the compile check above runs it as one.
    @Test func theQuickStartIsTopLevelCode() throws {
        let text = try String(contentsOf: Self.repository.appending(path: "README.md"), encoding: .utf8)
        let blocks = try MarkdownCodeBlock.blocks(in: text, document: "README.md").filter(\.isSwift)
        let quickStart = try #require(text.range(of: "## Quick start")).lowerBound
        let line = text[..<quickStart].split(separator: "\n", omittingEmptySubsequences: false).count
        let first = try #require(blocks.first { $0.fenceLine > line })
        #expect(first.role == .main, "the first Swift block after the Quick start heading (line \(first.fenceLine)) starts with // main.swift")
    }

    @Test(arguments: documents)
    func everySwiftBlockCompiles(_ document: String) async throws {
        let text = try String(contentsOf: Self.repository.appending(path: document), encoding: .utf8)
        let blocks = try MarkdownCodeBlock.blocks(in: text, document: document)
        let unmarked = blocks.filter { $0.language.isEmpty }
        for block in unmarked {
            Issue.record("\(document):\(block.fenceLine): a code block without a language (```swift, ```sh, ```text, …)")
        }
        let compiler = try SnippetCompiler.locate()
        let failures = try await compiler.check(blocks, moduleName: Self.moduleName(document))
        for failure in failures { Issue.record(Comment(rawValue: failure)) }
    }

    /// Negative control: a broken block is reported with its document, line and the compiler's
    /// message (here the README's old Quick start mistake: an observer `self` at top level), while the
    /// good blocks beside it pass; an unmarked fence and a stray `continued` block are reported too.
    @Test func aBrokenBlockIsReported() async throws {
        let document = """
            # Broken

            ```swift
            import Contrail

            final class Dot: ModelObject {
                @Property var x: Double = 0
            }
            ```

            ```swift
            // main.swift
            import Contrail

            let dot = Dot()
            try dot.observeChange(self, \\.x) { dot in print(dot.x) }
            ```

            ```
            no language
            ```
            """
        let blocks = try MarkdownCodeBlock.blocks(in: document, document: "Broken.md")
        #expect(blocks.map(\.language) == ["swift", "swift", ""])
        #expect(blocks.map(\.role) == [.file, .main, .file])
        #expect(blocks.filter { $0.language.isEmpty }.map(\.fenceLine) == [19], "the unmarked fence is found")
        let failures = try await SnippetCompiler.locate().check(blocks, moduleName: "Broken")
        #expect(failures.count == 1, "\(failures)")
        let failure = try #require(failures.first)
        #expect(failure.hasPrefix("Broken.md:16:"), "\(failure)")
        #expect(failure.contains("error: cannot find 'self' in scope"), "\(failure)")

        let stray = try MarkdownCodeBlock.blocks(in: "```swift\n// main.swift, continued\nprint(1)\n```\n", document: "Stray.md")
        let strayFailures = try await SnippetCompiler.locate().check(stray, moduleName: "Stray")
        #expect(strayFailures == ["Stray.md:1: `// main.swift, continued` without a `// main.swift` block before it"])
    }

    /// Positive control for the extractor: indented fences (in a list), tildes, info strings.
    @Test func blocksAreExtracted() throws {
        let text = "- item\n\n  ```swift title\n  let a = 1\n    let b = 2\n  ```\n~~~sh\nls\n~~~\n"
        let blocks = try MarkdownCodeBlock.blocks(in: text, document: "List.md")
        #expect(blocks.count == 2)
        #expect(blocks.first?.lines == ["let a = 1", "  let b = 2"])
        #expect(blocks.first?.fenceLine == 3)
        #expect(blocks.last?.language == "sh")
        #expect(throws: MarkdownCodeBlock.Unterminated.self) { try MarkdownCodeBlock.blocks(in: "```swift\nlet a = 1\n", document: "Open.md") }
    }

    /// The compiler runs as a child with a bounded wait: a child past its deadline is terminated and
    /// reported (negative control), one that ends in time gives its status and output.
    @Test func childProcessesAreBounded() async throws {
        let done = try await ChildProcess.run(URL(filePath: "/bin/echo"), ["hello"], timeout: .seconds(30))
        #expect(done.status == 0)
        #expect(done.output == "hello\n")
        await #expect(throws: ChildProcess.Failure.self) {
            _ = try await ChildProcess.run(URL(filePath: "/usr/bin/tail"), ["-f", "/dev/null"], timeout: .milliseconds(200))   // never ends by itself
        }
    }

    /// A module name from a document path: `Sources/Contrail/Contrail.docc/Protocol.md` → `Doc_Protocol`.
    static func moduleName(_ document: String) -> String {
        let base = URL(filePath: document).deletingPathExtension().lastPathComponent
        return "Doc_" + String(base.map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }
}
