/// One file the page server sends: its content type and bytes. The files themselves are Swift string
/// literals in `PageAsset+*.swift`, so `contrail serve` carries them without a resource bundle.
struct PageAsset: Sendable {
    /// The `Content-Type` header value.
    let contentType: String
    /// The body as sent.
    let body: [UInt8]

    init(contentType: String, text: String) {
        self.contentType = contentType
        self.body = Array(text.utf8)
    }

    /// The assets by request path (without query).
    static let byPath: [String: PageAsset] = [
        "/": PageAsset(contentType: "text/html; charset=utf-8", text: inspectorHTML),
        "/inspector.js": PageAsset(contentType: "text/javascript; charset=utf-8", text: inspectorJS),
        "/demo": PageAsset(contentType: "text/html; charset=utf-8", text: demoHTML),
        "/demo.js": PageAsset(contentType: "text/javascript; charset=utf-8", text: demoJS),
        "/contrail.js": PageAsset(contentType: "text/javascript; charset=utf-8", text: contrailJS),
        "/pages.css": PageAsset(contentType: "text/css; charset=utf-8", text: pagesCSS),
    ]
}
