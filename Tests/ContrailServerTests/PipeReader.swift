import Foundation
import ContrailSupport

/// Reads a child process's pipe to its end on a thread of its own, with blocking reads.
///
/// Not `FileHandle.readabilityHandler`: tearing down its libdispatch read source races the
/// descriptor's close and now and then crashes libdispatch's event loop on Linux
/// (`_dispatch_event_loop_drain`, swift-corelibs-libdispatch#949). A blocking read registers
/// nothing with libdispatch.
enum PipeReader {
    /// Calls `body` with each chunk read from `handle`, then once with empty data at the end of the
    /// stream (or on a read error). Call it after the child is launched.
    static func drain(_ handle: FileHandle, _ body: @escaping @Sendable (Data) -> Void) {
        let thread = Thread {
            // `handle` is held until the end of the stream, so its descriptor stays open while read.
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                let data = count > 0 ? Data(buffer[..<count]) : Data()
                body(data)
                if data.isEmpty { return }
            }
        }
        thread.name = "contrail.test.pipe-reader"
        thread.start()
    }
}
