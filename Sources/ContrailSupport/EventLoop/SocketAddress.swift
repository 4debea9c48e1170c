import Dispatch

/// An IPv4 or IPv6 socket address, as `getaddrinfo` returns it.
package struct SocketAddress: Sendable, CustomStringConvertible {
    /// The raw address (large enough for any family).
    var storage: sockaddr_storage
    /// How many bytes of `storage` are used.
    var length: socklen_t

    /// `AF_INET` or `AF_INET6`.
    var family: Int32 { Int32(storage.ss_family) }

    /// The port in host byte order.
    var port: UInt16 {
        var copy = storage
        return withUnsafeBytes(of: &copy) { raw in
            // sin_port and sin6_port sit at the same offset (2) in both layouts.
            UInt16(raw[2]) << 8 | UInt16(raw[3])
        }
    }

    /// The numeric host, e.g. `"127.0.0.1"` or `"::1"`.
    package var host: String {
        var copy = storage
        var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let result = withUnsafePointer(to: &copy) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                getnameinfo(address, length, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST)
            }
        }
        guard result == 0 else { return "?" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    package var description: String { family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Calls `body` with the address as a `sockaddr` pointer and its length.
    func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var copy = storage
        return withUnsafePointer(to: &copy) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    /// `resolve(host:port:passive:)` on a thread of its own (``BlockingCall``), so that the blocking
    /// `getaddrinfo` runs neither on an event loop nor on Swift's cooperative pool. An IP literal is
    /// converted at once, without a thread: with `AI_NUMERICHOST`, `getaddrinfo` does no lookup and
    /// cannot block.
    static func resolveInBackground(host: String, port: UInt16, passive: Bool = false) async throws(NetworkError)
        -> [SocketAddress]
    {
        if let literal = try? resolve(host: host, port: port, passive: passive, numericOnly: true) { return literal }
        let resolved = await BlockingCall.run("contrail-dns") {
            Result { () throws(NetworkError) in try resolve(host: host, port: port, passive: passive) }
        }
        return try resolved.get()
    }

    /// Resolves `host` (a name, an IPv4 literal, or an IPv6 literal with or without brackets) with
    /// `getaddrinfo`, which blocks; call it off the event loop.
    /// - Parameter passive: resolve for `bind` (an empty host then means every interface).
    /// - Parameter numericOnly: accept IP literals only (`AI_NUMERICHOST`: no lookup, never blocks).
    /// - Throws: `NetworkError.unknownHost` when the name does not resolve.
    static func resolve(host: String, port: UInt16, passive: Bool = false, numericOnly: Bool = false) throws(NetworkError)
        -> [SocketAddress]
    {
        var name = host
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Platform.streamSocketType
        hints.ai_protocol = Int32(IPPROTO_TCP)
        hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0) | (numericOnly ? AI_NUMERICHOST : 0)
        var list: UnsafeMutablePointer<addrinfo>?
        let status: Int32 =
            if name.isEmpty && passive {
                getaddrinfo(nil, String(port), &hints, &list)
            } else {
                getaddrinfo(name, String(port), &hints, &list)
            }
        guard status == 0, let first = list else {
            if status == EAI_SYSTEM { throw .io(errno: errno, "getaddrinfo(\(host))") }
            throw .unknownHost(host)
        }
        defer { freeaddrinfo(first) }
        var addresses: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let address = entry.pointee.ai_addr,
               entry.pointee.ai_family == AF_INET || entry.pointee.ai_family == AF_INET6 {
                var storage = sockaddr_storage()
                let length = min(Int(entry.pointee.ai_addrlen), MemoryLayout<sockaddr_storage>.size)
                withUnsafeMutableBytes(of: &storage) { target in
                    target.copyMemory(from: UnsafeRawBufferPointer(start: address, count: length))
                }
                addresses.append(SocketAddress(storage: storage, length: socklen_t(length)))
            }
            cursor = entry.pointee.ai_next
        }
        guard !addresses.isEmpty else { throw .unknownHost(host) }
        return addresses
    }

    /// The local address a socket is bound to.
    static func local(of fd: Int32) -> SocketAddress? {
        address(of: fd, getsockname)
    }

    /// The address of a connected socket's peer.
    package static func peer(of fd: Int32) -> SocketAddress? {
        address(of: fd, getpeername)
    }

    private static func address(
        of fd: Int32, _ call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
    ) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, &length) }
        }
        guard result == 0 else { return nil }
        return SocketAddress(storage: storage, length: length)
    }
}
