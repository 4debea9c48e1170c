/// One file the page server sends: its content type and bytes. The files are in `Pages/Assets/`,
/// compiled into the module by SwiftPM (`.embedInCode` in `Package.swift`, which generates
/// `PackageResources`), so `contrail serve` carries them without a resource bundle and sends each
/// file's bytes exactly as they are on disk.
struct PageAsset: Sendable {
    /// The `Content-Type` header value.
    let contentType: String
    /// The body as sent.
    let body: [UInt8]

    /// The content types the pages use.
    static let html = "text/html; charset=utf-8"
    static let javaScript = "text/javascript; charset=utf-8"
    static let css = "text/css; charset=utf-8"
    static let svg = "image/svg+xml"

    /// The assets by request path (without query); each from the file in `Assets/` named
    /// like its `PackageResources` member (`contrail_js` is `Assets/contrail.js`).
    static let byPath: [String: PageAsset] = [
        "/": PageAsset(contentType: html, body: PackageResources.inspector_html),
        "/inspector.js": PageAsset(contentType: javaScript, body: PackageResources.inspector_js),
        "/inspector-timeline.js": PageAsset(contentType: javaScript, body: PackageResources.inspector_timeline_js),
        "/demo": PageAsset(contentType: html, body: PackageResources.demo_html),
        "/demo.js": PageAsset(contentType: javaScript, body: PackageResources.demo_js),
        "/contrail.js": PageAsset(contentType: javaScript, body: PackageResources.contrail_js),
        "/contrail-query.js": PageAsset(contentType: javaScript, body: PackageResources.contrail_query_js),
        "/demo-list.js": PageAsset(contentType: javaScript, body: PackageResources.demo_list_js),
        "/contrail-store.js": PageAsset(contentType: javaScript, body: PackageResources.contrail_store_js),
        "/contrail-text.js": PageAsset(contentType: javaScript, body: PackageResources.contrail_text_js),
        "/demo-caption.js": PageAsset(contentType: javaScript, body: PackageResources.demo_caption_js),
        "/contrail-counter.js": PageAsset(contentType: javaScript, body: PackageResources.contrail_counter_js),
        "/contrail-collections.js": PageAsset(contentType: javaScript, body: PackageResources.contrail_collections_js),
        "/pages.css": PageAsset(contentType: css, body: PackageResources.pages_css),
        // Browsers ask for /favicon.ico on every page: the SVG icon, which they accept by its type.
        "/favicon.ico": PageAsset(contentType: svg, body: PackageResources.favicon_svg),
        "/contrail-presence.js": PageAsset(contentType: javaScript, body: PackageResources.contrail_presence_js),
        "/demo-presence.js": PageAsset(contentType: javaScript, body: PackageResources.demo_presence_js),
    ]
}
