// Non-maximum suppression as Darknet's do_nms_sort (and AlexeyAB's diounms_sort), and its
// reporting order.
import YOLOCore
import YOLOEngine

/// Darknet's `overlap`: the length two 1-D segments (centre, size) share; negative when apart.
@inline(__always)
func darknetOverlap(_ x1: Float, _ w1: Float, _ x2: Float, _ w2: Float) -> Float {
    let l1 = x1 - w1 / 2
    let l2 = x2 - w2 / 2
    let left = l1 > l2 ? l1 : l2
    let r1 = x1 + w1 / 2
    let r2 = x2 + w2 / 2
    let right = r1 < r2 ? r1 : r2
    return right - left
}

/// Darknet's `box_iou` on centre/size boxes, in float, with its order of operations.
@inline(__always)
func darknetIoU(_ a: (x: Float, y: Float, w: Float, h: Float), _ b: (x: Float, y: Float, w: Float, h: Float)) -> Float {
    let ow = darknetOverlap(a.x, a.w, b.x, b.w)
    let oh = darknetOverlap(a.y, a.h, b.y, b.h)
    let intersection: Float = (ow < 0 || oh < 0) ? 0 : ow * oh
    let union = a.w * a.h + b.w * b.h - intersection
    return intersection / union
}

typealias CenterBox = (x: Float, y: Float, w: Float, h: Float)

/// AlexeyAB's `box_diounms`: IoU (0 when the intersection or union is 0) minus
/// (centre distance^2 / enclosing box diagonal^2) ^ beta, the power in double, the rest in float.
@inline(__always)
func darknetDIoU(_ a: CenterBox, _ b: CenterBox, beta: Float) -> Float {
    let top = min(a.y - a.h / 2, b.y - b.h / 2), bottom = max(a.y + a.h / 2, b.y + b.h / 2)
    let left = min(a.x - a.w / 2, b.x - b.w / 2), right = max(a.x + a.w / 2, b.x + b.w / 2)
    let w = right - left, h = bottom - top
    let c = w * w + h * h
    let ow = darknetOverlap(a.x, a.w, b.x, b.w)
    let oh = darknetOverlap(a.y, a.h, b.y, b.h)
    let intersection: Float = (ow < 0 || oh < 0) ? 0 : ow * oh
    let union = a.w * a.h + b.w * b.h - intersection
    let iou: Float = intersection == 0 || union == 0 ? 0 : intersection / union
    if c == 0 { return iou }
    let d = (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y)
    return iou - Float(pow(Double(d / c), Double(beta)))
}

/// The suppression rule of a network: its last [yolo] layer's nms_kind and beta_nms.
struct Suppression {
    var kind: NMSKind = .greedy
    var beta: Float = 0.6

    /// Whether `b` is suppressed by the better box `a` at `threshold`.
    @inline(__always)
    func suppresses(_ a: CenterBox, _ b: CenterBox, threshold: Float) -> Bool {
        switch kind {
        case .greedy: return darknetIoU(a, b) > threshold
        case .diou: return darknetDIoU(a, b, beta: beta) > threshold
        }
    }
}

/// Sorts `order` by `key(order[i])` descending, keeping the order of equal keys (a merge sort,
/// like glibc's qsort for these sizes, so ties come out as Darknet's do). `scratch` is reused.
func stableSortDescending(_ order: inout [Int], scratch: inout [Int], key: (Int) -> Float) {
    let n = order.count
    guard n > 1 else { return }
    if scratch.count < n { scratch = [Int](repeating: 0, count: n) }
    // Short runs by insertion sort, then bottom-up merges.
    let run = 16
    order.withUnsafeMutableBufferPointer { a in
        var start = 0
        while start < n {
            let end = min(start + run, n)
            var i = start + 1
            while i < end {
                let v = a[i], kv = key(v)
                var j = i
                while j > start && key(a[j - 1]) < kv { a[j] = a[j - 1]; j -= 1 }
                a[j] = v
                i += 1
            }
            start = end
        }
    }
    var width = run
    var inOrder = true   // whether the current data is in `order` (else in `scratch`)
    while width < n {
        order.withUnsafeMutableBufferPointer { a in
            scratch.withUnsafeMutableBufferPointer { s in
                let (src, dst) = inOrder ? (a, s) : (s, a)
                var lo = 0
                while lo < n {
                    let mid = min(lo + width, n), hi = min(lo + 2 * width, n)
                    var i = lo, j = mid, o = lo
                    while i < mid && j < hi {
                        // Take from the right only when strictly greater: stable.
                        if key(src[j]) > key(src[i]) { dst[o] = src[j]; j += 1 } else { dst[o] = src[i]; i += 1 }
                        o += 1
                    }
                    while i < mid { dst[o] = src[i]; i += 1; o += 1 }
                    while j < hi { dst[o] = src[j]; j += 1; o += 1 }
                    lo = hi
                }
            }
        }
        inOrder.toggle()
        width *= 2
    }
    if !inOrder {
        order.withUnsafeMutableBufferPointer { a in
            scratch.withUnsafeBufferPointer { s in
                for i in 0..<n { a[i] = s[i] }
            }
        }
    }
}

/// Darknet's do_nms_sort: boxes with objectness 0 are swapped to the end (they take no part);
/// then for each class k in `classes`, the list is stably sorted by prob[k] descending and
/// every later box whose IoU with a kept earlier box exceeds `threshold` gets prob[k] = 0
/// (with `rule.kind == .diou`, whose DIoU does: AlexeyAB's diounms_sort).
/// `order` receives the final order of the boxes (indices into `boxes`), which is the order
/// Darknet reports them in.
/// With a `limit` (the most detections reported), a class stops once it has kept `limit` boxes
/// and the next is strictly less confident: that box, and every later one, has `limit`
/// detections of its class above it, so none of them could be reported; their probabilities
/// are set to 0 unexamined. The detections reported are the same, and a threshold near 0 no
/// longer costs every candidate against every other in every class.
/// A box is checked only against the kept boxes it intersects (`KeptBoxes`), and only the boxes
/// with a probability in the class are sorted: the same result as Darknet's loops, without their
/// cost in candidates squared (docs/architecture.md, "NMS").
func nmsPerClass(_ boxes: inout CandidateBoxes, classes: [Int], threshold: Float, rule: Suppression = Suppression(),
                 limit: Int? = nil, order: inout [Int], scratch: inout [Int]) {
    let total = moveEmptyBoxesLast(boxes, order: &order)
    guard total > 0 else { return }
    var active = Array(order[0..<total])
    var inClass: [Int] = [], rest: [Int] = []
    inClass.reserveCapacity(total); rest.reserveCapacity(total)
    var kept = KeptBoxes()
    let stride = boxes.classes
    let limit = limit ?? Int.max
    // The geometry, held apart from `probs` (which is written): no copy of either.
    let (xs, ys, ws, hs) = (boxes.x, boxes.y, boxes.w, boxes.h)
    @inline(__always) func box(_ i: Int) -> CenterBox { (x: xs[i], y: ys[i], w: ws[i], h: hs[i]) }
    boxes.probs.withUnsafeMutableBufferPointer { probs in
        for k in classes {
            // A stable sort of the whole list puts the boxes without a probability last, in
            // their order: only the others need sorting.
            inClass.removeAll(keepingCapacity: true); rest.removeAll(keepingCapacity: true)
            for a in active { if probs[a * stride + k] != 0 { inClass.append(a) } else { rest.append(a) } }
            stableSortDescending(&inClass, scratch: &scratch) { probs[$0 * stride + k] }
            kept.reset(members: inClass[...], box: box)
            var count = 0
            var lastKept: Float = 0
            for i in inClass.indices {
                let b = inClass[i]
                let p = probs[b * stride + k]
                let boxB = box(b)
                if kept.anySuppresses(boxB, { rule.suppresses(box($0), boxB, threshold: threshold) }) {
                    probs[b * stride + k] = 0
                    continue
                }
                if count >= limit && p < lastKept {
                    for r in i..<inClass.count { probs[inClass[r] * stride + k] = 0 }
                    break
                }
                kept.insert(b, boxB)
                count += 1
                lastKept = p
            }
            active.replaceSubrange(0..<inClass.count, with: inClass)
            active.replaceSubrange(inClass.count..<total, with: rest)
        }
    }
    for i in 0..<total { order[i] = active[i] }
}

/// Class-agnostic NMS: each box is ranked by its highest class probability (over `classes`);
/// the list is stably sorted by it, descending, and every later box whose IoU with a kept
/// earlier box exceeds `threshold` loses all its class probabilities. (`rule` and `limit` as
/// per class: once `limit` boxes are kept, each with a detection at its best probability, a
/// strictly less confident box and all after it are cleared unexamined.)
func nmsAgnostic(_ boxes: inout CandidateBoxes, classes: [Int], threshold: Float, rule: Suppression = Suppression(),
                 limit: Int? = nil, order: inout [Int], scratch: inout [Int]) {
    let total = moveEmptyBoxesLast(boxes, order: &order)
    guard total > 0 else { return }
    let stride = boxes.classes
    var best = [Float](repeating: 0, count: boxes.count)
    for b in 0..<boxes.count {
        var m: Float = 0
        for k in classes { m = max(m, boxes.probs[b * stride + k]) }
        best[b] = m
    }
    var ranked = order[0..<total].filter { best[$0] != 0 }
    let rest = order[0..<total].filter { best[$0] == 0 }
    stableSortDescending(&ranked, scratch: &scratch) { best[$0] }
    let (xs, ys, ws, hs) = (boxes.x, boxes.y, boxes.w, boxes.h)
    @inline(__always) func box(_ i: Int) -> CenterBox { (x: xs[i], y: ys[i], w: ws[i], h: hs[i]) }
    var kept = KeptBoxes()
    kept.reset(members: ranked[...], box: box)
    let limit = limit ?? Int.max
    var count = 0
    var lastKept: Float = 0
    for i in ranked.indices {
        let b = ranked[i]
        let boxB = box(b)
        if kept.anySuppresses(boxB, { rule.suppresses(box($0), boxB, threshold: threshold) }) {
            for k in 0..<stride { boxes.probs[b * stride + k] = 0 }
            continue
        }
        if count >= limit && best[b] < lastKept {
            // As Darknet's list would: every later box, those without a probability too.
            for r in ranked[i...] + rest {
                for k in 0..<stride { boxes.probs[r * stride + k] = 0 }
            }
            break
        }
        kept.insert(b, boxB)
        count += 1
        lastKept = best[b]
    }
    for (i, b) in (ranked + rest).enumerated() { order[i] = b }
}

/// Fills `order` with 0..<count, then, as Darknet does, swaps every box whose objectness is 0
/// with the last box still in play and shrinks the list. Returns the number of boxes in play.
func moveEmptyBoxesLast(_ boxes: CandidateBoxes, order: inout [Int]) -> Int {
    order.removeAll(keepingCapacity: true)
    order.append(contentsOf: 0..<boxes.count)
    var last = boxes.count - 1
    var i = 0
    while i <= last {
        if boxes.objectness[order[i]] == 0 {
            order.swapAt(i, last)
            last -= 1
        } else {
            i += 1
        }
    }
    return last + 1
}
