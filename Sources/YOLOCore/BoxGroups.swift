// Which detections share a box. Darknet reports one `Detection` per (box, class) above the
// threshold, so one object can appear twice (car 61% and truck 30%, same box); drawing and
// tracking treat such a group as one box.

/// The detections grouped by box: same `boxIndex` and the same edges (detections from one
/// `detect` call share a box exactly when they share `boxIndex`; the edges keep boxes of
/// separate calls apart). Groups in order of first appearance, each listing indices into
/// `detections` in their given order.
public func boxGroups(_ detections: [Detection]) -> [[Int]] {
    var groups: [[Int]] = []
    var groupsOfBoxIndex: [Int: [Int]] = [:]
    for i in detections.indices {
        let d = detections[i]
        let candidates = groupsOfBoxIndex[d.boxIndex] ?? []
        if let g = candidates.first(where: { g in
            let first = detections[groups[g][0]]
            return first.left == d.left && first.top == d.top && first.right == d.right && first.bottom == d.bottom
        }) {
            groups[g].append(i)
        } else {
            groupsOfBoxIndex[d.boxIndex] = candidates + [groups.count]
            groups.append([i])
        }
    }
    return groups
}
