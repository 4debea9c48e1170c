/// The live queries of one host (a scope), kept up to date together: the host reports every
/// member that changed, joined or left; once per delivery turn (`ChangeDelivery`) the hub hands
/// each query the objects of its class, and only when every query is up to date are their changes
/// delivered, so an observer of one query never sees another in an intermediate state.
@MainActor
final class QueryHub {
    private struct WeakQuery {
        weak var query: (any MaintainedQuery)?
    }

    /// The host that owns this hub (a query may outlive it, and holds the hub).
    private weak var host: ModelObjectHost?
    private var queries: [WeakQuery] = []
    /// The member reported since the last delivery while it is the only one (the common turn: no
    /// dictionary); once a second one is reported, every member is in `dirty` instead.
    private var single: ModelObject?
    /// Members reported since the last delivery, each once, when there are more than one.
    private var dirty: [ObjectIdentifier: ModelObject] = [:]
    /// Whether a query was freed since the last flush (its entry in `queries` is gone).
    private var hasFreed = false
    /// By class: the positions in `queries` of the queries that accept it. Rebuilt when `queries` changes.
    private var routes: [ObjectIdentifier: [Int]] = [:]
    private var isScheduled = false

    init(host: ModelObjectHost) {
        self.host = host
    }

    /// Starts keeping `query` up to date. O(1).
    func add(_ query: any MaintainedQuery) {
        queries.append(WeakQuery(query: query))
        routes.removeAll()
        host?.watchesSets = true
    }

    /// Member `object` changed, joined or left. O(1).
    func changed(_ object: ModelObject) {
        if dirty.isEmpty, single == nil || single === object {
            single = object
        } else {
            if let first = single {
                dirty[ObjectIdentifier(first)] = first
                single = nil
            }
            dirty[ObjectIdentifier(object)] = object
        }
        schedule()
    }

    /// A query was freed: the next flush drops it. O(1).
    func queryFreed() {
        hasFreed = true
    }

    /// Asks for an update at the end of this turn (a query's window moved).
    func schedule() {
        guard !isScheduled else { return }
        isScheduled = true
        ChangeDelivery.main.enqueueFlush(for: self) { [weak self] in self?.flush() }
    }

    /// Updates every live query with the objects reported since the last time, then delivers
    /// their changes. O(changed objects × queries accepting them × log n), plus O(window) for a
    /// windowed query whose window the changes reach.
    func flush() {
        isScheduled = false
        let one = single
        single = nil
        var objects: [ObjectIdentifier: ModelObject] = [:]
        if !dirty.isEmpty { swap(&objects, &dirty) }
        if hasFreed {
            hasFreed = false
            queries.removeAll { $0.query == nil }
            routes.removeAll()
        }
        guard !queries.isEmpty else {
            host?.watchesSets = false
            return
        }
        var updated: [any MaintainedQuery] = []
        if let one {
            // One object (the common turn): each query that accepts its class, without batches.
            let batch = [one]
            var routed = route(type(of: one))[...]
            for position in queries.indices {
                guard let query = queries[position].query else { continue }
                let isRouted = routed.first == position
                if isRouted { routed.removeFirst() }
                if query.update(isRouted ? batch : []) { updated.append(query) }
            }
        } else {
            var batches = Array(repeating: [ModelObject](), count: queries.count)
            for object in objects.values {
                for position in route(type(of: object)) { batches[position].append(object) }
            }
            for (position, weak) in queries.enumerated() {
                guard let query = weak.query else { continue }
                if query.update(batches[position]) { updated.append(query) }
            }
        }
        for query in updated { query.deliver() }
    }

    private func route(_ type: ModelObject.Type) -> [Int] {
        let id = ObjectIdentifier(type)
        if let known = routes[id] { return known }
        let positions = queries.indices.filter { queries[$0].query?.accepts(type) == true }
        routes[id] = positions
        return positions
    }
}
