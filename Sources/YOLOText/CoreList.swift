// CPU lists as users write them (`--cores big`, `--cores 0-3,6`): which of the machine's cores
// the tools run on, chosen from the kernel's view of each core's capacity (big.LITTLE boards such
// as the RK3588's four Cortex-A76 and four A55), and the process pinned to them. docs/threads.md.
import Foundation
import YOLOCore

/// A `--cores` value that names no usable CPU; `description` is the whole message.
public struct CoreListError: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// The cores this process may run on, each with what Linux says of its speed.
public struct MachineCores: Sendable, Equatable {
    public struct Core: Sendable, Equatable {
        public let cpu: Int
        /// `/sys/devices/system/cpu/cpuN/cpu_capacity` (1024 for the fastest), where exposed.
        public let capacity: Int?
        /// `cpufreq/cpuinfo_max_freq` in kHz, where exposed.
        public let maxKHz: Int?
        public init(cpu: Int, capacity: Int?, maxKHz: Int?) { (self.cpu, self.capacity, self.maxKHz) = (cpu, capacity, maxKHz) }
    }
    public let cores: [Core]
    public init(_ cores: [Core]) { self.cores = cores }

    /// How many CPUs this process may run on: its affinity mask's (`taskset`, a container's
    /// cpuset, `--cores`), which Foundation's `activeProcessorCount` does not read.
    public static var available: Int { availableCores() }

    /// This process's allowed CPUs (its affinity mask, else every online CPU), read from /sys.
    public static func current() -> MachineCores {
        let cpus = allowedCPUs() ?? Array(0..<availableCores())
        func number(_ path: String) -> Int? {
            (try? String(contentsOfFile: path, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
        return MachineCores(cpus.map { cpu in
            let dir = "/sys/devices/system/cpu/cpu\(cpu)"
            return Core(cpu: cpu, capacity: number(dir + "/cpu_capacity"), maxKHz: number(dir + "/cpufreq/cpuinfo_max_freq"))
        })
    }

    /// Each core's speed rank: its capacity where the cores' capacities differ, else its top
    /// frequency where those differ, else the same for all.
    private var ranks: [Int] {
        let capacities = cores.map { $0.capacity ?? 0 }, khz = cores.map { $0.maxKHz ?? 0 }
        if Set(capacities).count > 1 { return capacities }
        if Set(khz).count > 1 { return khz }
        return cores.map { _ in 0 }
    }

    /// Whether the cores differ in speed (a big.LITTLE machine, as far as Linux says).
    public var uneven: Bool { Set(ranks).count > 1 }

    /// The CPUs `spec` names: `all`, `big` (the fastest cores), `little` (the slowest; on a
    /// machine whose cores are alike both are every core), or a list of CPU numbers and ranges
    /// (`0-3,6`), each one this process may run on. `option` names the value in errors.
    public func select(_ spec: String, option: String = "--cores") throws(CoreListError) -> [Int] {
        let allowed = cores.map(\.cpu)
        let ranks = self.ranks
        switch spec.trimmingCharacters(in: .whitespaces).lowercased() {
        case "all": return allowed
        case "big": return zip(allowed, ranks).filter { $0.1 == ranks.max() }.map(\.0)
        case "little": return zip(allowed, ranks).filter { $0.1 == ranks.min() }.map(\.0)
        default: break
        }
        var chosen: [Int] = []
        for item in spec.split(separator: ",", omittingEmptySubsequences: false) {
            let bounds = item.split(separator: "-", omittingEmptySubsequences: false).map { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard (1...2).contains(bounds.count), let low = bounds.first!, let high = bounds.last!, low >= 0, low <= high else {
                throw CoreListError(description: "\(option) \(spec): '\(item)' is not a CPU number or range (expected all, big, little, or a list such as 0-3,6)")
            }
            for cpu in low...high where !chosen.contains(cpu) {
                guard allowed.contains(cpu) else {
                    throw CoreListError(description: "\(option) \(spec): CPU \(cpu) is not one this process may run on (it may: \(Self.ranges(allowed)))")
                }
                chosen.append(cpu)
            }
        }
        return chosen.sorted()
    }

    /// `0-3,6` for [0, 1, 2, 3, 6].
    public static func ranges(_ cpus: [Int]) -> String {
        var parts: [String] = [], i = 0
        let s = cpus.sorted()
        while i < s.count {
            var j = i
            while j + 1 < s.count && s[j + 1] == s[j] + 1 { j += 1 }
            parts.append(i == j ? "\(s[i])" : "\(s[i])-\(s[j])")
            i = j + 1
        }
        return parts.joined(separator: ",")
    }

    /// "capacity 1024,1024,446,446; max MHz ...", or nil where Linux exposes neither.
    public var summary: String? {
        var parts: [String] = []
        if cores.contains(where: { $0.capacity != nil }) { parts.append("capacity " + cores.map { $0.capacity.map(String.init) ?? "?" }.joined(separator: ",")) }
        if cores.contains(where: { $0.maxKHz != nil }) { parts.append("max MHz " + cores.map { $0.maxKHz.map { String($0 / 1000) } ?? "?" }.joined(separator: ",")) }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }
}

/// Runs the calling thread, and every thread it starts from now on, on the CPUs `spec` names
/// (`MachineCores.select`); returns them. Call it before any session is made: a session's
/// threads take the set they start with, and its default thread count is the set's size.
@discardableResult
public func runOnCores(_ spec: String, option: String = "--cores") throws(CoreListError) -> [Int] {
    let cpus = try MachineCores.current().select(spec, option: option)
    guard pinCurrentThread(to: cpus) else {
        throw CoreListError(description: "\(option) \(spec): the kernel refused to run this process on CPUs \(MachineCores.ranges(cpus))")
    }
    return cpus
}
