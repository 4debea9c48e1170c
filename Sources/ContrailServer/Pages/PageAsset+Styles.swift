// The page assets as Swift string literals, so the server binary carries them (no resource bundle).
extension PageAsset {
    /// `/pages.css`: the style both pages share.
    static let pagesCSS = #"""
    body { font: 14px system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #222; }
    header { display: flex; gap: 16px; align-items: center; padding: 10px 16px; background: #1f2430; color: #fff; }
    header h1 { font-size: 16px; margin: 0 12px 0 0; }
    header a { color: #9cf; }
    #status { margin-left: auto; font-size: 12px; padding: 3px 8px; border-radius: 10px; background: #555; color: #fff; }
    #status.online { background: #1b8a3a; }
    """#
}
