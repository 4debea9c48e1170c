import Foundation

/// Type-checks the Swift blocks of one document with the toolchain's `swiftc`, against the modules
/// this build made (`.build/<triple>/<configuration>/Modules`), as one module: each block is a file of
/// its own, except the `main.swift` blocks, which together make the module's `main.swift`. Every file
/// starts with a `#sourceLocation` naming the document and the block's line, so the compiler's
/// messages point into the document.
struct SnippetCompiler: Sendable {
    /// The compiler.
    var swiftc: URL
    /// The build's `Modules` directory.
    var modules: URL
    /// The build's module cache (clang modules built once, shared by the runs).
    var moduleCache: URL
    /// The module maps of the package's C targets (`CContrailSystem`), which the Swift modules import.
    var moduleMaps: [URL]
    /// How long one `swiftc` run may take.
    var timeout: Duration = .seconds(120)

    /// Why the compiler or the build's modules could not be found: a failure, never a skip.
    struct LookupFailure: Error, CustomStringConvertible {
        var description: String
    }

    /// The compiler and modules of the build that made the running test binary.
    static func locate(testBinary: String = CommandLine.arguments.first ?? "") throws(LookupFailure) -> SnippetCompiler {
        let fileManager = FileManager.default
        // The directory holding `Modules/Contrail.swiftmodule`: the test binary's own, or an ancestor.
        var directory = URL(filePath: testBinary).deletingLastPathComponent()
        var binDirectory: URL?
        for _ in 0..<6 {
            if fileManager.fileExists(atPath: directory.appending(path: "Modules/Contrail.swiftmodule").path) {
                binDirectory = directory
                break
            }
            directory = directory.deletingLastPathComponent()
        }
        guard let binDirectory else {
            throw LookupFailure(description: "no Modules/Contrail.swiftmodule above the test binary \(testBinary)")
        }
        let modules = binDirectory.appending(path: "Modules")
        let moduleMaps = ((try? fileManager.contentsOfDirectory(atPath: binDirectory.path)) ?? [])
            .filter { $0.hasSuffix(".build") }
            .map { binDirectory.appending(path: $0).appending(path: "module.modulemap") }
            .filter { fileManager.fileExists(atPath: $0.path) }
        guard let swiftc = compiler(scratch: binDirectory.deletingLastPathComponent().deletingLastPathComponent()) else {
            throw LookupFailure(description: "no swiftc: not in the build manifest under \(binDirectory.path), $SWIFT_EXEC or $PATH")
        }
        return SnippetCompiler(swiftc: swiftc, modules: modules, moduleCache: binDirectory.appending(path: "ModuleCache"),
                               moduleMaps: moduleMaps.sorted { $0.path < $1.path })
    }

    /// The `swiftc` that built the modules (from the build manifest `<scratch>/<configuration>.yaml`),
    /// else `$SWIFT_EXEC`, else the first on `$PATH`.
    private static func compiler(scratch: URL) -> URL? {
        let fileManager = FileManager.default
        let manifests = ((try? fileManager.contentsOfDirectory(atPath: scratch.path)) ?? []).filter { $0.hasSuffix(".yaml") }.sorted()
        for manifest in manifests {
            guard let text = try? String(contentsOf: scratch.appending(path: manifest), encoding: .utf8),
                  let range = text.range(of: #""[^"]*/swiftc""#, options: .regularExpression) else { continue }
            let path = String(text[range].dropFirst().dropLast())
            if fileManager.isExecutableFile(atPath: path) { return URL(filePath: path) }
        }
        let environment = ProcessInfo.processInfo.environment
        if let exec = environment["SWIFT_EXEC"], fileManager.isExecutableFile(atPath: exec) { return URL(filePath: exec) }
        for directory in (environment["PATH"] ?? "").split(separator: ":") {
            let candidate = URL(filePath: String(directory)).appending(path: "swiftc")
            if fileManager.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }

    /// The failures of `blocks` (the Swift blocks of one document), each as
    /// `DOCUMENT:LINE:COLUMN: error: MESSAGE`; empty when everything compiles.
    func check(_ blocks: [MarkdownCodeBlock], moduleName: String) async throws -> [String] {
        let swiftBlocks = blocks.filter(\.isSwift)
        guard !swiftBlocks.isEmpty else { return [] }
        var problems: [String] = []
        var mainText: String?
        var files: [(name: String, text: String)] = []
        for block in swiftBlocks {
            let located = "#sourceLocation(file: \"\(block.document)\", line: \(block.firstLine))\n\(block.text)\n#sourceLocation()\n"
            switch block.role {
            case .main:
                if mainText != nil {
                    problems.append("\(block.document):\(block.fenceLine): a second `// main.swift` block (one per document; continue it with `// main.swift, continued`)")
                }
                mainText = (mainText ?? "") + located
            case .mainContinued:
                if mainText == nil {
                    problems.append("\(block.document):\(block.fenceLine): `// main.swift, continued` without a `// main.swift` block before it")
                }
                mainText = (mainText ?? "") + located
            case .file:
                files.append(("block-line-\(block.fenceLine).swift", located))
            }
        }
        guard problems.isEmpty else { return problems }
        let directory = FileManager.default.temporaryDirectory.appending(path: "contrail-doc-\(moduleName)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        if let mainText { files.append(("main.swift", mainText)) }
        var paths: [String] = []
        for file in files {
            let url = directory.appending(path: file.name)
            try file.text.write(to: url, atomically: false, encoding: .utf8)
            paths.append(url.path)
        }
        var arguments = ["-typecheck", "-swift-version", "6", "-module-name", moduleName, "-I", modules.path,
                         "-module-cache-path", moduleCache.path]
        for map in moduleMaps { arguments += ["-Xcc", "-fmodule-map-file=\(map.path)"] }
        if mainText == nil { arguments.append("-parse-as-library") }
        let outcome = try await ChildProcess.run(swiftc, arguments + paths, timeout: timeout)
        let errors = outcome.output.split(separator: "\n").filter { $0.contains(": error: ") }.map(String.init)
        if outcome.status != 0 && errors.isEmpty {
            return ["swiftc failed with status \(outcome.status) for \(swiftBlocks[0].document): \(outcome.output)"]
        }
        return errors
    }
}
