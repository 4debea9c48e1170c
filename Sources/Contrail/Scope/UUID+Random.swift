import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension UUID {
    /// A random (version 4) UUID, its 122 random bits taken from ``RandomPool``. Foundation's
    /// `UUID()` on Linux opens, reads and closes `/dev/urandom` for each one, and the standard
    /// library's generator makes one `getrandom` call per 8 bytes; a local flush paid for either
    /// with the id of every change set.
    static func random() -> UUID {
        var bytes = RandomPool.shared.withLock { $0.take() }
        var uuid: uuid_t = withUnsafeBytes(of: &bytes) { $0.load(as: uuid_t.self) }
        uuid.6 = (uuid.6 & 0x0F) | 0x40  // version 4
        uuid.8 = (uuid.8 & 0x3F) | 0x80  // variant 1
        return UUID(uuid: uuid)
    }
}

/// Random bytes drawn from the system's generator 4 KiB at a time and handed out 16 at a time:
/// 16 `getrandom` calls per 256 UUIDs (the standard library's generator makes 2 per UUID). Each
/// handed-out block is used once. (A process that forks without exec would share the unused rest
/// with its child; Contrail spawns, never forks.)
struct RandomPool {
    /// The pool every ``UUID/random()`` takes from.
    static let shared = Mutex(RandomPool())

    private var words = [UInt64](repeating: 0, count: 512)
    private var nextWord = 512

    /// The next 16 unused random bytes. O(1), amortised over one refill per 256 calls.
    mutating func take() -> (UInt64, UInt64) {
        if nextWord == words.count { refill() }
        defer { nextWord += 2 }
        return (words[nextWord], words[nextWord + 1])
    }

    private mutating func refill() {
        words.withUnsafeMutableBytes { buffer in
            // `getentropy` (the `getrandom` system call, at most 256 bytes a call): 16 calls a refill.
            var filled = 0
            while filled < buffer.count, getentropy(buffer.baseAddress! + filled, 256) == 0 { filled += 256 }
            if filled < buffer.count {  // no getrandom (a very old kernel): the standard library's generator
                var generator = SystemRandomNumberGenerator()
                for index in stride(from: 0, to: buffer.count, by: 8) { buffer.storeBytes(of: generator.next(), toByteOffset: index, as: UInt64.self) }
            }
        }
        nextWord = 0
    }
}
