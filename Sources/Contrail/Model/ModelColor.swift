/// An RGBA color, 0–255 per channel. On the wire it is the unsigned 32-bit number `0xRRGGBBAA`
/// (opaque `#1dd2af` is 500346879), as Jetstream sends `UIColor`.
public struct ModelColor: Hashable, Sendable, CustomStringConvertible {
    /// The red component, 0 to 255.
    public var red: UInt8
    /// The green component, 0 to 255.
    public var green: UInt8
    /// The blue component, 0 to 255.
    public var blue: UInt8
    /// The opacity, 0 (transparent) to 255 (opaque).
    public var alpha: UInt8

    /// A color from its channels, opaque unless `alpha` says otherwise.
    public init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8 = 255) {
        self.red = red
        self.green = green
        self.blue = blue
        self.alpha = alpha
    }

    /// `ModelColor(rgba: 0x1DD2AFFF)`.
    public init(rgba: UInt32) {
        self.init(red: UInt8(rgba >> 24), green: UInt8((rgba >> 16) & 0xFF),
                  blue: UInt8((rgba >> 8) & 0xFF), alpha: UInt8(rgba & 0xFF))
    }

    /// The packed `0xRRGGBBAA` value.
    public var rgba: UInt32 {
        UInt32(red) << 24 | UInt32(green) << 16 | UInt32(blue) << 8 | UInt32(alpha)
    }

    /// Opaque black.
    public static let black = ModelColor(rgba: 0x0000_00FF)
    /// Opaque white.
    public static let white = ModelColor(rgba: 0xFFFF_FFFF)
    /// Opaque red.
    public static let red = ModelColor(rgba: 0xFF00_00FF)
    /// Opaque green.
    public static let green = ModelColor(rgba: 0x00FF_00FF)
    /// Opaque blue.
    public static let blue = ModelColor(rgba: 0x0000_FFFF)
    /// Fully transparent.
    public static let clear = ModelColor(rgba: 0)

    /// The value in words.
    public var description: String {
        "#" + [red, green, blue, alpha].map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }

}
