import Foundation
import XCTest
import YOLOText

/// `--cores`: which CPUs a value names (on machines described here, as big.LITTLE boards are),
/// its errors, and the process really running on them afterwards.
final class CoreListTests: XCTestCase {
    /// An RK3588 as Linux describes it: CPUs 0-3 Cortex-A55 (capacity 414, 1.8 GHz), 4-7
    /// Cortex-A76 (1024, 2.4 GHz).
    let rk3588 = MachineCores((0..<8).map {
        MachineCores.Core(cpu: $0, capacity: $0 < 4 ? 414 : 1024, maxKHz: $0 < 4 ? 1_800_000 : 2_400_000)
    })

    func testBigLittleAllAndLists() throws {
        XCTAssertTrue(rk3588.uneven)
        XCTAssertEqual(try rk3588.select("big"), [4, 5, 6, 7])
        XCTAssertEqual(try rk3588.select("little"), [0, 1, 2, 3])
        XCTAssertEqual(try rk3588.select("all"), Array(0..<8))
        XCTAssertEqual(try rk3588.select("6,0-2,1"), [0, 1, 2, 6])
        XCTAssertEqual(rk3588.summary, "capacity 414,414,414,414,1024,1024,1024,1024; max MHz 1800,1800,1800,1800,2400,2400,2400,2400")
        XCTAssertEqual(MachineCores.ranges([0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9")

        // Only frequencies differ (no cpu_capacity): they decide.
        let byFrequency = MachineCores([.init(cpu: 0, capacity: nil, maxKHz: 1_000_000), .init(cpu: 1, capacity: nil, maxKHz: 2_000_000)])
        XCTAssertEqual(try byFrequency.select("big"), [1])
        // Alike cores (this x86 machine, a VM): big and little are every core.
        let alike = MachineCores([.init(cpu: 0, capacity: nil, maxKHz: nil), .init(cpu: 1, capacity: nil, maxKHz: nil)])
        XCTAssertFalse(alike.uneven)
        XCTAssertEqual(try alike.select("big"), [0, 1])
        XCTAssertEqual(try alike.select("little"), [0, 1])
        XCTAssertNil(alike.summary)
        // A process already limited to CPUs 4 and 5 (taskset): the list names only those.
        let limited = MachineCores(rk3588.cores.filter { [4, 5].contains($0.cpu) })
        XCTAssertEqual(try limited.select("big"), [4, 5])
    }

    func testBadValuesNameTheProblem() {
        for (spec, message) in [("9", "CPU 9 is not one this process may run on (it may: 0-7)"),
                                ("3-1", "'3-1' is not a CPU number or range"), ("x", "'x' is not a CPU number or range"),
                                ("1,", "'' is not a CPU number or range"), ("-1", "'-1' is not a CPU number or range"),
                                ("2-", "'2-' is not a CPU number or range")] {
            XCTAssertThrowsError(try rk3588.select(spec)) { error in
                XCTAssertEqual("\(error)".contains(message), true, "\(spec): \(error)")
                XCTAssertTrue("\(error)".hasPrefix("--cores \(spec): "), "\(error)")
            }
        }
    }

    /// On this machine: a thread that asks for its first CPU then runs there alone (its affinity
    /// read back), and the default thread count follows.
    func testRunOnCoresPinsTheThread() throws {
        let first = try XCTUnwrap(MachineCores.current().cores.first?.cpu)
        final class Box: @unchecked Sendable { var cpus: [Int] = []; var available = 0; var error: String? }
        let result = Box(), done = DispatchSemaphore(value: 0)
        Thread {
            do {
                result.cpus = try runOnCores("\(first)")
                result.available = MachineCores.available
            } catch {
                result.error = "\(error)"
            }
            done.signal()
        }.start()
        done.wait()
        XCTAssertNil(result.error)
        XCTAssertEqual(result.cpus, [first])
        XCTAssertEqual(result.available, 1, "the thread's count follows its CPU set")
    }
}
