// swift-tools-version: 6.0
import PackageDescription

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
        .target(name: "ContrailWebSocket", dependencies: ["CContrailSystem"]),
        .target(name: "Contrail", dependencies: ["ContrailWebSocket"]),
        .target(name: "ContrailServer", dependencies: ["Contrail", "ContrailWebSocket", "ContrailNATS"], exclude: ["Pages/Screenshots"]),
        .target(name: "ContrailNATS", dependencies: ["ContrailWebSocket"]),
        // Models in a library of their own, for the benchmark's cross-module figure.
        .target(name: "ContrailBenchModels", dependencies: ["Contrail"]),
        // The convergence fuzzer, shared by `contrail fuzz` and the tests (not a product).
        .target(name: "ContrailFuzz", dependencies: ["Contrail", "ContrailServer", "ContrailWebSocket"]),
        .executableTarget(name: "ContrailCLI", dependencies: ["Contrail", "ContrailServer", "ContrailWebSocket", "ContrailNATS", "ContrailFuzz", "ContrailBenchModels"]),
        .executableTarget(name: "Playground", dependencies: ["Contrail", "ContrailServer"], path: "Playground"),
        .testTarget(name: "ContrailWebSocketTests", dependencies: ["ContrailWebSocket"]),
        .testTarget(name: "ContrailTests", dependencies: ["Contrail"]),
        .testTarget(name: "ContrailNATSTests", dependencies: ["ContrailNATS", "ContrailWebSocket", "Contrail", "ContrailServer"]),
        .testTarget(name: "ContrailServerTests", dependencies: ["Contrail", "ContrailServer", "ContrailWebSocket", "ContrailFuzz"]),
    ]
)
