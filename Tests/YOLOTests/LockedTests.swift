// Tests of `Locked` (YOLOCore/Locking.swift), the lock that owns its state and its conditions:
// waiting with a predicate, timed waits, and many threads on one lock. CI runs them under
// ThreadSanitizer too (scripts/sanitize.sh thread).
import Foundation
import XCTest
@testable import YOLOCore

final class LockedTests: XCTestCase {
    /// Runs `body(i)` for i in 0..<count, each on a thread of its own, and waits for all.
    private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let threads = (0..<count).map { i in startThread { body(i) } }
        for t in threads { XCTAssertNotNil(t); t?.join() }
    }

    func testWithLockGivesTheStateAndReturnsTheResult() {
        let lock = Locked([1, 2])
        let count = lock.withLock { s -> Int in s.append(3); return s.count }
        XCTAssertEqual(count, 3)
        XCTAssertEqual(lock.withLock { $0 }, [1, 2, 3])
    }

    func testWaitingWithAPredicateReturnsOnlyOnceItHolds() {
        let lock = Locked(0, conditions: 1)
        let seen = Locked<[Int]>([])
        // The waiter must not run its body at 1 or 2: only the change that makes 3 lets it through.
        let waiter = startThread {
            let value = lock.withLock(until: { $0 >= 3 }) { $0 }
            seen.withLock { $0.append(value) }
        }
        for _ in 0..<3 {
            usleep(5_000)
            XCTAssertEqual(seen.withLock { $0 }, [], "the waiter ran before its predicate held")
            lock.withLock { $0 += 1 }
            lock.broadcast()
        }
        waiter?.join()
        XCTAssertEqual(seen.withLock { $0 }, [3])
    }

    func testAPredicateThatAlreadyHoldsDoesNotWait() {
        let lock = Locked(true, conditions: 1)
        // No one will signal: a wait here would never end.
        XCTAssertTrue(lock.withLock(until: { $0 }) { $0 })
        XCTAssertTrue(lock.withLock(until: { $0 }, deadline: 0) { _, ready in ready })
    }

    func testATimedWaitGivesUpAtItsDeadline() {
        let lock = Locked(0, conditions: 1)
        let start = monotonicNanoseconds()
        let deadline = start + 30_000_000
        let ready = lock.withLock(until: { $0 > 0 }, deadline: deadline) { _, ready in ready }
        XCTAssertFalse(ready)
        XCTAssertGreaterThanOrEqual(monotonicNanoseconds(), deadline)
        // A deadline already past: the predicate is checked once, then it gives up.
        XCTAssertFalse(lock.withLock(until: { $0 > 0 }, deadline: start) { _, ready in ready })
    }

    func testATimedWaitEndsWhenThePredicateComesTrueBeforeTheDeadline() {
        let lock = Locked(0, conditions: 1)
        let setter = startThread {
            usleep(10_000)
            lock.withLock { $0 = 7 }
            lock.signal()
        }
        let start = monotonicNanoseconds()
        let (ready, value) = lock.withLock(until: { $0 == 7 }, deadline: start + 60_000_000_000) { s, ready in (ready, s) }
        setter?.join()
        XCTAssertTrue(ready)
        XCTAssertEqual(value, 7)
        XCTAssertLessThan(monotonicNanoseconds() - start, 30_000_000_000, "the wait outlived the change")
    }

    func testManyThreadsIncrementingLoseNothing() {
        let lock = Locked(0)
        onThreads(8) { _ in for _ in 0..<10_000 { lock.withLock { $0 += 1 } } }
        XCTAssertEqual(lock.withLock { $0 }, 80_000)
    }

    /// A bounded queue over two conditions (producers wait for room, consumers for items), with
    /// `signal` only: every item is taken exactly once, none is lost, no thread is left asleep.
    func testProducersAndConsumersOnTwoConditions() {
        struct Queue { var items: [Int] = []; var consumed = 0; var taken: [Int] = [] }
        let room = 0, items = 1, capacity = 3, producers = 4, consumers = 4, perProducer = 500
        let lock = Locked(Queue(), conditions: 2)
        let total = producers * perProducer
        onThreads(producers + consumers) { i in
            if i < producers {
                for n in 0..<perProducer {
                    lock.withLock(waitingOn: room, until: { $0.items.count < capacity }) { $0.items.append(i * perProducer + n) }
                    lock.signal(items)
                }
            } else {
                // Each consumer takes until all are taken; the last item wakes every consumer.
                while true {
                    let item = lock.withLock(waitingOn: items, until: { !$0.items.isEmpty || $0.consumed == total }) { q -> Int? in
                        guard !q.items.isEmpty else { return nil }
                        q.consumed += 1
                        let item = q.items.removeFirst()
                        q.taken.append(item)
                        return item
                    }
                    guard item != nil else { break }
                    lock.signal(room)
                    if lock.withLock({ $0.consumed == total }) { lock.broadcast(items) }
                }
            }
        }
        let taken = lock.withLock { $0.taken }
        XCTAssertEqual(taken.count, total)
        XCTAssertEqual(Set(taken), Set(0..<total))
    }

    func testBroadcastWakesEveryWaiterAndSignalOne() {
        let lock = Locked((open: 0, through: 0), conditions: 1)
        let waiters = 6
        let threads = (0..<waiters).map { _ in
            startThread {
                // Each waiter needs a token: `open` counts the tokens handed out.
                lock.withLock(until: { $0.open > 0 }) { $0.open -= 1; $0.through += 1 }
            }
        }
        // Wait for none to pass (no token yet), then hand out one token with signal.
        usleep(20_000)
        XCTAssertEqual(lock.withLock { $0.through }, 0)
        lock.withLock { $0.open += 1 }
        lock.signal()
        while lock.withLock({ $0.through }) < 1 { usleep(1_000) }
        usleep(20_000)
        XCTAssertEqual(lock.withLock { $0.through }, 1, "one token let more than one waiter through")
        // The rest at once: broadcast wakes them all.
        lock.withLock { $0.open += waiters - 1 }
        lock.broadcast()
        for t in threads { t?.join() }
        XCTAssertEqual(lock.withLock { $0.through }, waiters)
        XCTAssertEqual(lock.withLock { $0.open }, 0)
    }
}
