/// The observation API of `ModelObject`, with key paths typed by the observed class.
///
/// ```swift
/// shape.observeChange(self) { shape in … }                   // any property, once per turn
/// try shape.observeChange(self, \.x, \.y) { shape in … }     // some properties, once per turn
/// try shape.observeChangeImmediately(self, \.x) { shape in … }   // synchronously, once per change
/// try canvas.observeCollectionAdd(self, \.shapes) { shape, index in … }
/// canvas.observeTreeChange(self) { canvas in … }             // canvas or anything below it changed
/// shape.observeDetach(self) { scope in … }
/// ```
/// Change and tree callbacks receive the observed object, so the closure need not capture it: a
/// closure that captures its own subject strongly keeps that subject alive for as long as the
/// observer lives. Forms whose closure takes no argument remain for callbacks that need nothing.
///
/// Every call returns a token whose `cancel()` stops it; `removeObservers(observer)` stops all of an
/// observer's; observers are held weakly, so releasing the observer stops delivery at once, and its
/// callbacks (with whatever their closures captured) are released at the end of the first delivery
/// turn that ends after it died: the run-loop turn in which Contrail delivers notifications or
/// flushes scopes (so the one it died in, when it died in a callback), or a `drain()`.
/// A key path that is neither a `@Property` nor a composite property throws
/// `ObservationError.notAProperty`.
@MainActor
public protocol ModelObserving: ModelObject {}

extension ModelObject: ModelObserving {}

extension ModelObserving {
    private func indices(_ keyPaths: [PartialKeyPath<Self>]) throws(ObservationError) -> [Int] {
        let info = self.info
        var result: [Int] = []
        for keyPath in keyPaths { result += try info.indices(for: keyPath) }
        return result
    }

    private static func subject(_ body: @escaping @MainActor (Self) -> Void) -> ObserverEntry.Callback {
        // The entry's subject is always this object, so the downcast cannot fail.
        .subject { object in body(unsafeDowncast(object, to: Self.self)) }
    }

    // MARK: - Changes, once per turn

    /// Calls `body` with the object once after the turn in which any property changed.
    @discardableResult
    public func observeChange(_ observer: AnyObject, _ body: @escaping @MainActor (Self) -> Void) -> ObservationToken {
        addObserver(observer, .change(immediate: false, properties: nil), Self.subject(body))
    }

    /// Calls `body` once after the turn in which any property changed.
    @discardableResult
    public func observeChange(_ observer: AnyObject, _ body: @escaping @MainActor () -> Void) -> ObservationToken {
        addObserver(observer, .change(immediate: false, properties: nil), .plain(body))
    }

    /// Calls `body` with the object once after the turn in which any of the key paths changed.
    @discardableResult
    public func observeChange(_ observer: AnyObject, _ keyPaths: PartialKeyPath<Self>..., body: @escaping @MainActor (Self) -> Void) throws(ObservationError) -> ObservationToken {
        addObserver(observer, .change(immediate: false, properties: try indices(keyPaths)), Self.subject(body))
    }

    /// Calls `body` once after the turn in which any of the key paths changed.
    @discardableResult
    public func observeChange(_ observer: AnyObject, _ keyPaths: PartialKeyPath<Self>..., body: @escaping @MainActor () -> Void) throws(ObservationError) -> ObservationToken {
        try observeChange(observer, keyPaths: keyPaths, body)
    }

    /// Calls `body` once after the turn in which any of the key paths changed.
    @discardableResult
    public func observeChange(_ observer: AnyObject, keyPaths: [PartialKeyPath<Self>], _ body: @escaping @MainActor () -> Void) throws(ObservationError) -> ObservationToken {
        addObserver(observer, .change(immediate: false, properties: try indices(keyPaths)), .plain(body))
    }

    // MARK: - Changes, immediately

    /// Calls `body` with the object synchronously on every change of any property.
    @discardableResult
    public func observeChangeImmediately(_ observer: AnyObject, _ body: @escaping @MainActor (Self) -> Void) -> ObservationToken {
        addObserver(observer, .change(immediate: true, properties: nil), Self.subject(body))
    }

    /// Calls `body` synchronously on every change of any property.
    @discardableResult
    public func observeChangeImmediately(_ observer: AnyObject, _ body: @escaping @MainActor () -> Void) -> ObservationToken {
        addObserver(observer, .change(immediate: true, properties: nil), .plain(body))
    }

    /// Calls `body` with the object synchronously on every change of one of the key paths.
    @discardableResult
    public func observeChangeImmediately(_ observer: AnyObject, _ keyPaths: PartialKeyPath<Self>..., body: @escaping @MainActor (Self) -> Void) throws(ObservationError) -> ObservationToken {
        addObserver(observer, .change(immediate: true, properties: try indices(keyPaths)), Self.subject(body))
    }

    /// Calls `body` synchronously on every change of one of the key paths.
    @discardableResult
    public func observeChangeImmediately(_ observer: AnyObject, _ keyPaths: PartialKeyPath<Self>..., body: @escaping @MainActor () -> Void) throws(ObservationError) -> ObservationToken {
        try observeChangeImmediately(observer, keyPaths: keyPaths, body)
    }

    /// Calls `body` synchronously on every change of one of the key paths.
    @discardableResult
    public func observeChangeImmediately(_ observer: AnyObject, keyPaths: [PartialKeyPath<Self>], _ body: @escaping @MainActor () -> Void) throws(ObservationError) -> ObservationToken {
        addObserver(observer, .change(immediate: true, properties: try indices(keyPaths)), .plain(body))
    }

    // MARK: - Collections

    /// Calls `body` with each element added to the collection and its index in the new contents.
    @discardableResult
    public func observeCollectionAdd<Element: ModelObject>(_ observer: AnyObject, _ keyPath: KeyPath<Self, [Element]>, _ body: @escaping @MainActor (Element, Int) -> Void) throws(ObservationError) -> ObservationToken {
        addObserver(observer, .collectionAdd(property: try collectionIndex(keyPath)), .element { element, index in
            if let element = element as? Element { body(element, index) }
        })
    }

    /// Calls `body` with each element removed from the collection and the index it had.
    @discardableResult
    public func observeCollectionRemove<Element: ModelObject>(_ observer: AnyObject, _ keyPath: KeyPath<Self, [Element]>, _ body: @escaping @MainActor (Element, Int) -> Void) throws(ObservationError) -> ObservationToken {
        addObserver(observer, .collectionRemove(property: try collectionIndex(keyPath)), .element { element, index in
            if let element = element as? Element { body(element, index) }
        })
    }

    private func collectionIndex(_ keyPath: AnyKeyPath) throws(ObservationError) -> Int {
        let found = try info.indices(for: keyPath)
        guard found.count == 1, let index = found.first else {
            throw .notAProperty(className: info.className, keyPath: "\(keyPath)")
        }
        return index
    }

    // MARK: - Tree and scope

    /// Calls `body` with the object once after the turn in which it or anything below it changed.
    @discardableResult
    public func observeTreeChange(_ observer: AnyObject, _ body: @escaping @MainActor (Self) -> Void) -> ObservationToken {
        addObserver(observer, .treeChange, Self.subject(body))
    }

    /// Calls `body` once after the turn in which this object or anything below it changed.
    @discardableResult
    public func observeTreeChange(_ observer: AnyObject, _ body: @escaping @MainActor () -> Void) -> ObservationToken {
        addObserver(observer, .treeChange, .plain(body))
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

    // MARK: - Async sequences

    /// The values of a property as an `AsyncSequence`: the current value first, then the value
    /// after each turn in which it changed. Buffering: the newest 64 unread values are kept (a
    /// slower consumer skips older ones, never the latest). The sequence ends when the object is
    /// freed, and for a consumer whose task is cancelled.
    /// - Throws: ``ObservationError`` when `keyPath` is not a `@Property` of this class.
    public func values<Value: Sendable>(of keyPath: KeyPath<Self, Value>) throws(ObservationError) -> AsyncStream<Value> {
        let properties = try indices([keyPath])
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(64))
        continuation.yield(self[keyPath: keyPath])
        let finisher = StreamFinisher(continuation)
        let token = addObserver(finisher, .change(immediate: false, properties: properties), Self.subject { object in
            finisher.continuation.yield(object[keyPath: keyPath])
        })
        continuation.onTermination = { _ in
            Task { @MainActor in token.cancel() }
        }
        return stream
    }
}
