@testable import ContrailSupport
import Testing

@Suite("Socket addresses")
struct SocketAddressTests {
    @Test("IP literals convert without a lookup; names need one")
    func literalsConvertWithoutALookup() throws {
        let v4 = try SocketAddress.resolve(host: "127.0.0.1", port: 80, numericOnly: true)
        #expect(v4.map(\.family) == [Int32(AF_INET)])
        let v6 = try SocketAddress.resolve(host: "[::1]", port: 80, numericOnly: true)
        #expect(v6.map(\.family) == [Int32(AF_INET6)])
        // A name is not a literal: refused without a lookup, and resolved by the normal path (control).
        #expect(throws: NetworkError.self) { try SocketAddress.resolve(host: "localhost", port: 80, numericOnly: true) }
        #expect(try !SocketAddress.resolve(host: "localhost", port: 80).isEmpty)
    }

    @Test("the asynchronous resolution gives literals and names alike")
    func asynchronousResolution() async throws {
        let literal = try await SocketAddress.resolveInBackground(host: "127.0.0.1", port: 443)
        #expect(literal.count == 1)
        let name = try await SocketAddress.resolveInBackground(host: "localhost", port: 443)
        #expect(!name.isEmpty)
        await #expect(throws: NetworkError.self) {
            try await SocketAddress.resolveInBackground(host: "no-such-host.invalid", port: 443)
        }
    }
}
