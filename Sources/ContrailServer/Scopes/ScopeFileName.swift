import Foundation

/// Maps scope names to log file names in the data directory and back: letters, digits, `-` and
/// `_` stay, every other byte becomes `%XX`, and `.scope` is appended.
enum ScopeFileName {
    /// The file name for the scope `name`.
    static func fileName(for name: String) -> String {
        var result = ""
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                result += "%"
                result.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                result.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0x0F)]))
            }
        }
        return (result.isEmpty ? "%" : result) + ".scope"
    }
}
