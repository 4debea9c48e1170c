import Foundation

/// The type names of the frameworks an app imports next to Contrail: read from the toolchain's
/// module interfaces where it ships them (the standard library, concurrency, Observation,
/// Synchronization, string processing), listed here for Foundation, Dispatch, Combine and SwiftUI
/// (no interface on Linux; SwiftUI is not on Linux at all).
enum FrameworkTypeNames {
    /// Modules whose `.swiftinterface` the toolchain ships.
    static let interfaceModules = ["Swift", "_Concurrency", "Observation", "Synchronization", "_StringProcessing"]

    /// SwiftUI's public types that app code names most (SwiftUI is not available on Linux).
    static let swiftUI: Set<String> = [
        "Alert", "Alignment", "Anchor", "Angle", "AngularGradient", "Animation", "AnyLayout", "AnyShape", "AnyTransition",
        "AnyView", "App", "AppStorage", "Axis", "Binding", "Bindable", "Button", "Canvas", "Capsule", "Circle", "Color",
        "ColorPicker", "Commands", "ContentUnavailableView", "ContentView", "DatePicker", "DisclosureGroup", "Divider",
        "DocumentGroup", "Edge", "EdgeInsets", "Ellipse", "EmptyView", "Environment", "EnvironmentObject",
        "EnvironmentValues", "FocusState", "Font", "ForEach", "Form", "Gauge", "GeometryProxy", "GeometryReader",
        "Gradient", "Grid", "GridItem", "GridRow", "Group", "GroupBox", "HStack", "Image", "Label", "LabeledContent",
        "Layout", "LazyHGrid", "LazyHStack", "LazyVGrid", "LazyVStack", "LinearGradient", "Link", "List", "Material",
        "Menu", "Namespace", "NavigationLink", "NavigationPath", "NavigationSplitView", "NavigationStack",
        "NavigationView", "ObservedObject", "OutlineGroup", "Path", "Picker", "ProgressView", "RadialGradient",
        "Rectangle", "RoundedRectangle", "Scene", "ScenePhase", "SceneStorage", "ScrollView", "ScrollViewReader",
        "SecureField", "Section", "Settings", "Shape", "ShapeStyle", "Slider", "Spacer", "State", "StateObject",
        "Stepper", "Tab", "TabView", "Table", "TableColumn", "Text", "TextEditor", "TextField", "TimelineView", "Toggle",
        "ToolbarItem", "ToolbarItemGroup", "Transaction", "Transition", "UnitPoint", "View", "ViewBuilder",
        "ViewModifier", "Visibility", "VStack", "Window", "WindowGroup", "ZStack",
    ]

    /// Foundation's, Dispatch's and Combine's public types that app code names most.
    static let foundation: Set<String> = [
        "AffineTransform", "AttributedString", "BlockOperation", "Bundle", "ByteCountFormatter", "Calendar",
        "CharacterSet", "CocoaError", "Data", "Date", "DateComponents", "DateFormatter", "DateInterval", "Decimal",
        "Expression", "FileHandle", "FileManager", "FormatStyle", "Formatter", "Host", "HTTPCookie", "HTTPURLResponse",
        "IndexPath", "IndexSet", "InputStream", "ISO8601DateFormatter", "JSONDecoder", "JSONEncoder",
        "JSONSerialization", "ListFormatter", "Locale", "Measurement", "MessagePort", "Notification",
        "NotificationCenter", "NotificationQueue", "NSCache", "NSCondition", "NSError", "NSLock", "NSNumber", "NSObject",
        "NSRecursiveLock", "NSString", "NumberFormatter", "Operation", "OperationQueue", "OutputStream",
        "PersonNameComponents", "Pipe", "Port", "Predicate", "Process", "ProcessInfo", "Progress",
        "PropertyListDecoder", "PropertyListEncoder", "PropertyListSerialization", "RelativeDateTimeFormatter",
        "RunLoop", "Scanner", "SocketPort", "SortDescriptor", "Stream", "Thread", "Timer", "TimeZone", "UndoManager",
        "Unit", "URL", "URLComponents", "URLError", "URLQueryItem", "URLRequest", "URLResponse", "URLSession",
        "URLSessionWebSocketTask", "UserDefaults", "UUID", "XMLParser",
        "DispatchData", "DispatchGroup", "DispatchIO", "DispatchQoS", "DispatchQueue", "DispatchSemaphore",
        "DispatchSource", "DispatchSpecificKey", "DispatchTime", "DispatchTimeInterval", "DispatchWallTime",
        "DispatchWorkItem",
        "AnyCancellable", "AnyPublisher", "Cancellable", "Future", "Just", "Published", "Publisher", "Subject",
        "Subscriber", "Subscription",
    ]

    /// All of them. Throws when the toolchain's interfaces cannot be found (so the check cannot pass
    /// by reading nothing).
    static func all() throws -> Set<String> {
        var names = swiftUI.union(foundation)
        let interfaces = try interfaceFiles()
        for file in interfaces {
            let text = try String(contentsOf: file, encoding: .utf8)
            for line in text.split(separator: "\n") where !line.hasPrefix(" ") {
                var words = line.split(separator: " ").map(String.init)[...]
                while let first = words.first, first.hasPrefix("@") || ["public", "open", "final", "indirect"].contains(first) {
                    words = words.dropFirst()
                }
                guard let keyword = words.first, ["class", "struct", "enum", "protocol", "actor", "typealias"].contains(keyword),
                      let name = words.dropFirst().first else { continue }
                names.insert(String(name.prefix { $0.isLetter || $0.isNumber || $0 == "_" }))
            }
        }
        return names
    }

    struct ToolchainNotFound: Error, CustomStringConvertible {
        var description: String { "the Swift toolchain's module interfaces were not found (from the swift on PATH)" }
    }

    /// The `.swiftinterface` of each of `interfaceModules`, next to the `swift` found on PATH.
    static func interfaceFiles() throws -> [URL] {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let manager = FileManager.default
        for directory in path.split(separator: ":") {
            let swift = URL(fileURLWithPath: String(directory)).appendingPathComponent("swift")
            guard manager.isExecutableFile(atPath: swift.path) else { continue }
            let lib = swift.resolvingSymlinksInPath().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("lib/swift")
            var found: [URL] = []
            for platform in ["linux", "macosx"] {
                for module in interfaceModules {
                    let folder = lib.appendingPathComponent("\(platform)/\(module).swiftmodule")
                    let entries = (try? manager.contentsOfDirectory(atPath: folder.path)) ?? []
                    if let interface = entries.first(where: { $0.hasSuffix(".swiftinterface") && !$0.hasSuffix(".private.swiftinterface") }) {
                        found.append(folder.appendingPathComponent(interface))
                    }
                }
            }
            if found.count >= interfaceModules.count { return found }
        }
        throw ToolchainNotFound()
    }
}
