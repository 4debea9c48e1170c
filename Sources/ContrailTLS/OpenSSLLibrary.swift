import ContrailSupport

/// The system's OpenSSL 3 (`libssl.so.3`, which brings `libcrypto.so.3`), loaded at run time.
///
/// Contrail does not link OpenSSL at build time: its headers (`libssl-dev`) are not among the Swift
/// toolchain's documented dependencies, so a fresh machine could not build the package. The
/// shared library itself is there wherever Foundation's networking is (libcurl needs it), so the
/// package builds everywhere and TLS fails with a typed error only where no OpenSSL 3 is installed.
///
/// Each user of the library resolves the functions it calls with ``symbol(_:as:)`` once, into
/// typed `@convention(c)` function values. Loading happens once per process, on first use
/// (`dlopen` reads from disk: call it while configuring, not on an event loop).
package struct OpenSSLLibrary: @unchecked Sendable {
    // Invariant for @unchecked Sendable: `handle` is a dlopen handle, never closed and never
    // mutated; dlsym on it is thread-safe.
    private let handle: UnsafeMutableRawPointer

    /// The process's copy, loaded on first use. O(1) after the first call.
    package static func shared() throws(OpenSSLUnavailable) -> OpenSSLLibrary {
        switch loaded {
        case .success(let library): return library
        case .failure(let error): throw error
        }
    }

    private static let loaded: Result<OpenSSLLibrary, OpenSSLUnavailable> = {
        var reasons: [String] = []
        for name in ["libssl.so.3", "libssl.3.dylib", "libssl.so"] {
            if let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) {
                return .success(OpenSSLLibrary(handle: handle))
            }
            reasons.append(dlerror().map { String(cString: $0) } ?? name)
        }
        return .failure(OpenSSLUnavailable(reason: "OpenSSL 3 could not be loaded (install libssl3): "
            + reasons.joined(separator: "; ")))
    }()

    /// The function `name` of libssl or libcrypto, as `type` (a `@convention(c)` function type
    /// matching OpenSSL 3's declaration exactly).
    package func symbol<Function>(_ name: String, as type: Function.Type) throws(OpenSSLUnavailable) -> Function {
        guard let address = dlsym(handle, name) else {
            throw OpenSSLUnavailable(reason: "the loaded OpenSSL has no \(name) (OpenSSL 3 is required)")
        }
        return unsafeBitCast(address, to: type)
    }
}

/// OpenSSL 3 is not installed, or lacks a function Contrail calls.
package struct OpenSSLUnavailable: Error, CustomStringConvertible, Equatable {
    /// What failed to load, as `dlopen`/`dlsym` said it.
    package let reason: String
    package var description: String { reason }
}
