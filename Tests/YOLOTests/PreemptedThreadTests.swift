import Foundation
import XCTest
import Synchronization
@testable import YOLOEngine
@testable import YOLOCore

/// A pool's thread that holds a chunk without running is moved onto the CPU of the thread that
/// waits for it, and gets its own CPUs back once out of the job (PreemptedThreads.swift,
/// docs/threads.md). A thread asleep inside a chunk stands in for a preempted one: its CPU clock
/// stands still the same way. CI runs these under ThreadSanitizer too.
final class PreemptedThreadTests: XCTestCase {
    private func skipUnlessMovable() throws -> [Int] {
        guard let cpus = allowedCPUs(), cpus.count > 1, currentThreadID() != nil, currentCPU() != nil,
              let me = currentThreadID(), threadCPUTime(of: me) != nil else {
            throw XCTSkip("needs Linux with two CPUs or more to move threads between")
        }
        XCTAssertTrue(PreemptedThreadMoves.shared.enabled)
        return cpus
    }

    /// Waits up to 5 s for `condition`, looking every `poll` µs.
    private func eventually(poll: UInt32 = 200, _ condition: () -> Bool) -> Bool {
        let start = monotonicNanoseconds()
        while !condition() {
            if monotonicNanoseconds() &- start > 5_000_000_000 { return false }
            usleep(poll)
        }
        return true
    }

    /// Sleeps (2 ms at a time: a clock that stands still between wake-ups) until the calling
    /// thread finds itself moved onto one CPU, or 5 s passed; true when moved. A fixed sleep
    /// was too short on a machine busy enough to keep the mover from running.
    private func sleepUntilMoved() -> Bool { eventually(poll: 2000) { affinity(of: 0)?.count == 1 } }

    func testCallerMovesAWorkerThatHoldsTheLastChunkWithoutRunning() throws {
        let cpus = try skipUnlessMovable()
        let pool = WorkerPool(threads: 2)
        let workerThread = Atomic<Int32>(0)
        let ran = Atomic<Int>(0)
        let before = PreemptedThreadMoves.shared.count, callersBefore = PreemptedThreadMoves.shared.callerCount
        pool.forEachChunk(2) { _, thread in
            if thread == 0 {
                // Hold the caller's first chunk until the worker has its own.
                XCTAssertTrue(eventually { workerThread.load(ordering: .acquiring) != 0 }, "the worker never took a chunk")
            } else {
                workerThread.store(currentThreadID() ?? -1, ordering: .releasing)
                // Asleep: its clock stands still, as a preempted thread's does.
                XCTAssertTrue(sleepUntilMoved(), "the sleeping worker was not moved")
            }
            ran.add(1, ordering: .relaxed)
        }
        XCTAssertEqual(ran.load(ordering: .relaxed), 2)
        XCTAssertGreaterThan(PreemptedThreadMoves.shared.count, before, "the sleeping worker was not moved")
        XCTAssertEqual(PreemptedThreadMoves.shared.callerCount, callersBefore, "a worker's move was counted as the caller's")
        let worker = workerThread.load(ordering: .acquiring)
        XCTAssertTrue(eventually { affinity(of: worker) == cpus }, "the worker did not get its CPUs back: \(affinity(of: worker) ?? [])")
    }

    func testWorkerMovesTheCallerWhenTheCallerHoldsTheLastChunk() throws {
        let cpus = try skipUnlessMovable()
        let pool = WorkerPool(threads: 2)
        let workerRan = Atomic<Bool>(false), callerIn = Atomic<Bool>(false)
        let before = PreemptedThreadMoves.shared.count, callersBefore = PreemptedThreadMoves.shared.callerCount
        var movedWhileAsleep = false
        // Each side holds its chunk until the other has one, so that the caller sleeps in its
        // own (a worker claiming both first would leave the caller none).
        pool.forEachChunk(2) { _, thread in
            if thread == 0 {
                callerIn.store(true, ordering: .releasing)
                XCTAssertTrue(eventually { workerRan.load(ordering: .acquiring) }, "the worker never took a chunk")
                movedWhileAsleep = sleepUntilMoved()
            } else {
                workerRan.store(true, ordering: .releasing)
                XCTAssertTrue(eventually { callerIn.load(ordering: .acquiring) }, "the caller never took a chunk")
            }
        }
        XCTAssertTrue(movedWhileAsleep, "the sleeping caller was not moved")
        XCTAssertGreaterThan(PreemptedThreadMoves.shared.count, before)
        XCTAssertGreaterThan(PreemptedThreadMoves.shared.callerCount, callersBefore, "the move was not counted as the caller's")
        XCTAssertEqual(affinity(of: 0), cpus, "the caller did not get its CPUs back")
    }

    /// Jobs whose chunks sleep now and then, over many jobs and both kinds of move: every chunk
    /// runs once, and every thread ends with its own CPUs.
    func testJobsWithSleepingChunksRunEveryChunkOnceAndRestoreEveryThread() throws {
        let cpus = try skipUnlessMovable()
        let threadCount = min(3, cpus.count)
        let pool = WorkerPool(threads: threadCount)
        let chunks = 7
        let counts = UnsafeMutablePointer<Int>.allocate(capacity: chunks)
        counts.initialize(repeating: 0, count: chunks)
        defer { counts.deallocate() }
        let before = PreemptedThreadMoves.shared.count
        let threads = UnsafeMutablePointer<Atomic<Int32>>.allocate(capacity: threadCount)
        for t in 0..<threadCount { (threads + t).initialize(to: Atomic<Int32>(0)) }
        defer { threads.deallocate() }
        for job in 0..<60 {
            pool.forEachChunk(chunks) { chunk, thread in
                threads[thread].store(currentThreadID() ?? 0, ordering: .relaxed)
                if (chunk + job) % 5 == 0 { usleep(2000) }
                counts[chunk] += 1
            }
            XCTAssertEqual(affinity(of: 0), cpus, "job \(job): the caller kept a moved mask")
        }
        for chunk in 0..<chunks { XCTAssertEqual(counts[chunk], 60, "chunk \(chunk)") }
        XCTAssertGreaterThan(PreemptedThreadMoves.shared.count, before, "no thread asleep in a chunk was moved")
        for t in 1..<threadCount {
            let id = threads[t].load(ordering: .relaxed)
            guard id != 0 else { continue }
            XCTAssertTrue(eventually { affinity(of: id) == cpus }, "worker \(t) kept a moved mask")
        }
    }

    /// A pool with more threads than CPUs moves none: its threads take turns on the CPUs anyway.
    func testPoolWithMoreThreadsThanCPUsMovesNothing() throws {
        let cpus = try skipUnlessMovable()
        guard cpus.count < 16 else { throw XCTSkip("\(cpus.count) CPUs: a pool of more threads is too many for a test") }
        let pool = WorkerPool(threads: cpus.count + 1)
        let before = PreemptedThreadMoves.shared.count
        let workerTook = Atomic<Bool>(false)
        pool.forEachChunk(2) { _, thread in
            if thread == 0 {
                XCTAssertTrue(eventually { workerTook.load(ordering: .acquiring) }, "no worker took a chunk")
            } else {
                workerTook.store(true, ordering: .releasing)
                usleep(20_000)
            }
        }
        XCTAssertEqual(PreemptedThreadMoves.shared.count, before, "a thread of an oversubscribed pool was moved")
    }
}
