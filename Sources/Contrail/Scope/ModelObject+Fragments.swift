import Foundation

/// How the scope turns an object into wire fragments (the model layer knows nothing of fragments).
extension ModelObject {
    /// An `add` fragment holding every synced property's current wire value.
    func addFragment() -> SyncFragment {
        var values: [String: JSON] = [:]
        var texts: [String: JSON] = [:]
        for property in info.properties where property.isSynced {
            values[property.name] = info.coder(at: property.index).wireValue(in: self, offset: property.offset)
            // A shared text goes whole, as its state (§8.21): what it had not sent yet is in it.
            if let text = value(at: property.index) as? SharedText {
                _ = text.storage.takeUnsent()
                texts[property.name] = text.storage.document.stateJSON
            }
        }
        return SyncFragment(kind: .add, uuid: uuid, className: className, properties: values,
                            textOperations: texts.isEmpty ? nil : texts)
    }

    /// Wire value of a property by index.
    func wireValue(at index: Int) -> JSON {
        let property = info.properties[index]
        return info.coder(at: index).wireValue(in: self, offset: property.offset)
    }
}
