// swift-tools-version: 6.2
import PackageDescription

// The layers point one way (the README's design section says the rule for each arrow, and
// `Tests/ContrailTests/ModuleLayeringTests.swift` fails when a forbidden import appears):
//
//   CContrailSystem ← ContrailSupport ← ContrailTLS ← ContrailWebSocket ─┐
//                                     ← ContrailWire ─────────────────────┴─ ← ContrailTransport ← Contrail
//                                       ContrailTLS ← ContrailNATS                               ← ContrailServer
//
// The server links the wire layer, never the model layer (`Contrail`).
let package = Package(
    name: "Contrail",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "Contrail", targets: ["Contrail"]),
        .library(name: "ContrailWebSocket", targets: ["ContrailWebSocket"]),
        .library(name: "ContrailServer", targets: ["ContrailServer"]),
        .library(name: "ContrailNATS", targets: ["ContrailNATS"]),
        .executable(name: "contrail", targets: ["ContrailCLI"]),
        .executable(name: "Playground", targets: ["Playground"]),
    ],
    targets: [
        // epoll/eventfd are not exported by Swift's Glibc module; this header makes them callable.
        .target(name: "CContrailSystem"),
        // The event loop, TCP, locks and typed async streams: what every networked layer stands on.
        .target(name: "ContrailSupport", dependencies: ["CContrailSystem"]),
        // TLS and the crypto JWTs need, from the system's OpenSSL 3 loaded at run time (no headers).
        .target(name: "ContrailTLS", dependencies: ["ContrailSupport"]),
        // RFC 6455 only: handshake, frames, the connection and the server.
        .target(name: "ContrailWebSocket", dependencies: ["ContrailSupport", "ContrailTLS"]),
        // A NATS client (core protocol and the JetStream API) for the cluster mode.
        .target(name: "ContrailNATS", dependencies: ["ContrailSupport", "ContrailTLS"]),
        // What client and server exchange: JSON, messages, fragments, the log format, transports.
        .target(name: "ContrailWire", dependencies: ["ContrailSupport", "CContrailSystem"]),
        // Sync transports over WebSocket connections: the client's connectors, the server's adapter.
        .target(name: "ContrailTransport", dependencies: ["ContrailWire", "ContrailWebSocket", "ContrailTLS"]),
        // What an app imports: models, observation, scopes, persistence and the sync client.
        .target(name: "Contrail", dependencies: ["ContrailWire", "ContrailTransport"]),
        // The sync server: fragment state, sessions, persistence, cluster, pages. No model layer.
        // The pages' files are compiled in as byte arrays (`PackageResources.contrail_js`, …): no bundle.
        .target(name: "ContrailServer", dependencies: ["ContrailWire", "ContrailTransport", "ContrailWebSocket", "ContrailNATS", "ContrailTLS"],
                // Assets/package.json tells Node and editors that the `.js` files are ES modules; not served.
                exclude: ["Pages/Assets/package.json"],
                resources: [.embedInCode("Pages/Assets/contrail.js"), .embedInCode("Pages/Assets/contrail-store.js"),
                            .embedInCode("Pages/Assets/contrail-collections.js"), .embedInCode("Pages/Assets/pages.css"),
                            .embedInCode("Pages/Assets/demo.html"), .embedInCode("Pages/Assets/demo.js"),
                            .embedInCode("Pages/Assets/inspector.html"), .embedInCode("Pages/Assets/inspector.js"),
                            .embedInCode("Pages/Assets/inspector-timeline.js"),
                            .embedInCode("Pages/Assets/favicon.svg"),
                            .embedInCode("Pages/Assets/contrail-presence.js"), .embedInCode("Pages/Assets/demo-presence.js"),
                            .embedInCode("Pages/Assets/contrail-text.js"), .embedInCode("Pages/Assets/demo-caption.js"),
                            .embedInCode("Pages/Assets/contrail-counter.js"),
                            .embedInCode("Pages/Assets/contrail-query.js"), .embedInCode("Pages/Assets/demo-list.js")]),
        // Models in a library of their own, for the benchmark's cross-module figure.
        .target(name: "ContrailBenchModels", dependencies: ["Contrail"]),
        // The convergence fuzzer, shared by `contrail fuzz` and the tests (not a product).
        .target(name: "ContrailFuzz", dependencies: ["Contrail", "ContrailServer", "ContrailWebSocket"]),
        .executableTarget(name: "ContrailCLI", dependencies: ["Contrail", "ContrailServer", "ContrailWebSocket", "ContrailNATS", "ContrailFuzz", "ContrailBenchModels"]),
        .executableTarget(name: "Playground", dependencies: ["Contrail", "ContrailServer"], path: "Playground"),
        // What the test targets share: a virtual-time clock, bounded waits, child processes.
        .target(name: "ContrailTestSupport", dependencies: ["ContrailSupport", "Contrail", "CContrailTestSetup"], path: "Tests/ContrailTestSupport"),
        // Bounds how many tests run at once (before Swift Testing starts; see its TestSetup.c).
        .target(name: "CContrailTestSetup", path: "Tests/CContrailTestSetup"),
        .testTarget(name: "ContrailWebSocketTests", dependencies: ["ContrailTestSupport", "ContrailWebSocket", "ContrailSupport", "ContrailTLS"]),
        .testTarget(name: "ContrailTests", dependencies: ["ContrailTestSupport", "Contrail", "ContrailWire"]),
        .testTarget(name: "ContrailNATSTests", dependencies: ["ContrailTestSupport", "ContrailNATS", "ContrailFuzz", "ContrailSupport", "ContrailWebSocket", "Contrail", "ContrailServer"]),
        .testTarget(name: "DocumentationTests", dependencies: ["Contrail", "ContrailServer", "ContrailWebSocket"]),
        .testTarget(name: "ContrailServerTests", dependencies: ["ContrailTestSupport", "Contrail", "ContrailWire", "ContrailServer", "ContrailWebSocket", "ContrailFuzz", "ContrailTLS"],
                    exclude: ["Screenshots"]),
    ]
)
