import Foundation

/// Maps scope names to log file names in the data directory: letters, digits, `-` and `_` stay,
/// every other byte becomes `%XX`, and `.scope` is appended. When that would pass
/// ``maxReadableBytes`` (a name with many non-ASCII bytes), the file is named by the start of that
/// form, `~`, and the SHA-256 of the name in hex instead: at most 215 bytes for any name, under the
/// 255 bytes file systems allow. The real name is recorded in the log's snapshots, and opening a
/// log checks it (two names cannot share a file). Names that fit keep the form earlier versions
/// used, so existing data directories load unchanged.
enum ScopeFileName {
    /// The longest file name of the readable form (earlier versions wrote up to 255).
    static let maxReadableBytes = 255
    /// How much of the readable form a hashed file name keeps.
    static let prefixBytes = 144

    /// The file name for the scope `name`. O(length).
    static func fileName(for name: String) -> String {
        let readable = encoded(name)
        let full = (readable.isEmpty ? "%" : readable) + ".scope"
        if full.utf8.count <= maxReadableBytes { return full }
        var prefix = Substring(readable.prefix(prefixBytes))
        // Do not cut an escape in half: drop a trailing "%" or "%X".
        if let percent = prefix.suffix(2).lastIndex(of: "%") { prefix = prefix[..<percent] }
        let digest = SHA256.hash(Array(name.utf8)).map { byte in
            let hex = Array("0123456789abcdef".utf8)
            return String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]], as: UTF8.self)
        }.joined()
        return prefix + "~" + digest + ".scope"
    }

    /// The scope name a file name of the readable form stands for; nil for a hashed name (read the
    /// name recorded in the log instead) or anything ``fileName(for:)`` does not make. O(length).
    static func name(fromFileName file: String) -> String? {
        guard file.hasSuffix(".scope"), !file.contains("~") else { return nil }
        let encoded = Array(file.utf8.dropLast(6))
        var bytes: [UInt8] = []
        var index = 0
        while index < encoded.count {
            if encoded[index] == UInt8(ascii: "%") {
                guard index + 2 < encoded.count, let byte = UInt8(String(decoding: encoded[(index + 1)...(index + 2)], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(byte)
                index += 3
            } else {
                bytes.append(encoded[index])
                index += 1
            }
        }
        guard let name = String(validating: bytes, as: UTF8.self), fileName(for: name) == file else { return nil }
        return name
    }

    private static func encoded(_ name: String) -> String {
        var result = ""
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                result += "%"
                result.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                result.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0x0F)]))
            }
        }
        return result
    }
}
