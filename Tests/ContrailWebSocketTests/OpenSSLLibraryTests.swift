import ContrailTLS
import Testing

@Suite("OpenSSL library")
struct OpenSSLLibraryTests {
    @Test("the system's OpenSSL 3 loads and resolves a function")
    func loadsAndResolves() throws {
        let library = try OpenSSLLibrary.shared()
        let versionNumber = try library.symbol("OpenSSL_version_num", as: (@convention(c) () -> UInt).self)
        #expect(versionNumber() >= 0x3000_0000)
    }

    @Test("a function the library lacks is a typed error naming it")
    func missingSymbolIsTyped() throws {
        let library = try OpenSSLLibrary.shared()
        #expect(throws: OpenSSLUnavailable.self) {
            _ = try library.symbol("Contrail_no_such_function", as: (@convention(c) () -> Void).self)
        }
        do {
            _ = try library.symbol("Contrail_no_such_function", as: (@convention(c) () -> Void).self)
        } catch {
            #expect(error.reason.contains("Contrail_no_such_function"))
        }
    }
}
