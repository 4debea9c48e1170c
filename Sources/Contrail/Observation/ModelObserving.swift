/// The observation API of `ModelObject`, with key paths typed by the observed class.
///
/// ```swift
/// shape.observeChange(self) { … }                       // any property, once per turn
/// shape.observeChange(self, \.x, \.y) { … }             // some properties, once per turn
/// shape.observeChangeImmediately(self, \.x) { … }       // synchronously, once per change
/// canvas.observeCollectionAdd(self, \.shapes) { shape, index in … }
/// canvas.observeTreeChange(self) { … }                  // canvas or anything below it changed
/// shape.observeDetach(self) { scope in … }
/// ```
/// Every call returns a token whose `cancel()` stops it; `removeObservers(observer)` stops all of an
/// observer's; observers are held weakly, so releasing the observer stops delivery too.
@MainActor
public protocol ModelObserving: ModelObject {}

extension ModelObject: ModelObserving {}

extension ModelObserving {
    private func indices(_ keyPaths: [PartialKeyPath<Self>]) -> [Int] {
        let info = self.info
        return keyPaths.flatMap { info.indices(for: $0) }
    }

    /// Calls `body` once after the turn in which any property changed.
    @discardableResult
    public func observeChange(_ observer: AnyObject, _ body: @escaping @MainActor () -> Void) -> ObservationToken {
        addObserver(observer, .change(immediate: false, properties: nil), .plain(body))
    }

    /// Calls `body` once after the turn in which any of the key paths changed.
    @discardableResult
    public func observeChange(_ observer: AnyObject, _ keyPaths: PartialKeyPath<Self>..., body: @escaping @MainActor () -> Void) -> ObservationToken {
        observeChange(observer, keyPaths: keyPaths, body)
    }

    /// Calls `body` once after the turn in which any of the key paths changed.
    @discardableResult
    public func observeChange(_ observer: AnyObject, keyPaths: [PartialKeyPath<Self>], _ body: @escaping @MainActor () -> Void) -> ObservationToken {
        addObserver(observer, .change(immediate: false, properties: indices(keyPaths)), .plain(body))
    }

    /// Calls `body` synchronously on every change of any property.
    @discardableResult
    public func observeChangeImmediately(_ observer: AnyObject, _ body: @escaping @MainActor () -> Void) -> ObservationToken {
        addObserver(observer, .change(immediate: true, properties: nil), .plain(body))
    }

    /// Calls `body` synchronously on every change of one of the key paths.
    @discardableResult
    public func observeChangeImmediately(_ observer: AnyObject, _ keyPaths: PartialKeyPath<Self>..., body: @escaping @MainActor () -> Void) -> ObservationToken {
        observeChangeImmediately(observer, keyPaths: keyPaths, body)
    }

    /// Calls `body` synchronously on every change of one of the key paths.
    @discardableResult
    public func observeChangeImmediately(_ observer: AnyObject, keyPaths: [PartialKeyPath<Self>], _ body: @escaping @MainActor () -> Void) -> ObservationToken {
        addObserver(observer, .change(immediate: true, properties: indices(keyPaths)), .plain(body))
    }

    /// Calls `body` with each element added to the collection and its index in the new contents.
    @discardableResult
    public func observeCollectionAdd<Element: ModelObject>(_ observer: AnyObject, _ keyPath: KeyPath<Self, [Element]>, _ body: @escaping @MainActor (Element, Int) -> Void) -> ObservationToken {
        addObserver(observer, .collectionAdd(property: info.indices(for: keyPath)[0]), .element { element, index in
            if let element = element as? Element { body(element, index) }
        })
    }

    /// Calls `body` with each element removed from the collection and the index it had.
    @discardableResult
    public func observeCollectionRemove<Element: ModelObject>(_ observer: AnyObject, _ keyPath: KeyPath<Self, [Element]>, _ body: @escaping @MainActor (Element, Int) -> Void) -> ObservationToken {
        addObserver(observer, .collectionRemove(property: info.indices(for: keyPath)[0]), .element { element, index in
            if let element = element as? Element { body(element, index) }
        })
    }

    /// Calls `body` once after the turn in which this object or anything below it changed.
    @discardableResult
    public func observeTreeChange(_ observer: AnyObject, _ body: @escaping @MainActor () -> Void) -> ObservationToken {
        addObserver(observer, .treeChange, .plain(body))
    }

    /// Calls `body` when the object joins a scope.
    @discardableResult
    public func observeAttach(_ observer: AnyObject, _ body: @escaping @MainActor (Scope) -> Void) -> ObservationToken {
        addObserver(observer, .attach, .scope(body))
    }

    /// Calls `body` when the object leaves its scope (it lost its last attached parent).
    @discardableResult
    public func observeDetach(_ observer: AnyObject, _ body: @escaping @MainActor (Scope) -> Void) -> ObservationToken {
        addObserver(observer, .detach, .scope(body))
    }

    /// Calls `body` with the parent and property name whenever the object is put under a parent.
    @discardableResult
    public func observeAddedToParent(_ observer: AnyObject, _ body: @escaping @MainActor (ModelObject, String) -> Void) -> ObservationToken {
        addObserver(observer, .addedToParent, .parent(body))
    }

    /// Calls `body` with the parent and property name whenever the object is taken from a parent.
    @discardableResult
    public func observeRemovedFromParent(_ observer: AnyObject, _ body: @escaping @MainActor (ModelObject, String) -> Void) -> ObservationToken {
        addObserver(observer, .removedFromParent, .parent(body))
    }

    /// The values of a property, once per turn in which it changed, as an `AsyncSequence`.
    /// The sequence ends when the consuming task is cancelled.
    public func values<Value: Sendable>(of keyPath: KeyPath<Self, Value>) -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(64))
        let box = StreamObserver()
        let token = observeChange(box, keyPaths: [keyPath]) { [weak self] in
            guard let self else { return }
            continuation.yield(self[keyPath: keyPath])
        }
        box.token = token
        continuation.onTermination = { _ in
            Task { @MainActor in box.token?.cancel(); box.token = nil }
        }
        return stream
    }
}

/// Keeps an `AsyncStream`'s observation alive until the stream terminates.
@MainActor
final class StreamObserver {
    var token: ObservationToken?
}
