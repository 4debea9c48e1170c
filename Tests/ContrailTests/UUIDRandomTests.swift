import Foundation
import Testing
@testable import Contrail

@Suite struct UUIDRandomTests {
    /// Across several refills of the pool (256 UUIDs each), every id is new and a version-4,
    /// variant-1 UUID whose random bits vary (control: all bits seen both set and clear).
    @Test func idsAreUniqueVersion4AcrossRefills() {
        let ids = (0..<2_000).map { _ in UUID.random() }
        #expect(Set(ids).count == ids.count)
        var ones = [Int](repeating: 0, count: 128)
        for id in ids {
            #expect(id.uuid.6 >> 4 == 4)
            #expect(id.uuid.8 >> 6 == 2)
            withUnsafeBytes(of: id.uuid) { bytes in
                for bit in 0..<128 where bytes[bit / 8] & (1 << (bit % 8)) != 0 { ones[bit] += 1 }
            }
        }
        let fixedBits: Set<Int> = [52, 53, 54, 55, 70, 71]  // version (byte 6 high nibble) and variant (byte 8 top bits)
        for bit in 0..<128 where !fixedBits.contains(bit) {
            #expect(ones[bit] > 800 && ones[bit] < 1_200, "bit \(bit) set \(ones[bit]) times in 2,000")
        }
    }
}
