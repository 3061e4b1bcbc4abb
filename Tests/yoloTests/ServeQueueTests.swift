// The server's waiting parts in-process (YOLOServe's WorkQueue and FrameSlot, over `Locked` with
// conditions): bounded admission, draining (finished, or given up at a deadline), and the live
// view's one-frame slot, stale frames dropped or waited for. CI runs them under ThreadSanitizer.
import Foundation
import XCTest
@testable import YOLOServe
import YOLOCore

final class ServeQueueTests: XCTestCase {
    func testQueueAdmitsUpToItsCapacityAndDrainRunsWhatItAdmitted() {
        let queue = WorkQueue(workers: 2, capacity: 3)
        let gate = Locked(false, conditions: 1)
        let ran = Locked(0)
        // Two workers held at the gate, three waiting: the queue is full.
        for _ in 0..<5 {
            XCTAssertTrue(queue.reserve())
            queue.enqueue {
                gate.withLock(until: { $0 }) { _ in }
                ran.withLock { $0 += 1 }
            }
            while queue.depth > 0 && queue.active < 2 { usleep(1_000) }
        }
        XCTAssertEqual(queue.depth, 3)
        XCTAssertFalse(queue.reserve(), "a full queue admitted a request")
        gate.withLock { $0 = true }
        gate.broadcast()
        XCTAssertTrue(queue.drain())
        XCTAssertEqual(ran.withLock { $0 }, 5)
        XCTAssertFalse(queue.reserve(), "a drained queue admitted a request")
    }

    func testDrainGivesUpAtItsDeadlineWhileWorkRuns() {
        let queue = WorkQueue(workers: 1, capacity: 1)
        let gate = Locked(false, conditions: 1)
        XCTAssertTrue(queue.reserve())
        queue.enqueue { gate.withLock(until: { $0 }) { _ in } }
        let start = monotonicNanoseconds()
        XCTAssertFalse(queue.drain(until: start + 30_000_000))
        XCTAssertGreaterThanOrEqual(monotonicNanoseconds() - start, 30_000_000)
        gate.withLock { $0 = true }
        gate.broadcast()
        XCTAssertTrue(queue.drain())
        XCTAssertEqual(queue.active, 0)
    }

    func testDrainWaitsForAReservedPlaceToBeFilled() {
        let queue = WorkQueue(workers: 3, capacity: 2)
        XCTAssertTrue(queue.reserve())
        let drained = Locked(false)
        let drainer = startThread {
            let finished = queue.drain()
            drained.withLock { $0 = finished }
        }
        usleep(20_000)
        XCTAssertFalse(drained.withLock { $0 }, "drain ended with a place reserved")
        let ran = Locked(false)
        queue.enqueue { ran.withLock { $0 = true } }
        drainer?.join()
        XCTAssertTrue(drained.withLock { $0 })
        XCTAssertTrue(ran.withLock { $0 })
    }

    private static func frame(_ n: Int) -> LiveFrame {
        LiveFrame(pixels: [UInt8(n), 0, 0], width: 1, height: 1, index: n, time: Double(n), decodeNanoseconds: 0)
    }

    func testSlotDroppingStaleFramesKeepsTheNewestAndCountsTheRest() {
        let slot = FrameSlot(dropStale: true)
        for n in 0..<3 { XCTAssertTrue(slot.put(Self.frame(n))) }
        let taken = slot.take()
        XCTAssertEqual(taken?.0.index, 2)
        XCTAssertEqual(taken?.1, 2)
        slot.finish()
        XCTAssertNil(slot.take())
        XCTAssertFalse(slot.put(Self.frame(3)))
    }

    func testSlotKeepingEveryFrameMakesPutWaitForTake() {
        let slot = FrameSlot(dropStale: false)
        let putCount = Locked(0)
        let producer = startThread {
            for n in 0..<4 { if slot.put(Self.frame(n)) { putCount.withLock { $0 += 1 } } }
            slot.finish()
        }
        usleep(20_000)
        XCTAssertEqual(putCount.withLock { $0 }, 1, "put did not wait for the slot to be taken")
        var seen: [Int] = []
        while let (f, dropped) = slot.take() {
            XCTAssertEqual(dropped, 0)
            seen.append(f.index)
        }
        producer?.join()
        XCTAssertEqual(seen, [0, 1, 2, 3])
    }
}
