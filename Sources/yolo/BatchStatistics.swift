// `yolo detect --stats`: images per second over the run and where the workers' time went
// (read and decode, preprocess, inference, postprocess, idle), with the peak memory; on stderr.
import Dispatch
import Foundation
import YOLO
import YOLOStream

/// The run's totals, summed over the results in input order.
struct BatchStatistics {
    let sessions: Int
    let threads: Int
    private let start = DispatchTime.now().uptimeNanoseconds
    private var images = 0, failures = 0
    private var decode: UInt64 = 0, preprocess: UInt64 = 0, inference: UInt64 = 0, postprocess: UInt64 = 0

    init(sessions: Int, threads: Int) {
        self.sessions = sessions
        self.threads = threads
    }

    mutating func add<Input>(_ r: ImageResult<Input>) {
        images += 1
        if r.error != nil { failures += 1 }
        decode += r.decodeNanoseconds
        preprocess += r.timing.preprocess
        inference += r.timing.inference
        postprocess += r.timing.postprocess
    }

    /// One line: `N images (F failed) in S s: R images/s with ...; per image: ...; sessions busy ...; peak RSS ...`.
    func summary() -> String {
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let n = Double(max(images, 1))
        func ms(_ ns: UInt64) -> String { String(format: "%.1f", Double(ns) / n / 1e6) }
        let busy = Double(decode + preprocess + inference + postprocess) / 1e9 / max(seconds * Double(sessions), 1e-9)
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return "\(images) image\(images == 1 ? "" : "s")\(failures > 0 ? " (\(failures) failed)" : "") in "
            + "\(String(format: "%.2f", seconds)) s: \(String(format: "%.2f", Double(images) / max(seconds, 1e-9))) images/s "
            + "with \(sessions) session\(sessions == 1 ? "" : "s") of \(threads) thread\(threads == 1 ? "" : "s"); "
            + "per image: read and decode \(ms(decode)) ms, preprocess \(ms(preprocess)) ms, inference \(ms(inference)) ms, "
            + "postprocess \(ms(postprocess)) ms; sessions busy \(String(format: "%.1f", 100 * busy))% of the time; "
            + "peak RSS \(String(format: "%.1f", Double(usage.ru_maxrss) / 1024)) MiB"
    }
}
