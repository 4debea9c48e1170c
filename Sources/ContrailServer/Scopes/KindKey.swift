/// The key under which a property's kind is remembered.
struct KindKey: Hashable, Sendable {
    var className: String
    var property: String
}
