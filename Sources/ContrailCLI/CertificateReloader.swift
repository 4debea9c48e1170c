import ContrailServer
import ContrailSupport
import Dispatch
import Foundation

/// `contrail serve --tls-cert/--tls-key`: reads the certificate and key again on SIGHUP, so they
/// rotate without a restart. A file that fails to load leaves the current certificate in place and
/// the reason is logged.
final class CertificateReloader: Sendable {
    private let source: SanitizerVisibleMutex<(any DispatchSourceSignal)?>

    /// Starts listening for SIGHUP; reloads `context` (on a queue of its own, never an event loop).
    init(_ context: TLSServerContext, log: @escaping @Sendable (String) -> Void) {
        signal(SIGHUP, SIG_IGN)
        let signals = DispatchSource.makeSignalSource(signal: SIGHUP, queue: DispatchQueue(label: "contrail.serve.sighup"))
        signals.setEventHandler {
            do throws(TLSError) {
                try context.reload()
                log("contrail serve: SIGHUP: reloaded the TLS certificate \(context.certificateChainPath) and key \(context.privateKeyPath)")
            } catch {
                log("contrail serve: SIGHUP: keeping the current TLS certificate: \(error)")
            }
        }
        signals.resume()
        source = SanitizerVisibleMutex(signals)
    }

    /// Stops listening.
    func stop() {
        source.withLock { $0?.cancel() }
    }
}
