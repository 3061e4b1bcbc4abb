import Foundation
import XCTest
import Synchronization
@testable import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore

/// The worker pool's hand-offs: workers and caller spin for a while, then sleep on condition
/// variables (Threading.swift). These tests drive both paths: back-to-back jobs (caught while
/// spinning), jobs after pauses longer than any spin (workers asleep), chunks that outlast the
/// caller's spin (caller asleep), and pools torn down in every state. CI runs them under
/// ThreadSanitizer too (scripts/sanitize.sh thread).
final class WorkerPoolTests: XCTestCase {
    func testEveryChunkRunsOncePerJobWhetherThreadsSpinOrSleep() {
        for threads in [2, 3] {
            let pool = WorkerPool(threads: threads)
            XCTAssertEqual(pool.threadCount, threads)
            let chunks = 3 * threads + 1
            let counts = UnsafeMutablePointer<Int>.allocate(capacity: chunks)
            counts.initialize(repeating: 0, count: chunks)
            defer { counts.deallocate() }
            let jobs = 600
            for job in 0..<jobs {
                // Every 50th job comes after a pause (the workers fall asleep); every 50th + 25 has
                // a slow chunk (the caller falls asleep waiting for it when a worker holds it).
                if job % 50 == 0 { usleep(2000) }
                let slowChunk = job % 50 == 25 ? chunks - 1 : -1
                pool.forEachChunk(chunks) { chunk, thread in
                    precondition((0..<threads).contains(thread))
                    if chunk == slowChunk { usleep(3000) }
                    counts[chunk] += 1   // each chunk has its own slot; the job returns after all
                }
                for chunk in 0..<chunks where counts[chunk] != job + 1 {
                    XCTFail("threads \(threads), job \(job): chunk \(chunk) ran \(counts[chunk]) times, expected \(job + 1)")
                    return
                }
            }
        }
    }

    /// Chunks are claimed as threads become free, not dealt out in advance: while one thread is
    /// held inside a chunk, the others take every other chunk of the job (with shares fixed per
    /// thread, the held thread's other chunks would wait for it, and this would time out).
    func testHeldThreadLeavesTheRestToTheOthers() {
        let pool = WorkerPool(threads: 3)
        let chunks = 40
        let done = Atomic<Int>(0), held = Atomic<Int>(-1)
        let ranOn = UnsafeMutablePointer<Int>.allocate(capacity: chunks)
        defer { ranOn.deallocate() }
        var timedOut = false
        pool.forEachChunk(chunks) { chunk, thread in
            ranOn[chunk] = thread
            // The first chunk a worker (not the caller) claims holds it until all others are done.
            if thread != 0, held.compareExchange(expected: -1, desired: thread, ordering: .sequentiallyConsistent).exchanged {
                let start = monotonicNanoseconds()
                while done.load(ordering: .sequentiallyConsistent) < chunks - 1 {
                    if monotonicNanoseconds() &- start > 10_000_000_000 { timedOut = true; break }
                    usleep(100)
                }
            } else {
                usleep(1000)  // long enough that every worker wakes and joins
            }
            done.add(1, ordering: .sequentiallyConsistent)
        }
        XCTAssertFalse(timedOut, "the other threads did not take the held thread's share")
        XCTAssertEqual(done.load(ordering: .sequentiallyConsistent), chunks)
        let heldThread = held.load(ordering: .sequentiallyConsistent)
        XCTAssertEqual((0..<chunks).filter { ranOn[$0] == heldThread }.count, 1, "the held thread ran one chunk")
    }

    func testParallelForCoversTheRangeOnce() {
        let pool = WorkerPool(threads: 3)
        for count in [0, 1, 2, 3, 7, 13, 1000] {
            let seen = UnsafeMutablePointer<Int>.allocate(capacity: max(1, count))
            seen.initialize(repeating: 0, count: max(1, count))
            pool.parallelFor(count) { range in for i in range { seen[i] += 1 } }
            XCTAssertTrue((0..<count).allSatisfy { seen[$0] == 1 }, "count \(count)")
            seen.deallocate()
        }
        for (count, grain) in [(10, 3), (9, 3), (1, 5), (0, 2)] {
            var covered = [Int](repeating: 0, count: count)
            covered.withUnsafeMutableBufferPointer { c in
                let base = c.baseAddress
                pool.forEach(count, grain: grain) { range, _ in
                    XCTAssertLessThanOrEqual(range.count, grain)
                    XCTAssertEqual(range.lowerBound % grain, 0, "chunks start at multiples of the grain")
                    for i in range { base![i] += 1 }
                }
            }
            XCTAssertEqual(covered, [Int](repeating: 1, count: count), "count \(count) grain \(grain)")
        }
    }

    func testChunkGrains() {
        XCTAssertEqual(Chunking.grain(100, threads: 2, perThread: 4), 13)
        XCTAssertEqual(Chunking.grain(100, threads: 2, perThread: 4, multiple: 16), 16)
        XCTAssertEqual(Chunking.grain(3, threads: 4, perThread: 4), 1)
        XCTAssertEqual(Chunking.grain(0, threads: 2, perThread: 4, multiple: 8), 8)
        XCTAssertEqual(Chunking.grain(1000, threads: 1, perThread: 1), 1000)
    }

    func testPoolsTornDownWhileSpinningOrAsleep() {
        // Right after a job (workers spinning), and after a pause (workers asleep): deinit must
        // stop and join them without hanging.
        for pause in [0, 3000] {
            for _ in 0..<20 {
                let pool = WorkerPool(threads: 2)
                let hits = UnsafeMutablePointer<Int>.allocate(capacity: 4)
                hits.initialize(repeating: 0, count: 4)
                pool.forEachChunk(4) { chunk, _ in hits[chunk] += 1 }
                if pause > 0 { usleep(useconds_t(pause)) }
                XCTAssertEqual(hits[0] + hits[1] + hits[2] + hits[3], 4)
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
