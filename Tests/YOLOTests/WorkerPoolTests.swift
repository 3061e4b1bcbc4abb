import Foundation
import XCTest
@testable import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore

/// The worker pool's hand-offs: workers and caller spin for a while, then sleep on condition
/// variables (Threading.swift). These tests drive both paths: back-to-back jobs (caught while
/// spinning), jobs after pauses longer than any spin (workers asleep), parts that outlast the
/// caller's spin (caller asleep), and pools torn down in every state. CI runs them under
/// ThreadSanitizer too (scripts/sanitize.sh thread).
final class WorkerPoolTests: XCTestCase {
    func testEveryPartRunsOncePerJobWhetherThreadsSpinOrSleep() {
        for threads in [2, 3] {
            let pool = WorkerPool(threads: threads)
            XCTAssertEqual(pool.threadCount, threads)
            let counts = UnsafeMutablePointer<Int>.allocate(capacity: threads)
            counts.initialize(repeating: 0, count: threads)
            defer { counts.deallocate() }
            let jobs = 600
            for job in 0..<jobs {
                // Every 50th job comes after a pause (the workers fall asleep); every 50th + 25 has
                // a slow part on a worker (the caller falls asleep waiting for it).
                if job % 50 == 0 { usleep(2000) }
                let slowPart = job % 50 == 25 ? threads - 1 : -1
                pool.run { part in
                    if part == slowPart { usleep(3000) }
                    counts[part] += 1   // each part has its own slot; run returns after all parts
                }
                for part in 0..<threads where counts[part] != job + 1 {
                    XCTFail("threads \(threads), job \(job): part \(part) ran \(counts[part]) times, expected \(job + 1)")
                    return
                }
            }
        }
    }

    func testParallelForCoversTheRangeOnce() {
        let pool = WorkerPool(threads: 3)
        for count in [0, 1, 2, 3, 7, 1000] {
            let seen = UnsafeMutablePointer<Int>.allocate(capacity: max(1, count))
            seen.initialize(repeating: 0, count: max(1, count))
            pool.parallelFor(count) { range in for i in range { seen[i] += 1 } }
            XCTAssertTrue((0..<count).allSatisfy { seen[$0] == 1 }, "count \(count)")
            seen.deallocate()
        }
    }

    func testPoolsTornDownWhileSpinningOrAsleep() {
        // Right after a job (workers spinning), and after a pause (workers asleep): deinit must
        // stop and join them without hanging.
        for pause in [0, 3000] {
            for _ in 0..<20 {
                let pool = WorkerPool(threads: 2)
                let hits = UnsafeMutablePointer<Int>.allocate(capacity: 2)
                hits.initialize(repeating: 0, count: 2)
                pool.run { hits[$0] += 1 }
                if pause > 0 { usleep(useconds_t(pause)) }
                XCTAssertEqual(hits[0] + hits[1], 2)
                hits.deallocate()
            }
        }
    }

    /// The spin is bounded by the clock, not by a count of pauses: a wait whose check is slow (an
    /// atomic load under qemu) still ends after about the budget's time, and it never ends early.
    func testSpinIsBoundedByTimeNotByCount() {
        let budget = SpinBudget()
        XCTAssertEqual(budget.limit, 100_000)
        var checks = 0
        let start = monotonicNanoseconds()
        let ended = budget.spin(while: {
            checks += 1
            let t = monotonicNanoseconds()
            while monotonicNanoseconds() &- t < 2_000 {}  // each check takes at least 2 us
            return true
        })
        XCTAssertFalse(ended, "the wait never ends")
        XCTAssertGreaterThanOrEqual(monotonicNanoseconds() &- start, 100_000, "spun the whole budget")
        // 2 us a check: the clock passes 100 us within the second group of 32 checks.
        XCTAssertLessThanOrEqual(checks, 2 * SpinBudget.pausesPerCheck + 1)

        var left = 5
        XCTAssertTrue(budget.spin(while: { left -= 1; return left > 0 }), "a wait that ends")
        XCTAssertEqual(left, 0)
    }

    func testSpinBudgetShrinksWhenMissedAndGrowsBackWhenCaught() {
        var b = SpinBudget()
        XCTAssertEqual(b.limit, SpinBudget.most)
        b.missed()
        XCTAssertEqual(b.limit, SpinBudget.most - SpinBudget.most / 4)
        for _ in 0..<40 { b.missed() }
        XCTAssertEqual(b.limit, SpinBudget.least, "never below the floor")
        var caught = 0
        while b.limit < SpinBudget.most { b.caught(); caught += 1 }
        XCTAssertEqual(b.limit, SpinBudget.most, "never above the ceiling")
        XCTAssertLessThan(caught, 20, "grows back within a few quick hand-offs")
    }
}
