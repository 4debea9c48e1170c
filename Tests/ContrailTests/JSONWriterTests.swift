import Foundation
import Testing
@testable import ContrailWire

/// The JSON writer's own buffer: it grows past its first capacity without losing or reordering a
/// byte, and can be emptied and reused (as the fragment log's appender does, record after record).
@Suite struct JSONWriterTests {
    /// Every kind of value, escapes included, in sorted-key order, against its text written out by hand.
    @Test func writesEveryKindOfValueExactlyAndGrowsPastItsCapacity() throws {
        let value: JSON = [
            "b": [1, -2, 3.5, "q\"\\\n\u{1}\t", .null, true, false, .uint(18_446_744_073_709_551_615)],
            "a": .int(-9_223_372_036_854_775_807),
            "c": ["nested": [0.1, -0.0, 1e300]],
        ]
        let expected = #"{"a":-9223372036854775807,"b":[1,-2,3.5,"q\"\\\n\u0001\t",null,true,false,18446744073709551615],"c":{"nested":[0.1,-0.0,1e+300]}}"#
        var writer = JSONWriter(sortedKeys: true, capacity: 1)
        for round in 0..<40 {
            if round > 0 { writer.append(",") }
            writer.write(value)
        }
        let text = String(decoding: writer.bytes, as: UTF8.self)
        #expect(writer.count > 64 * 40, "past the first capacity many times over")
        #expect(text == Array(repeating: expected, count: 40).joined(separator: ","))
        writer.withUnsafeBytes { #expect(Array($0) == writer.bytes) }
    }

    @Test func emptiedWritersAreReusedAndBytesCanBeReplaced() throws {
        var writer = JSONWriter(sortedKeys: false, capacity: 16)
        writer.writeString(String(repeating: "long ", count: 100))
        writer.removeAll()
        #expect(writer.count == 0 && writer.bytes.isEmpty)
        writer.writeUUID(UUID(uuidString: "3F2504E0-4F89-11D3-9A0C-0305E82C3301")!)
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #""3f2504e0-4f89-11d3-9a0c-0305e82c3301""#)
        writer.bytes = Array("[1".utf8)
        writer.append("]")
        #expect(String(decoding: writer.bytes, as: UTF8.self) == "[1]")
        writer.bytes.append(UInt8(ascii: " "))
        #expect(writer.count == 4)
    }
}
