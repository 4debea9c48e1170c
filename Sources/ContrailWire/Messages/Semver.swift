/// Semantic-version syntax check (semver.org 2.0.0), as the server applies to `SessionCreate.version`.
///
/// Like node-semver's `valid`, a leading `v` or `=` is tolerated.
enum Semver {
    static func isValid(_ text: String) -> Bool {
        var rest = Substring(text)
        if rest.first == "v" || rest.first == "=" { rest = rest.dropFirst() }
        var build: Substring?
        if let plus = rest.firstIndex(of: "+") {
            build = rest[rest.index(after: plus)...]
            rest = rest[..<plus]
        }
        var prerelease: Substring?
        if let dash = rest.firstIndex(of: "-") {
            prerelease = rest[rest.index(after: dash)...]
            rest = rest[..<dash]
        }
        let core = rest.split(separator: ".", omittingEmptySubsequences: false)
        guard core.count == 3, core.allSatisfy(isNumericIdentifier) else { return false }
        if let prerelease {
            let identifiers = prerelease.split(separator: ".", omittingEmptySubsequences: false)
            guard identifiers.allSatisfy({ isAlphanumericIdentifier($0) && (!isDigits($0) || isNumericIdentifier($0)) }) else {
                return false
            }
        }
        if let build {
            guard build.split(separator: ".", omittingEmptySubsequences: false).allSatisfy(isAlphanumericIdentifier) else {
                return false
            }
        }
        return true
    }

    /// Digits without a leading zero (a single `0` is fine).
    private static func isNumericIdentifier(_ part: Substring) -> Bool {
        isDigits(part) && (part.count == 1 || part.first != "0")
    }

    private static func isDigits(_ part: Substring) -> Bool {
        !part.isEmpty && part.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    private static func isAlphanumericIdentifier(_ part: Substring) -> Bool {
        !part.isEmpty && part.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || byte == UInt8(ascii: "-")
        }
    }
}
