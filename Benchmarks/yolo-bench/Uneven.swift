// yolo-bench uneven: forward latency at 1 and N threads with one core made slower by a loop of
// ours (a stand-in for a LITTLE core beside a big one, or a half-stolen vCPU), in interleaved
// rounds. docs/threads.md says how to read it.
import Foundation
import YOLO
import YOLOText
import Synchronization

enum UnevenBench {
    static let usage = """
    usage: yolo-bench uneven [--cpu N] [--busy-ms B] [--idle-ms I] [--policy fifo|other] [--compare-moves]
                             [--threads LIST] [--precision LIST] [--rounds R] [--runs N] [--cfg F] [--weights F]

    Forward latency (median of each round's median) at each thread count, on the idle machine and
    with CPU N (default: the last) slowed by a loop pinned to it: B ms busy, I ms asleep (default
    5 and 5: half speed). --policy fifo (default) runs the loop at SCHED_FIFO priority 1, so it
    takes the core whenever it wants it (needs root or CAP_SYS_NICE); other runs it as an ordinary
    thread that shares the core. Rounds interleave the conditions and thread counts (default 7
    rounds of 10 runs). Prints, per precision, each thread count's time, its ratio to 1 thread (the
    median of each round's ratio) and how often a preempted thread was moved onto a waiting one's
    CPU per slowed forward. --compare-moves adds both conditions again with no thread moved
    (docs/threads.md).
    """

    struct Options {
        var cpu = Machine.cores - 1, busyMs = 5.0, idleMs = 5.0, fifo = true, compareMoves = false
        var threads = [1, Machine.cores].reduce(into: [Int]()) { if !$0.contains($1) { $0.append($1) } }
        var precision: [Precision] = [.fp32, .int8]
        var rounds = 7, runs = 10
        var cfg = DefaultModelFiles.cfg, weights = DefaultModelFiles.weights
    }

    static func parse(_ args: [String]) -> Options {
        var o = Options(), i = 0
        func value() -> String {
            i += 1
            guard i < args.count else { fail("\(args[i - 1]) needs a value") }
            return args[i]
        }
        func number(_ name: String, least: Double) -> Double {
            let s = value()
            guard let v = Double(s), v >= least, v.isFinite else { fail("\(name) \(s): expected a number >= \(fmt(least, 0))") }
            return v
        }
        while i < args.count {
            switch args[i] {
            case "--cpu":
                let v = Int(number("--cpu", least: 0))
                guard v < Machine.cores else { fail("--cpu \(v): this machine has CPUs 0-\(Machine.cores - 1)") }
                o.cpu = v
            case "--busy-ms": o.busyMs = number("--busy-ms", least: 0)
            case "--idle-ms": o.idleMs = number("--idle-ms", least: 0)
            case "--policy":
                let v = value()
                guard v == "fifo" || v == "other" else { fail("--policy \(v): expected fifo or other") }
                o.fifo = v == "fifo"
            case "--threads":
                let list = value().split(separator: ",").map { Int($0) ?? 0 }
                guard !list.isEmpty, list.allSatisfy({ $0 >= 1 }) else { fail("--threads needs counts >= 1") }
                o.threads = list
            case "--precision":
                o.precision = value().split(separator: ",").map {
                    guard let p = Precision(rawValue: String($0)) else { fail("--precision \($0): expected fp32, int8, bf16 or fp16") }
                    return p
                }
            case "--compare-moves": o.compareMoves = true
            case "--rounds": o.rounds = Int(number("--rounds", least: 1))
            case "--runs": o.runs = Int(number("--runs", least: 1))
            case "--cfg": o.cfg = value()
            case "--weights": o.weights = value()
            case "-h", "--help": print(usage); exit(0)
            default: fail("uneven: unknown option '\(args[i])'")
            }
            i += 1
        }
        guard o.busyMs > 0 else { fail("--busy-ms 0 would not slow the core") }
        return o
    }

    static func run(_ args: [String]) {
        let o = parse(args)
        let slower = SlowCore(cpu: o.cpu, busyMs: o.busyMs, idleMs: o.idleMs, fifo: o.fifo)
        print("yolo-bench uneven: \(Machine.cpuModel), \(Machine.cores) cores\(MachineCores.current().summary.map { "; " + $0 } ?? "")")
        print("slowed:     CPU \(o.cpu) by a \(o.fifo ? "SCHED_FIFO" : "SCHED_OTHER") loop, \(fmt(o.busyMs, 1)) ms busy / \(fmt(o.idleMs, 1)) ms idle; \(o.rounds) rounds of \(o.runs) runs")
        do {
            for precision in o.precision {
                var options = ModelOptions(planning: .table, precision: precision)
                options.tuningThreads = o.threads.max()
                let model = try Model(cfgPath: o.cfg, weightsPath: o.weights, options: options)
                let sessions = try o.threads.map { try Session(model: model, threads: $0) }
                let input = Array(sessions[0].input)
                for s in sessions { try s.forward(input); for _ in 0..<3 { s.forward() } }
                // Conditions: idle, slowed, then (--compare-moves) the same with no thread moved.
                let names = ["idle", "CPU \(o.cpu) slowed"] + (o.compareMoves ? ["idle, none moved", "slowed, none moved"] : [])
                // [condition][thread count index] -> each round's median.
                var medians = [[[Double]]](repeating: [[Double]](repeating: [], count: sessions.count), count: names.count)
                var moved = 0, movedCallers = 0, slowedForwards = 0
                for _ in 0..<o.rounds {
                    for condition in names.indices {
                        let slowed = condition % 2 == 1
                        if slowed { try slower.start() }
                        PreemptedThreadMoves.shared.enabled = condition < 2
                        let movedBefore = PreemptedThreadMoves.shared.count
                        let callersBefore = PreemptedThreadMoves.shared.callerCount
                        for (k, s) in sessions.enumerated() {
                            s.forward()
                            let times = (0..<o.runs).map { _ in
                                let t0 = nowSeconds()
                                s.forward()
                                return (nowSeconds() - t0) * 1000
                            }
                            medians[condition][k].append(Stats(times).median)
                        }
                        if condition == 1 {
                            moved += PreemptedThreadMoves.shared.count - movedBefore
                            movedCallers += PreemptedThreadMoves.shared.callerCount - callersBefore
                            slowedForwards += sessions.filter { $0.threads > 1 }.count * (o.runs + 1)
                        }
                        if slowed { slower.stop() }
                    }
                }
                PreemptedThreadMoves.shared.enabled = true
                print("")
                print("\(precision), \(model.gemmKernels):")
                print("  \(pad("condition", 22)) \(o.threads.map { lpad("\($0) thr ms", 22) }.joined())  ratio to 1 thread")
                for (condition, name) in names.enumerated() {
                    let stats = medians[condition].map { Stats($0) }
                    let cells = stats.map { lpad("\(fmt($0.median)) (\(fmt($0.min))-\(fmt($0.max)))", 22) }.joined()
                    // Each round's ratio, then their median: a host whose speed changes from one
                    // minute to the next moves both counts of a round alike.
                    let rounds = medians[condition]
                    let ratios = o.threads.firstIndex(of: 1).map { one in
                        rounds.indices.map { k in
                            fmt(Stats(zip(rounds[k], rounds[one]).map { $0 / $1 }).median)
                        }.joined(separator: " / ")
                    } ?? "-"
                    print("  \(pad(name, 22)) \(cells)  \(ratios)")
                }
                if slowedForwards > 0 {
                    print("  preempted threads moved: \(fmt(Double(moved) / Double(slowedForwards))) per slowed forward of more than one thread (of them callers: \(fmt(Double(movedCallers) / Double(slowedForwards))))")
                }
            }
        } catch {
            fail("\(error)", code: 1)
        }
    }
}

/// A thread pinned to one CPU that spins `busyMs` then sleeps `idleMs`, over and over, while
/// started: that CPU then runs other threads at the remaining share of its speed.
final class SlowCore: @unchecked Sendable {
    let cpu: Int, busyMs: Double, idleMs: Double, fifo: Bool
    private let running = Atomic<Bool>(false)
    private var thread: pthread_t?

    init(cpu: Int, busyMs: Double, idleMs: Double, fifo: Bool) {
        (self.cpu, self.busyMs, self.idleMs, self.fifo) = (cpu, busyMs, idleMs, fifo)
    }

    func start() throws {
        running.store(true, ordering: .sequentiallyConsistent)
        let box = Unmanaged.passRetained(self).toOpaque()
        var t = pthread_t()
        let rc = pthread_create(&t, nil, { raw in
            let me = Unmanaged<SlowCore>.fromOpaque(raw!).takeRetainedValue()
            me.loop()
            return nil
        }, box)
        guard rc == 0 else { throw BenchError("pthread_create: \(String(cString: strerror(rc)))") }
        thread = t
    }

    func stop() {
        running.store(false, ordering: .sequentiallyConsistent)
        if let t = thread { pthread_join(t, nil) }
        thread = nil
    }

    private func loop() {
        do { try runOnCores("\(cpu)", option: "--cpu") } catch { fail("uneven: \(error)", code: 1) }
        if fifo {
            var param = sched_param(sched_priority: 1)
            let rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param)
            if rc != 0 {
                fail("uneven: SCHED_FIFO refused (\(String(cString: strerror(rc)))): run as root, or with --policy other", code: 1)
            }
        }
        let busy = UInt64(busyMs * 1e6)
        var pause = timespec(tv_sec: Int(idleMs / 1000), tv_nsec: Int((idleMs * 1e6).truncatingRemainder(dividingBy: 1e9)))
        while running.load(ordering: .relaxed) {
            let t0 = DispatchTime.now().uptimeNanoseconds
            while DispatchTime.now().uptimeNanoseconds &- t0 < busy {}
            if idleMs > 0 { nanosleep(&pause, nil) }
        }
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
