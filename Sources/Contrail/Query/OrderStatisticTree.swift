import ContrailSupport

/// A sorted sequence of distinct elements with O(log n) insertion, removal, rank (the index of an
/// element) and selection (the element at an index): a B+ tree whose inner nodes keep the element
/// count of each child. What a live query keeps its matches in, so that a change of one object
/// finds the index it left and the index it lands at without touching the others.
///
/// Leaves hold up to `capacity` elements in an array, inner nodes up to `capacity` children, so a
/// tree of 100,000 elements is three levels deep and a change shifts at most one leaf's array.
/// `less` must be a strict total order on the elements it holds (a query breaks ties by uuid).
///
/// Every node also keeps a `prefix` of each element (or separator) in a plain array beside them: a
/// number whose order agrees with `less` where the numbers differ. A search compares these and
/// reads an element only where its prefix equals the sought one's, so a descent touches one small
/// contiguous array per node instead of an element per probe (what keeps a query's change at a few
/// cache misses per level on trees of 100,000 entries).
final class OrderStatisticTree<Element> {
    /// One node: a leaf holds elements, an inner node children with their counts and separators.
    ///
    /// Its arrays are not checked for exclusive access at run time (a check on every level of every
    /// search): only the tree's own methods touch them, none of them holds a mutable access to an
    /// array across a call that could reach the same array (`less` and `prefix` see elements, not
    /// nodes), and the tree is used from one thread (its query's, the main actor's).
    final class Node {
        let isLeaf: Bool
        /// A leaf's elements, in order.
        @exclusivity(unchecked) var elements: [Element] = []
        /// An inner node's children, in order.
        @exclusivity(unchecked) var children: [Node] = []
        /// The element count of each child's subtree.
        @exclusivity(unchecked) var counts: [Int] = []
        /// `keys[j]` separates `children[j]` and `children[j + 1]`: greater than every element of
        /// the first, at most the first element of the second.
        @exclusivity(unchecked) var keys: [Element] = []
        /// The prefix of each of `elements` (a leaf) or of `keys` (an inner node), in the same order.
        @exclusivity(unchecked) var prefixes: [UInt64] = []

        init(isLeaf: Bool) {
            self.isLeaf = isLeaf
        }

        /// The number of elements below this node. O(children).
        var total: Int { isLeaf ? elements.count : counts.reduce(0, +) }

        /// The node's width: elements of a leaf, children of an inner node.
        var width: Int { isLeaf ? elements.count : children.count }
    }

    /// The most elements of a leaf and the most children of an inner node.
    let capacity: Int
    /// A node narrower than this (other than the root) is merged with or refilled from a sibling.
    private var minimum: Int { max(2, capacity / 4) }
    /// The order: a strict total order on the elements held.
    let less: (Element, Element) -> Bool
    /// A number for each element such that `prefix(a) < prefix(b)` implies `less(a, b)` (equal
    /// prefixes say nothing): what searches compare before reading elements.
    let prefix: (Element) -> UInt64
    @exclusivity(unchecked) private(set) var root: Node
    /// The number of elements. O(1).
    @exclusivity(unchecked) private(set) var count = 0

    /// An empty tree ordered by `less`, with `prefix` as its searches' first comparison (the
    /// default, a constant, makes every search compare elements).
    init(capacity: Int = 64, less: @escaping (Element, Element) -> Bool, prefix: @escaping (Element) -> UInt64 = { _ in 0 }) {
        precondition(capacity >= 4, "a node must hold at least 4 entries")
        self.capacity = capacity
        self.less = less
        self.prefix = prefix
        self.root = Node(isLeaf: true)
    }

    /// A tree holding `sorted`, which must be in `less` order without duplicates. O(n): the leaves
    /// are filled to three quarters and the levels above built from them.
    convenience init(sorted: [Element], capacity: Int = 64, less: @escaping (Element, Element) -> Bool,
                     prefix: @escaping (Element) -> UInt64 = { _ in 0 }) {
        self.init(capacity: capacity, less: less, prefix: prefix)
        guard !sorted.isEmpty else { return }
        let fill = max(2, capacity * 3 / 4)
        var level: [Node] = []
        var firsts: [Element] = []
        var totals: [Int] = []
        for range in Self.chunks(sorted.count, fill: fill) {
            let leaf = Node(isLeaf: true)
            leaf.elements = Array(sorted[range])
            leaf.prefixes = leaf.elements.map(prefix)
            level.append(leaf)
            firsts.append(sorted[range.lowerBound])
            totals.append(range.count)
        }
        while level.count > 1 {
            var parents: [Node] = []
            var parentFirsts: [Element] = []
            var parentTotals: [Int] = []
            for range in Self.chunks(level.count, fill: fill) {
                let node = Node(isLeaf: false)
                node.children = Array(level[range])
                node.counts = Array(totals[range])
                node.keys = Array(firsts[(range.lowerBound + 1)..<range.upperBound])
                node.prefixes = node.keys.map(prefix)
                parents.append(node)
                parentFirsts.append(firsts[range.lowerBound])
                parentTotals.append(node.counts.reduce(0, +))
            }
            level = parents
            firsts = parentFirsts
            totals = parentTotals
        }
        root = level[0]
        count = sorted.count
    }

    /// `count` items cut into runs of about `fill`, as even as possible.
    private static func chunks(_ count: Int, fill: Int) -> [Range<Int>] {
        let pieces = max(1, (count + fill - 1) / fill)
        return (0..<pieces).map { piece in (count * piece / pieces)..<(count * (piece + 1) / pieces) }
    }

    // MARK: - Searching

    /// The index of the child of inner node `node` that `element` (whose prefix is `key`) belongs
    /// in. O(log children).
    @inline(__always)
    private func route(_ element: Element, _ key: UInt64, in node: Node) -> Int {
        node.prefixes.withUnsafeBufferPointer { prefixes in
            prefixes.indices.partitioningIndex { mid in
                let other = prefixes[mid]
                return key != other ? key < other : less(element, node.keys[mid])
            }
        }
    }

    /// The first position in leaf `leaf` whose element is not less than `element` (whose prefix is
    /// `key`). O(log elements).
    @inline(__always)
    private func lowerBound(_ element: Element, _ key: UInt64, in leaf: Node) -> Int {
        leaf.prefixes.withUnsafeBufferPointer { prefixes in
            prefixes.indices.partitioningIndex { mid in
                let other = prefixes[mid]
                return !(other != key ? other < key : less(leaf.elements[mid], element))
            }
        }
    }

    /// The index of `element`, or nil when the tree does not hold it. O(log n).
    func index(of element: Element) -> Int? {
        let key = prefix(element)
        var node = root
        var before = 0
        while !node.isLeaf {
            let child = route(element, key, in: node)
            for j in 0..<child { before += node.counts[j] }
            node = node.children[child]
        }
        let position = lowerBound(element, key, in: node)
        guard position < node.elements.count, !less(element, node.elements[position]) else { return nil }
        return before + position
    }

    /// The element at `index` (0 ≤ index < count). O(log n).
    subscript(index: Int) -> Element {
        precondition(index >= 0 && index < count, "index \(index) out of 0..<\(count)")
        var node = root
        var rest = index
        while !node.isLeaf {
            var child = 0
            while rest >= node.counts[child] {
                rest -= node.counts[child]
                child += 1
            }
            node = node.children[child]
        }
        return node.elements[rest]
    }

    /// The elements at `range` (clamped to 0..<count), in order. O(log n + range.count).
    func elements(in range: Range<Int>) -> [Element] {
        let lower = max(0, range.lowerBound)
        let upper = min(count, range.upperBound)
        guard lower < upper else { return [] }
        var result: [Element] = []
        result.reserveCapacity(upper - lower)
        var remaining = upper - lower
        collect(root, from: lower, remaining: &remaining, into: &result)
        return result
    }

    /// Appends up to `remaining` elements of `node`'s subtree from its index `start` on.
    private func collect(_ node: Node, from start: Int, remaining: inout Int, into result: inout [Element]) {
        if node.isLeaf {
            let end = min(node.elements.count, start + remaining)
            result.append(contentsOf: node.elements[start..<end])
            remaining -= end - start
            return
        }
        var start = start
        for (child, size) in zip(node.children, node.counts) {
            guard remaining > 0 else { return }
            if start >= size {
                start -= size
                continue
            }
            collect(child, from: start, remaining: &remaining, into: &result)
            start = 0
        }
    }

    /// Every element, in order. O(n).
    var all: [Element] { elements(in: 0..<count) }

    // MARK: - Insertion

    /// Inserts `element` (which the tree must not hold) and returns its index. O(log n).
    @discardableResult
    func insert(_ element: Element) -> Int {
        let (index, split) = insert(element, prefix(element), into: root)
        if let (key, right) = split {
            let newRoot = Node(isLeaf: false)
            newRoot.children = [root, right]
            newRoot.counts = [root.total, right.total]
            newRoot.keys = [key]
            newRoot.prefixes = [prefix(key)]
            root = newRoot
        }
        count += 1
        return index
    }

    /// Inserts below `node`; returns the index within `node`'s subtree and, when `node` split, the
    /// separator and the new right sibling.
    private func insert(_ element: Element, _ key: UInt64, into node: Node) -> (Int, (Element, Node)?) {
        if node.isLeaf {
            let position = lowerBound(element, key, in: node)
            node.elements.insert(element, at: position)
            node.prefixes.insert(key, at: position)
            guard node.elements.count > capacity else { return (position, nil) }
            let right = Node(isLeaf: true)
            let half = node.elements.count / 2
            right.elements = Array(node.elements[half...])
            right.prefixes = Array(node.prefixes[half...])
            node.elements.removeSubrange(half...)
            node.prefixes.removeSubrange(half...)
            return (position, (right.elements[0], right))
        }
        let child = route(element, key, in: node)
        let (inner, split) = insert(element, key, into: node.children[child])
        var index = inner
        for j in 0..<child { index += node.counts[j] }
        node.counts[child] += 1
        guard let (separator, right) = split else { return (index, nil) }
        let rightCount = right.total
        node.counts[child] -= rightCount
        node.children.insert(right, at: child + 1)
        node.counts.insert(rightCount, at: child + 1)
        node.keys.insert(separator, at: child)
        node.prefixes.insert(prefix(separator), at: child)
        guard node.children.count > capacity else { return (index, nil) }
        return (index, splitInner(node))
    }

    /// Splits an overfull inner node in two; returns the separator and the right half.
    private func splitInner(_ node: Node) -> (Element, Node) {
        let half = node.children.count / 2
        let right = Node(isLeaf: false)
        right.children = Array(node.children[half...])
        right.counts = Array(node.counts[half...])
        right.keys = Array(node.keys[half...])
        right.prefixes = Array(node.prefixes[half...])
        let separator = node.keys[half - 1]
        node.children.removeSubrange(half...)
        node.counts.removeSubrange(half...)
        node.keys.removeSubrange((half - 1)...)
        node.prefixes.removeSubrange((half - 1)...)
        return (separator, right)
    }

    // MARK: - Removal

    /// Removes `element` and returns the index it had, or nil when the tree does not hold it. O(log n).
    @discardableResult
    func remove(_ element: Element) -> Int? {
        guard let index = remove(element, prefix(element), from: root) else { return nil }
        count -= 1
        if !root.isLeaf, root.children.count == 1 { root = root.children[0] }
        return index
    }

    private func remove(_ element: Element, _ key: UInt64, from node: Node) -> Int? {
        if node.isLeaf {
            let position = lowerBound(element, key, in: node)
            guard position < node.elements.count, !less(element, node.elements[position]) else { return nil }
            node.elements.remove(at: position)
            node.prefixes.remove(at: position)
            return position
        }
        let child = route(element, key, in: node)
        guard let inner = remove(element, key, from: node.children[child]) else { return nil }
        var index = inner
        for j in 0..<child { index += node.counts[j] }
        node.counts[child] -= 1
        if node.children[child].width < minimum, node.children.count > 1 {
            rebalance(node, at: child)
        }
        return index
    }

    /// Child `child` of `parent` is too narrow: merges it with a sibling, or shares the two
    /// siblings' entries evenly when they do not fit in one node. O(capacity).
    private func rebalance(_ parent: Node, at child: Int) {
        let left = child + 1 < parent.children.count ? child : child - 1
        let a = parent.children[left]
        let b = parent.children[left + 1]
        if a.isLeaf {
            var elements = a.elements
            elements.append(contentsOf: b.elements)
            var prefixes = a.prefixes
            prefixes.append(contentsOf: b.prefixes)
            if elements.count <= capacity {
                a.elements = elements
                a.prefixes = prefixes
                removeChild(left + 1, of: parent, mergedInto: left, total: elements.count)
            } else {
                let half = elements.count / 2
                a.elements = Array(elements[..<half])
                b.elements = Array(elements[half...])
                a.prefixes = Array(prefixes[..<half])
                b.prefixes = Array(prefixes[half...])
                parent.keys[left] = b.elements[0]
                parent.prefixes[left] = b.prefixes[0]
                parent.counts[left] = a.elements.count
                parent.counts[left + 1] = b.elements.count
            }
            return
        }
        var children = a.children
        children.append(contentsOf: b.children)
        var counts = a.counts
        counts.append(contentsOf: b.counts)
        var keys = a.keys
        keys.append(parent.keys[left])
        keys.append(contentsOf: b.keys)
        var prefixes = a.prefixes
        prefixes.append(parent.prefixes[left])
        prefixes.append(contentsOf: b.prefixes)
        if children.count <= capacity {
            a.children = children
            a.counts = counts
            a.keys = keys
            a.prefixes = prefixes
            removeChild(left + 1, of: parent, mergedInto: left, total: counts.reduce(0, +))
        } else {
            let half = children.count / 2
            a.children = Array(children[..<half])
            a.counts = Array(counts[..<half])
            a.keys = Array(keys[..<(half - 1)])
            a.prefixes = Array(prefixes[..<(half - 1)])
            b.children = Array(children[half...])
            b.counts = Array(counts[half...])
            b.keys = Array(keys[half...])
            b.prefixes = Array(prefixes[half...])
            parent.keys[left] = keys[half - 1]
            parent.prefixes[left] = prefixes[half - 1]
            parent.counts[left] = a.counts.reduce(0, +)
            parent.counts[left + 1] = b.counts.reduce(0, +)
        }
    }

    private func removeChild(_ index: Int, of parent: Node, mergedInto kept: Int, total: Int) {
        parent.children.remove(at: index)
        parent.counts.remove(at: index)
        parent.keys.remove(at: index - 1)
        parent.prefixes.remove(at: index - 1)
        parent.counts[kept] = total
    }

    // MARK: - Checking

    /// Whether the structure holds (order, separators and their prefixes, counts, node widths): for
    /// tests. O(n).
    func isValid() -> Bool {
        var previous: Element?
        var ordered = true
        func check(_ node: Node, isRoot: Bool, lower: Element?, upper: Element?) -> Int? {
            if node.isLeaf {
                if !isRoot, node.elements.isEmpty { return nil }
                guard node.prefixes == node.elements.map(prefix) else { return nil }
                for element in node.elements {
                    if let previous, !less(previous, element) { ordered = false }
                    if let lower, less(element, lower) { return nil }
                    if let upper, !less(element, upper) { return nil }
                    previous = element
                }
                return node.elements.count <= capacity ? node.elements.count : nil
            }
            guard node.children.count >= (isRoot ? 2 : 1), node.children.count <= capacity,
                  node.counts.count == node.children.count, node.keys.count == node.children.count - 1,
                  node.prefixes == node.keys.map(prefix) else { return nil }
            var sum = 0
            for (j, child) in node.children.enumerated() {
                let low = j == 0 ? lower : node.keys[j - 1]
                let high = j == node.keys.count ? upper : node.keys[j]
                guard let size = check(child, isRoot: false, lower: low, upper: high), size == node.counts[j] else { return nil }
                sum += size
            }
            return sum
        }
        return check(root, isRoot: true, lower: nil, upper: nil) == count && ordered
    }
}
