// NMS against Darknet's loops written out plainly (do_nms_sort: sort the list by each class's
// probability, then every kept box zeroes every later box it overlaps; diounms_sort with DIoU;
// the class-agnostic form): same probabilities and the same order, bit for bit, on random
// candidate sets with clusters, ties, huge and off-image boxes, and every limit.
import XCTest
@testable import YOLODetection

final class NMSTests: XCTestCase {
    /// Darknet's do_nms_sort (and the agnostic form), quadratic, as the reference.
    private func reference(_ boxes: inout CandidateBoxes, classes: [Int], threshold: Float, rule: Suppression,
                           limit: Int?, agnostic: Bool) -> [Int] {
        var order: [Int] = [], scratch: [Int] = []
        let total = moveEmptyBoxesLast(boxes, order: &order)
        guard total > 0 else { return order }
        var active = Array(order[0..<total])
        let stride = boxes.classes, limit = limit ?? Int.max
        func box(_ i: Int) -> CenterBox { (boxes.x[i], boxes.y[i], boxes.w[i], boxes.h[i]) }
        if agnostic {
            var best = (0..<boxes.count).map { b in classes.map { boxes.probs[b * stride + $0] }.max() ?? 0 }
            stableSortDescending(&active, scratch: &scratch) { best[$0] }
            var kept = 0, last: Float = 0
            for i in 0..<total where best[active[i]] != 0 {
                if kept >= limit && best[active[i]] < last {
                    for r in i..<total { for k in 0..<stride { boxes.probs[active[r] * stride + k] = 0 } }
                    break
                }
                kept += 1; last = best[active[i]]
                for j in (i + 1)..<total where best[active[j]] != 0 && rule.suppresses(box(active[i]), box(active[j]), threshold: threshold) {
                    best[active[j]] = 0
                    for k in 0..<stride { boxes.probs[active[j] * stride + k] = 0 }
                }
            }
        } else {
            for k in classes {
                stableSortDescending(&active, scratch: &scratch) { boxes.probs[$0 * stride + k] }
                var kept = 0, last: Float = 0
                for i in 0..<total where boxes.probs[active[i] * stride + k] != 0 {
                    let p = boxes.probs[active[i] * stride + k]
                    if kept >= limit && p < last {
                        for r in i..<total { boxes.probs[active[r] * stride + k] = 0 }
                        break
                    }
                    kept += 1; last = p
                    for j in (i + 1)..<total where rule.suppresses(box(active[i]), box(active[j]), threshold: threshold) {
                        boxes.probs[active[j] * stride + k] = 0
                    }
                }
            }
        }
        for i in 0..<total { order[i] = active[i] }
        return order
    }

    /// `count` candidates over `classes` classes: clusters of near-duplicates, some huge or off
    /// the image, probabilities on a coarse grid (ties) with zeros, some objectness 0.
    private func candidates(_ count: Int, classes: Int, seed: UInt64) -> CandidateBoxes {
        var rng = SplitMix(seed)
        var boxes = CandidateBoxes()
        boxes.reset(classes: classes)
        let centres = (0..<max(1, count / 8)).map { _ in (rng.unit() * 1.4 - 0.2, rng.unit() * 1.4 - 0.2) }
        for i in 0..<count {
            let c = centres[Int(rng.next() % UInt64(centres.count))]
            let huge = i % 37 == 0
            let w: Float = huge ? 0.5 + rng.unit() * 2 : 0.02 + rng.unit() * 0.2
            let h: Float = huge ? 0.5 + rng.unit() * 2 : 0.02 + rng.unit() * 0.2
            boxes.appendBox(x: c.0 + (rng.unit() - 0.5) * 0.1, y: c.1 + (rng.unit() - 0.5) * 0.1, w: w, h: h,
                            objectness: i % 11 == 0 ? 0 : 0.5)
            for _ in 0..<classes {
                let q = rng.next() % 12
                boxes.probs.append(q < 4 ? 0 : Float(q) / 12)
            }
        }
        return boxes
    }

    func testNMSEqualsDarknetsLoopsOnRandomCandidates() {
        var cases = 0
        for (count, seed) in [(0, 1), (1, 2), (7, 3), (63, 4), (64, 5), (300, 6), (1_000, 7)] as [(Int, UInt64)] {
            let start = candidates(count, classes: 3, seed: seed)
            for rule in [Suppression(kind: .greedy, beta: 0.6), Suppression(kind: .diou, beta: 0.6)] {
                for threshold: Float in [0, 0.3, 0.45, 1] {
                    for limit in [nil, 1, 5] as [Int?] {
                        for agnostic in [false, true] {
                            for classes in [[0, 1, 2], [2, 0]] {
                                var expected = start, got = start
                                let order = reference(&expected, classes: classes, threshold: threshold, rule: rule, limit: limit, agnostic: agnostic)
                                var gotOrder: [Int] = [], scratch: [Int] = []
                                if agnostic {
                                    nmsAgnostic(&got, classes: classes, threshold: threshold, rule: rule, limit: limit, order: &gotOrder, scratch: &scratch)
                                } else {
                                    nmsPerClass(&got, classes: classes, threshold: threshold, rule: rule, limit: limit, order: &gotOrder, scratch: &scratch)
                                }
                                let what = "\(count) boxes, \(rule.kind), threshold \(threshold), limit \(String(describing: limit)), agnostic \(agnostic), classes \(classes)"
                                XCTAssert(got.probs == expected.probs, "probabilities differ: \(what)")
                                XCTAssert(gotOrder == order, "order differs: \(what)")
                                cases += 1
                            }
                        }
                    }
                }
            }
        }
        XCTAssertEqual(cases, 7 * 2 * 4 * 3 * 2 * 2)
    }

    /// The test's candidates do overlap: NMS removes some and keeps some (else the comparison
    /// above would hold trivially).
    func testTheCandidatesExerciseSuppression() {
        var boxes = candidates(1_000, classes: 3, seed: 7)
        let before = boxes.probs.filter { $0 != 0 }.count
        var order: [Int] = [], scratch: [Int] = []
        nmsPerClass(&boxes, classes: [0, 1, 2], threshold: 0.45, order: &order, scratch: &scratch)
        let after = boxes.probs.filter { $0 != 0 }.count
        XCTAssertGreaterThan(after, 50)
        XCTAssertGreaterThan(before - after, 250, "\(before) probabilities before NMS, \(after) after")
    }
}

/// A small deterministic generator (SplitMix64).
private struct SplitMix {
    var state: UInt64
    init(_ seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func unit() -> Float { Float(next() >> 40) / Float(1 << 24) }
}
