/// The live queries of one host (a scope), kept up to date together: the host reports every
/// member that changed, joined or left; once per delivery turn (`ChangeDelivery`) the hub hands
/// each query the objects of its class, and only when every query is up to date are their changes
/// delivered, so an observer of one query never sees another in an intermediate state.
///
/// The hub also numbers the objects its queries index (`QueryRow`), and keeps every query's state
/// of each object (`QuerySlot`) in one table, a row of slots per object and a column per query: a
/// changed object is looked up once per turn, and the queries find their slots side by side at its
/// row (a few adjacent cache lines, not a miss per query). A row lives until its object has left
/// the host (every query dropped it then), or until no query is left; a freed query's column is
/// cleared and given to the next query opened.
@MainActor
final class QueryHub {
    private struct WeakQuery {
        weak var query: (any MaintainedQuery)?
        /// The query's column of `slots`.
        let column: Int
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
    /// The rows, by number; nil for a free number (in `freeRows`).
    private var rows: [QueryRow?] = []
    private var rowOf: [ObjectIdentifier: Int] = [:]
    private var freeRows: [Int] = []
    /// Every query's slot of every row: row `r`'s slot of column `c` is at `r * width + c`. Not
    /// checked for exclusive access at run time (a check per query per change): only the hub and
    /// its queries' cores touch it, on the main actor, through `slot` and `setSlot`, which hold no
    /// access across a call.
    @exclusivity(unchecked) private var slots: [QuerySlot] = []
    /// The number of columns (open queries, and columns free for the next).
    private var width = 0
    /// Columns of freed queries, cleared.
    private var freeColumns: [Int] = []
    /// The queries `flush` updated, kept between flushes so that a turn allocates no array.
    private var updated: [any MaintainedQuery] = []

    init(host: ModelObjectHost) {
        self.host = host
    }

    /// A column of slots for a new query, every slot `QuerySlot.none`: a freed query's, or a new one
    /// (O(rows × columns): the table is laid out again).
    func openColumn() -> Int {
        if let column = freeColumns.popLast() { return column }
        let old = width
        width += 1
        var table = Array(repeating: QuerySlot.none, count: rows.count * width)
        for row in rows.indices {
            for column in 0..<old { table[row * width + column] = slots[row * old + column] }
        }
        slots = table
        return old
    }

    /// What the query of `column` keeps of the object of row number `row`. O(1).
    @inline(__always)
    func slot(row: Int, column: Int) -> QuerySlot {
        slots[row * width + column]
    }

    /// Sets what the query of `column` keeps of the object of row number `row`. O(1).
    @inline(__always)
    func setSlot(_ slot: QuerySlot, row: Int, column: Int) {
        slots[row * width + column] = slot
    }

    /// Starts keeping `query`, whose slots are in `column` (`openColumn`), up to date. O(1).
    func add(_ query: any MaintainedQuery, column: Int) {
        queries.append(WeakQuery(query: query, column: column))
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

    /// The row of `object`, made when it has none. O(1).
    func row(for object: ModelObject) -> QueryRow {
        let id = ObjectIdentifier(object)
        if let index = rowOf[id] { return rows[index]! }
        let index = freeRows.popLast() ?? rows.count
        let row = QueryRow(index: index, object: object)
        if index == rows.count {
            rows.append(row)
            slots.append(contentsOf: repeatElement(QuerySlot.none, count: width))
        } else {
            rows[index] = row
        }
        rowOf[id] = index
        return row
    }

    /// The row of `object`, or nil when it has none (no query holds it). O(1).
    func existingRow(of object: ModelObject) -> QueryRow? {
        rowOf[ObjectIdentifier(object)].flatMap { rows[$0] }
    }

    /// The number of row numbers in use or free: every row's index is below it.
    var rowCount: Int { rows.count }

    /// Frees `row` when its object has left the host: every query has dropped it in this flush.
    private func release(_ row: QueryRow) {
        guard row.object.host !== host else { return }
        rowOf[ObjectIdentifier(row.object)] = nil
        rows[row.index] = nil
        freeRows.append(row.index)
        assert((0..<width).allSatisfy { !slot(row: row.index, column: $0).isMatch }, "a released row is no query's match")
    }

    /// A query was freed: the next flush drops it. O(1).
    func queryFreed() {
        hasFreed = true
    }

    /// Asks for an update at the end of this turn (a query's window moved).
    func schedule() {
        guard !isScheduled else { return }
        isScheduled = true
        ChangeDelivery.main.enqueueFlush(for: self, flushAction)
    }

    /// What a scheduled delivery turn calls, made once (not a closure per turn).
    private lazy var flushAction: () -> Void = { [weak self] in self?.flush() }

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
            for weak in queries where weak.query == nil {
                for row in rows.indices { setSlot(.none, row: row, column: weak.column) }
                freeColumns.append(weak.column)
            }
            queries.removeAll { $0.query == nil }
            routes.removeAll()
        }
        guard !queries.isEmpty else {
            host?.watchesSets = false
            rows = []
            rowOf = [:]
            freeRows = []
            slots = []
            width = 0
            freeColumns = []
            return
        }
        if let one {
            // One object (the common turn): each query that accepts its class, without batches.
            let routed = route(type(of: one))
            let row = routed.isEmpty ? nil : row(for: one)
            var next = 0
            for position in queries.indices {
                guard let query = queries[position].query else { continue }
                let isRouted = next < routed.count && routed[next] == position
                if isRouted { next += 1 }
                let changed: Bool
                if let row, isRouted {
                    changed = query.update(one: row)
                } else {
                    changed = query.update([])
                }
                if changed { updated.append(query) }
            }
            if let row { release(row) }
        } else {
            var batches = Array(repeating: [QueryRow](), count: queries.count)
            var touched: [QueryRow] = []
            for object in objects.values {
                let routed = route(type(of: object))
                guard !routed.isEmpty else { continue }
                let row = row(for: object)
                touched.append(row)
                for position in routed { batches[position].append(row) }
            }
            for (position, weak) in queries.enumerated() {
                guard let query = weak.query else { continue }
                if query.update(batches[position]) { updated.append(query) }
            }
            for row in touched { release(row) }
        }
        for query in updated { query.deliver() }
        updated.removeAll(keepingCapacity: true)
    }

    private func route(_ type: ModelObject.Type) -> [Int] {
        let id = ObjectIdentifier(type)
        if let known = routes[id] { return known }
        let positions = queries.indices.filter { queries[$0].query?.accepts(type) == true }
        routes[id] = positions
        return positions
    }
}
