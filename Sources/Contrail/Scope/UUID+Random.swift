import Foundation

extension UUID {
    /// A random (version 4) UUID from the standard library's system generator (`getrandom` on
    /// Linux, twice). Foundation's `UUID()` on Linux opens, reads and closes `/dev/urandom` for
    /// each one, which a local flush paid for the id of every change set.
    static func random() -> UUID {
        var generator = SystemRandomNumberGenerator()
        var bytes: (UInt64, UInt64) = (generator.next(), generator.next())
        var uuid: uuid_t = withUnsafeBytes(of: &bytes) { $0.load(as: uuid_t.self) }
        uuid.6 = (uuid.6 & 0x0F) | 0x40  // version 4
        uuid.8 = (uuid.8 & 0x3F) | 0x80  // variant 1
        return UUID(uuid: uuid)
    }
}
