import Foundation
import Testing
@testable import Contrail
@testable import ContrailWire

/// A small deterministic generator (SplitMix64) so fuzz loops are reproducible.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

private func parse(_ text: String) throws -> JSON {
    try JSON(parsing: text)
}

private func parseError(_ text: String) -> JSONError? {
    do {
        _ = try JSON(parsing: text)
        return nil
    } catch {
        return error
    }
}

private func parseError(_ bytes: [UInt8]) -> JSONError? {
    do {
        _ = try JSON(parsing: bytes)
        return nil
    } catch {
        return error
    }
}

@Suite struct JSONTests {
    // MARK: Values and round trips

    @Test func parsesEveryKind() throws {
        let value = try parse(#" { "n": null, "t": true, "f": false, "i": -42, "u": 18446744073709551615, "d": 2.5, "s": "x", "a": [1, "two", [3]], "o": {"k": {}} } "#)
        #expect(value["n"] == .null)
        #expect(value["t"] == .bool(true))
        #expect(value["f"] == .bool(false))
        #expect(value["i"] == .int(-42))
        #expect(value["u"] == .uint(UInt64.max))
        #expect(value["d"] == .double(2.5))
        #expect(value["s"] == .string("x"))
        #expect(value["a"] == .array([.int(1), .string("two"), .array([.int(3)])]))
        #expect(value["o"] == .object(["k": .object([:])]))
        #expect(value["missing"] == nil)
    }

    @Test func roundTripsEveryKind() throws {
        let value: JSON = [
            "null": nil, "true": true, "false": false, "int": -7, "uint": .uint(UInt64.max), "double": 0.1,
            "string": "héllo \"wörld\" \\ / \n\t\r\u{08}\u{0C}\u{01}\u{1F} 世界 😀",
            "array": [1, 2.5, "x", nil, [], [[]], [:]], "object": ["nested": ["deep": [true]]], "": "empty key",
        ]
        for sorted in [false, true] {
            let bytes = value.serialized(sortedKeys: sorted)
            #expect(try JSON(parsing: bytes) == value)
        }
        #expect(try JSON(parsing: value.jsonString) == value)
    }

    @Test func integersKeepTheirKind() throws {
        #expect(try parse("0") == .int(0))
        #expect(try parse("-0") == .int(0))
        #expect(try parse("9223372036854775807") == .int(.max))
        #expect(try parse("-9223372036854775808") == .int(.min))
        #expect(try parse("9223372036854775808") == .uint(1 << 63))
        #expect(try parse("18446744073709551615") == .uint(.max))
        #expect(try parse("18446744073709551616") == .double(18446744073709551616.0))
        #expect(try parse("-9223372036854775809") == .double(-9223372036854775809.0))
        #expect(try parse("1.0") == .double(1))
        #expect(try parse("1e2") == .double(100))
        for value: JSON in [.int(.min), .int(.max), .uint(.max), .int(0), .int(-1)] {
            #expect(try JSON(parsing: value.serialized()) == value)
        }
        #expect(JSON.int(.min).jsonString == "-9223372036854775808")
        #expect(JSON.uint(.max).jsonString == "18446744073709551615")
    }

    @Test(arguments: ["0.1", "1e300", "1420070400.123", "5e-324", "1.7976931348623157e308", "-0.0", "2.2250738585072014e-308",
                      "123456789.123456789", "0.30000000000000004", "9007199254740993.0", "1e-7", "-1.5E+10", "4.35",
                      "0.000000000000000000000000000001", "123456789012345678901234567890"])
    func doublesParseExactlyAndRoundTrip(text: String) throws {
        let value = try parse(text)
        let expected = try #require(Double(text))
        #expect(value.doubleValue?.bitPattern == expected.bitPattern)
        let again = try JSON(parsing: value.serialized())
        #expect(again.doubleValue?.bitPattern == expected.bitPattern)
    }

    @Test func specificDoublesSerializeShortest() {
        #expect(JSON.double(0.1).jsonString == "0.1")
        #expect(JSON.double(1420070400.123).jsonString == "1420070400.123")
        #expect(JSON.double(1e300).jsonString == "1e+300")
        #expect(JSON.double(5).jsonString == "5.0")
    }

    @Test func randomDecimalsMatchStandardLibrary() throws {
        var rng = SeededGenerator(seed: 42)
        for _ in 0..<20_000 {
            let digits = String(UInt64.random(in: 0...UInt64.max, using: &rng) >> UInt64.random(in: 0...63, using: &rng))
            let split = Int.random(in: 0...digits.count, using: &rng)
            var text = split == 0 ? "0" : String(digits.prefix(split))
            if text.count > 1 && text.first == "0" { text = "1" + text }
            text += "." + (split == digits.count ? "0" : String(digits.dropFirst(split)))
            if Bool.random(using: &rng) { text += "e\(Int.random(in: -30...30, using: &rng))" }
            if Bool.random(using: &rng) { text = "-" + text }
            let parsed = try parse(text)
            let expected = try #require(Double(text))
            #expect(parsed.doubleValue?.bitPattern == expected.bitPattern, "\(text)")
        }
    }

    @Test func randomDoublesRoundTripBitExact() throws {
        var rng = SeededGenerator(seed: 7)
        for _ in 0..<20_000 {
            let value = Double(bitPattern: rng.next())
            guard value.isFinite else { continue }
            let back = try JSON(parsing: JSON.double(value).serialized())
            #expect(back.doubleValue?.bitPattern == value.bitPattern)
        }
    }

    @Test func nanSerializesAsNullAndInfinityAsAnOverflowingNumber() throws {
        #expect(JSON.double(.infinity).jsonString == "1e999")
        #expect(JSON.double(-.infinity).jsonString == "-1e999")
        #expect(JSON.double(.nan).jsonString == "null")
        #expect(JSON.array([.double(.nan)]).jsonString == "[null]")
        #expect(try parse("[1e999,-1e999,1e400]") == .array([.double(.infinity), .double(-.infinity), .double(.infinity)]))
    }

    @Test func unicodeAndEscapes() throws {
        #expect(try parse(#""h\u00e9llo""#) == .string("héllo"))
        #expect(try parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try parse(#""\uD83D\uDE00x""#) == .string("😀x"))
        #expect(try parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{08}\u{0C}\n\r\t"))
        #expect(try parse(#""\u0000""#) == .string("\u{0}"))
        #expect(try parse("\"世界 😀 é\"") == .string("世界 😀 é"))
        #expect(try parse(#""ab\ncd世\u754cef""#) == .string("ab\ncd世界ef"))
        #expect(JSON.string("a\"b\\c\n\u{01}\u{1F}").jsonString == #""a\"b\\c\n\u0001\u001f""#)
        #expect(JSON.string("世界/😀").jsonString == "\"世界/😀\"")
    }

    @Test func accessors() {
        #expect(JSON.string("s").stringValue == "s")
        #expect(JSON.int(1).stringValue == nil)
        #expect(JSON.bool(true).boolValue == true)
        #expect(JSON.int(-3).int64Value == -3)
        #expect(JSON.uint(5).int64Value == 5)
        #expect(JSON.uint(.max).int64Value == nil)
        #expect(JSON.double(4).int64Value == 4)
        #expect(JSON.double(4.5).int64Value == nil)
        #expect(JSON.double(1e19).int64Value == nil)
        #expect(JSON.int(-1).uint64Value == nil)
        #expect(JSON.uint(.max).uint64Value == .max)
        #expect(JSON.double(2).uint64Value == 2)
        #expect(JSON.int(2).doubleValue == 2)
        #expect(JSON.uint(2).doubleValue == 2)
        #expect(JSON.string("2").doubleValue == nil)
        #expect(JSON.array([1]).arrayValue == [1])
        #expect(JSON.array([1])[0] == 1)
        #expect(JSON.array([1])[1] == nil)
        #expect(JSON.object(["a": 1]).objectValue == ["a": 1])
        #expect(JSON.null.isNull && !JSON.int(0).isNull)
        #expect(JSON.double(1).isNumber && !JSON.string("1").isNumber)
    }

    @Test func parsesEveryInputForm() throws {
        let text = #"{"a":[1,2]}"#
        let expected: JSON = ["a": [1, 2]]
        #expect(try JSON(parsing: text) == expected)
        #expect(try JSON(parsing: Array(text.utf8)) == expected)
        #expect(try JSON(parsing: Data(text.utf8)) == expected)
        #expect(try JSON(parsing: Array(text.utf8)[...]) == expected)
        #expect(try JSON(parsing: text.utf8.lazy.map { $0 }) == expected) // not contiguous: copied
        let fromRaw = Array(text.utf8).withUnsafeBytes { raw in try? JSON(parsing: raw) }
        #expect(fromRaw == expected)
    }

    @Test func duplicateKeysKeepTheLast() throws {
        #expect(try parse(#"{"a":1,"a":2}"#) == ["a": 2])
    }

    @Test func codableInsideOtherTypes() throws {
        struct Box: Codable, Equatable { var value: JSON; var name: String }
        let box = Box(value: ["n": nil, "b": true, "i": -5, "u": .uint(.max), "d": 0.5, "s": "x", "a": [1, "y"], "o": ["k": [:]]], name: "box")
        let data = try JSONEncoder().encode(box)
        #expect(try JSONDecoder().decode(Box.self, from: data) == box)
        #expect(try JSON(parsing: data)["value"] == box.value)
    }

    @Test func descriptionIsSortedJSON() {
        let value: JSON = ["b": 1, "a": [true, nil]]
        #expect(value.description == #"{"a":[true,null],"b":1}"#)
    }

    // MARK: Errors

    @Test(arguments: [
        ("", 0, "unexpected end of input"),
        ("   ", 3, "unexpected end of input"),
        (#"{"a":1,}"#, 7, "unexpected '}'"),
        (#"{"a": 1, "b": 2, }"#, 17, "unexpected '}'"),
        ("[1,]", 3, "unexpected ']'"),
        ("[1 2]", 3, "unexpected '2'"),
        ("{'a':1}", 1, "unexpected '''"),
        (#"{"a" 1}"#, 5, "unexpected '1'"),
        ("{1:2}", 1, "unexpected '1'"),
        ("// c\n1", 0, "unexpected '/'"),
        ("1 /* c */", 2, "unexpected '/'"),
        ("01", 1, "leading zeros are not allowed"),
        ("-01", 2, "leading zeros are not allowed"),
        ("NaN", 0, "unexpected 'N'"),
        ("Infinity", 0, "unexpected 'I'"),
        ("-Infinity", 1, "expected a digit, found 'I'"),
        ("+1", 0, "unexpected '+'"),
        (".5", 0, "unexpected '.'"),
        ("1.", 2, "unexpected end of input"),
        ("1.e5", 2, "expected a digit after '.', found 'e'"),
        ("1e", 2, "unexpected end of input"),
        ("1e+", 3, "unexpected end of input"),
        ("1ex", 2, "expected a digit in exponent, found 'x'"),
        ("tru", 3, "unexpected end of input"),
        ("trUe", 2, "unexpected 'U'"),
        ("nul", 3, "unexpected end of input"),
        ("falsey", 5, "unexpected 'y'"),
        ("1 2", 2, "unexpected '2'"),
        ("[1]]", 3, "unexpected ']'"),
        (#""abc"#, 4, "unexpected end of input"),
        ("\"a\nb\"", 2, "unescaped control character byte 0x0A in string"),
        ("\"a\tb\"", 2, "unescaped control character byte 0x09 in string"),
        (#""\q""#, 1, #"invalid escape '\q'"#),
        (#""\u12G4""#, 5, "invalid hex digit 'G' in \\u escape"),
        (#""\ud800""#, 1, "unpaired surrogate \\uD800"),
        (#""x\ud800\n""#, 2, "unpaired surrogate \\uD800"),
        (#""\ud800\u0041""#, 1, "unpaired surrogate \\uD800"),
        (#""\udc00""#, 1, "unpaired surrogate \\uDC00"),
        (#""\ud800"#, 7, "unexpected end of input"),
        ("\u{FEFF}1", 0, "unexpected byte 0xEF"),
    ] as [(String, Int, String)])
    func malformedInputNamesOffsetAndReason(input: String, offset: Int, reason: String) {
        let error = parseError(input)
        #expect(error == JSONError(offset: offset, reason: reason), "\(input)")
    }

    @Test func errorDescriptionNamesTheByte() {
        #expect(parseError(#"{"a": 1, "b": 2, }"#)?.description == "unexpected '}' at byte 17")
    }

    @Test(arguments: [
        ([0x22, 0xC0, 0x80, 0x22], 1),              // overlong NUL
        ([0x22, 0xC1, 0xBF, 0x22], 1),              // overlong
        ([0x22, 0xE0, 0x80, 0x80, 0x22], 1),        // overlong 3-byte
        ([0x22, 0xED, 0xA0, 0x80, 0x22], 1),        // encoded surrogate
        ([0x22, 0xF0, 0x80, 0x80, 0x80, 0x22], 1),  // overlong 4-byte
        ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 1),  // above U+10FFFF
        ([0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], 1),  // invalid lead
        ([0x22, 0x61, 0x80, 0x22], 2),              // lone continuation
        ([0x22, 0xC3, 0x28, 0x22], 1),              // bad continuation
        ([0x22, 0x5C, 0x6E, 0xE2, 0x82, 0x22], 3),  // truncated after an escape
    ] as [([UInt8], Int)])
    func invalidUTF8IsRejected(bytes: [UInt8], offset: Int) {
        #expect(parseError(bytes) == JSONError(offset: offset, reason: "invalid UTF-8 in string"))
    }

    @Test func validMultiByteUTF8IsAccepted() throws {
        let bytes: [UInt8] = [0x22, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80, 0xF4, 0x8F, 0xBF, 0xBF, 0x22]
        #expect(try JSON(parsing: bytes) == .string("é€😀\u{10FFFF}"))
    }

    @Test func everyTruncationIsAnEndOfInputError() throws {
        let document = #"{"type":"ScopeSync","index":3,"f":[{"uuid":"3f2504e0","x":-1.5e-3,"ok":true,"no":false,"n":null,"s":"é\n😀\ud83d\ude00"}],"e":{},"a":[]}"#
        let bytes = Array(document.utf8)
        _ = try JSON(parsing: bytes)
        for length in 0..<bytes.count {
            let error = parseError(Array(bytes[..<length]))
            #expect(error == JSONError(offset: length, reason: "unexpected end of input"), "prefix \(length)")
        }
    }

    @Test func nestingIsBoundedByMaxDepth() throws {
        let ok = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(try parse(ok).arrayValue != nil)
        let tooDeep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        #expect(parseError(tooDeep) == JSONError(offset: 512, reason: "nesting deeper than 512 levels"))
        let objects = String(repeating: #"{"a":"#, count: 600) + "1" + String(repeating: "}", count: 600)
        #expect(parseError(objects)?.reason == "nesting deeper than 512 levels")
        let huge = String(repeating: "[", count: 200_000)
        #expect(parseError(huge)?.offset == 512)
        let custom = JSONLimits(maxDepth: 2)
        #expect(throws: JSONError.self) { try JSON(parsing: "[[[1]]]", limits: custom) }
        #expect(try JSON(parsing: "[[1]]", limits: custom) == [[1]])
    }

    @Test func inputSizeIsBoundedByMaxBytes() throws {
        let limits = JSONLimits(maxBytes: 8)
        #expect(try JSON(parsing: "[1,2,3]", limits: limits) == [1, 2, 3])
        #expect(throws: JSONError(offset: 8, reason: "input is larger than 8 bytes")) {
            try JSON(parsing: "[1,2,3,4]", limits: limits)
        }
    }

    @Test func randomBytesNeverCrash() {
        var rng = SeededGenerator(seed: 0xC0FFEE)
        let alphabet = Array(#"{}[]":,.-+eE0123456789 tfnrulasx\"#.utf8) + [0x0A, 0xC3, 0xA9, 0xF0, 0x80, 0xFF]
        var parsedCount = 0
        for round in 0..<20_000 {
            let length = Int.random(in: 0...40, using: &rng)
            let bytes: [UInt8] = (0..<length).map { _ in
                round % 2 == 0 ? UInt8.random(in: 0...255, using: &rng) : alphabet.randomElement(using: &rng) ?? 0
            }
            do {
                let value = try JSON(parsing: bytes)
                parsedCount += 1
                #expect(try JSON(parsing: value.serialized()) == value)
            } catch {
                #expect(error.offset >= 0 && error.offset <= bytes.count)
            }
        }
        #expect(parsedCount > 0)
    }

    @Test func mutatedDocumentsNeverCrash() {
        var rng = SeededGenerator(seed: 99)
        let document = Array(#"{"a":[1,-2.5e3,"x\u00e9\ud83d\ude00",true,false,null,{"b":{}}],"c":"d"}"#.utf8)
        for _ in 0..<20_000 {
            var bytes = document
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let position = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: bytes[position] = UInt8.random(in: 0...255, using: &rng)
                case 1: bytes.remove(at: position)
                default: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: position)
                }
                if bytes.isEmpty { break }
            }
            do {
                let value = try JSON(parsing: bytes)
                #expect(try JSON(parsing: value.serialized()) == value)
            } catch {
                #expect(error.offset >= 0 && error.offset <= bytes.count)
            }
        }
    }
}
