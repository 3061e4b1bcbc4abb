import Foundation
import YOLO
import YOLOText

/// Facts about the machine and the process, read from /proc where Linux has them.
enum Machine {
    static var cpuModel: String {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "unknown" }
        for line in text.split(separator: "\n") where line.hasPrefix("model name") || line.hasPrefix("Model") {
            if let colon = line.firstIndex(of: ":") { return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces) }
        }
        return "unknown"
    }

    static var cores: Int { MachineCores.available }

    /// The vector extensions the CPU reports that matter for our kernels and OpenBLAS's.
    static var cpuVectorFeatures: String {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("flags") || $0.hasPrefix("Features") })
        else { return "unknown" }
        let flags = Set(line.split(separator: " ").map(String.init))
        let interesting = ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_bf16", "asimd", "asimdhp", "sve"]
        return interesting.filter { flags.contains($0) }.joined(separator: " ")
    }

    /// Peak resident set size so far, in MiB (VmHWM).
    static var peakRSSMiB: Double { statusField("VmHWM") / 1024 }
    static var rssMiB: Double { statusField("VmRSS") / 1024 }

    private static func statusField(_ name: String) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
            let digits = line.split(separator: " ").dropFirst().first ?? "0"
            return Double(digits.trimmingCharacters(in: .whitespaces)) ?? 0
        }
        return 0
    }

    /// Milliseconds since this process started (from /proc/self/stat; 10 ms resolution).
    static var millisecondsSinceProcessStart: Double? {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let uptimeText = try? String(contentsOfFile: "/proc/uptime", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // Field 22 of /proc/pid/stat (starttime) is the 20th after the command name.
        guard fields.count > 19, let ticks = Double(fields[19]),
              let uptime = Double(uptimeText.split(separator: " ")[0]) else { return nil }
        let hz = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (uptime - ticks / hz) * 1000
    }
}

/// How busy the machine was with other processes: CPU time all cores spent busy (/proc/stat:
/// user, nice, system, irq, softirq, steal) less this process's own (/proc/self/stat: utime +
/// stime), both in clock ticks, over a stretch of wall time. Steal counts as another's: a
/// hypervisor gave the core to another guest.
struct LoadSample {
    let busyTicks: Double, ownTicks: Double, time: Double

    /// Other processes' share of a core on average: above `LoadSample.quietLimit` the machine was
    /// not quiet.
    static let quietLimit = 0.10

    static func now() -> LoadSample? {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let cpu = stat.split(separator: "\n").first, cpu.hasPrefix("cpu "),
              let own = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let close = own.lastIndex(of: ")") else { return nil }
        let t = cpu.split(separator: " ").dropFirst().compactMap { Double($0) }
        // Fields after the command name: utime and stime are the 12th and 13th (from 0: 11, 12).
        let f = own[own.index(after: close)...].split(separator: " ")
        guard t.count >= 8, f.count > 12, let utime = Double(f[11]), let stime = Double(f[12]) else { return nil }
        // user nice system idle iowait irq softirq steal
        return LoadSample(busyTicks: t[0] + t[1] + t[2] + t[5] + t[6] + t[7], ownTicks: utime + stime, time: nowSeconds())
    }

    /// Cores' worth of CPU that other processes used from `self` to `later`. A tick or two is
    /// sampling noise between the two counters, not load.
    func otherCores(until later: LoadSample) -> Double {
        let ticks = (later.busyTicks - busyTicks) - (later.ownTicks - ownTicks)
        guard ticks > 2, later.time > time else { return 0 }
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK))) / (later.time - time)
    }
}

func nowSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

struct Stats {
    let min: Double, median: Double, max: Double, mean: Double
    /// Interquartile range over the median: above about 0.1 the machine was too busy to trust
    /// small differences.
    let spread: Double
    init(_ values: [Double]) {
        let s = values.sorted()
        let q1 = s.isEmpty ? 0 : s[s.count / 4], q3 = s.isEmpty ? 0 : s[(3 * s.count) / 4]
        min = s.first ?? 0
        max = s.last ?? 0
        median = s.isEmpty ? 0 : (s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2)
        mean = s.isEmpty ? 0 : s.reduce(0, +) / Double(s.count)
        spread = median > 0 ? (q3 - q1) / median : 0
    }
}

func fmt(_ v: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", v) }
func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }
func lpad(_ s: String, _ n: Int) -> String { s.count >= n ? s : String(repeating: " ", count: n - s.count) + s }
