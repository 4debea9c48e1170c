import Testing
import ContrailWebSocket

@Suite struct UTF8ValidatorTests {
    private func isValid(_ bytes: [UInt8]) -> Bool {
        var v = UTF8Validator()
        return v.validate(bytes) && v.isComplete
    }

    @Test func acceptsValidText() {
        #expect(isValid([]))
        #expect(isValid(Array("hello, world".utf8)))
        #expect(isValid(Array("κόσμε Привет 你好 🎉 \u{10FFFF} \u{FFFD} \u{D7FF} \u{E000}".utf8)))
        #expect(isValid(Array(String(repeating: "ascii run long enough for the fast path ", count: 10).utf8)))
    }

    @Test(arguments: [
        [0x80] as [UInt8],                       // lone continuation byte
        [0xC0, 0x80], [0xC1, 0xBF],              // overlong 2-byte
        [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF],  // overlong 3-byte
        [0xF0, 0x80, 0x80, 0x80], [0xF0, 0x8F, 0xBF, 0xBF],  // overlong 4-byte
        [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF],  // UTF-16 surrogates
        [0xF4, 0x90, 0x80, 0x80],                // above U+10FFFF
        [0xF5, 0x80, 0x80, 0x80], [0xFF], [0xFE],
        [0xC3, 0x28], [0xE2, 0x28, 0xA1],        // bad continuation
        Array("abcdefghijklmnop".utf8) + [0xC0, 0xAF] + Array("abcdefgh".utf8),  // after an ASCII run
    ])
    func rejectsInvalidSequences(bytes: [UInt8]) {
        var v = UTF8Validator()
        do { let ok = v.validate(bytes); #expect(!ok) }
        #expect(!v.isComplete)
    }

    @Test func truncatedSequenceIsNotComplete() {
        var v = UTF8Validator()
        do { let ok = v.validate([0xE2, 0x82]); #expect(ok) }  // prefix of "€"
        #expect(!v.isComplete)
        do { let ok = v.validate([0xAC]); #expect(ok) }
        #expect(v.isComplete)
    }

    @Test func validatesAcrossCallsByteByByte() {
        let text = Array("a€𝄞é🎉z".utf8)
        var v = UTF8Validator()
        for byte in text {
            do { let ok = v.validate([byte]); #expect(ok) }
        }
        #expect(v.isComplete)
    }

    @Test func failsFastOnTheFirstBadByteAcrossCalls() {
        var v = UTF8Validator()
        do { let ok = v.validate(Array("κόσμε".utf8) + [0xCE]); #expect(ok) }
        // 0xF4 0x90 can never start valid UTF-8: fails on the call that brings the bad byte.
        do { let ok = v.validate([0xBA]); #expect(ok) }
        do { let ok = v.validate([0xF4]); #expect(ok) }
        do { let ok = v.validate([0x90]); #expect(!ok) }
        // Stays failed until reset.
        do { let ok = v.validate(Array("ok".utf8)); #expect(!ok) }
        v.reset()
        do { let ok = v.validate(Array("ok".utf8)); #expect(ok) }
        #expect(v.isComplete)
    }

    @Test func everyCodePointBoundaryRoundTrips() {
        // All scalars in a sample spread over every UTF-8 length, split at every position.
        let scalars: [Unicode.Scalar] = [0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF].compactMap(Unicode.Scalar.init)
        let bytes = Array(String(String.UnicodeScalarView(scalars)).utf8)
        for cut in 0...bytes.count {
            var v = UTF8Validator()
            do { let ok = v.validate(Array(bytes[..<cut])); #expect(ok) }
            do { let ok = v.validate(Array(bytes[cut...])); #expect(ok) }
            #expect(v.isComplete)
        }
    }

    @Test func staticIsValid() {
        #expect(Array("plain".utf8).withUnsafeBytes { UTF8Validator.isValid($0) })
        #expect(![UInt8]([0xE2, 0x82]).withUnsafeBytes { UTF8Validator.isValid($0) })
    }

    @Test func oneBadByteAnywhereInALongASCIIRunIsFound() {
        let ascii = [UInt8](repeating: 0x41, count: 100)
        #expect(ascii.withUnsafeBytes { UTF8Validator.isValid($0) })
        for position in 0..<ascii.count {
            var bad = ascii
            bad[position] = 0xFF
            var two = ascii
            two[position] = 0xC3
            if position + 1 < two.count { two[position + 1] = 0xA9 }  // "é": valid unless cut off at the end
            bad.withUnsafeBytes { #expect(!UTF8Validator.isValid($0), "0xFF at \(position)") }
            two.withUnsafeBytes { #expect(UTF8Validator.isValid($0) == (position + 1 < two.count), "é at \(position)") }
        }
    }
}
