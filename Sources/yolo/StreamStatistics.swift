// `yolo stream`'s statistics on stderr: frames per second and per-stage latency once a
// second, naming the last frame and its time as the JSON does, and a summary at the end.
import Foundation
import YOLOStream

/// Live statistics on stderr, once a second, and a summary at the end.
struct StreamStatistics {
    let enabled: Bool
    private let start = DispatchTime.now().uptimeNanoseconds
    private var lastPrint = DispatchTime.now().uptimeNanoseconds
    private var frames = 0, totalFrames = 0
    private var decode: UInt64 = 0, preprocess: UInt64 = 0, inference: UInt64 = 0, postprocess: UInt64 = 0, draw: UInt64 = 0
    private var lastIndex = -1
    private var lastTime = 0.0

    init(enabled: Bool) { self.enabled = enabled }

    mutating func add(_ r: FrameResult, drawNanoseconds: UInt64, skippedTotal: Int) {
        frames += 1; totalFrames += 1
        decode += r.frame.decodeNanoseconds
        preprocess += r.timing.preprocess; inference += r.timing.inference; postprocess += r.timing.postprocess
        draw += drawNanoseconds
        lastIndex = r.frame.index
        lastTime = r.frame.time
        let now = DispatchTime.now().uptimeNanoseconds
        if now - lastPrint >= 1_000_000_000 {
            report(now: now, skippedTotal: skippedTotal)
        }
    }

    private mutating func report(now: UInt64, skippedTotal: Int) {
        defer {
            lastPrint = now
            frames = 0; decode = 0; preprocess = 0; inference = 0; postprocess = 0; draw = 0
        }
        guard enabled, frames > 0 else { return }
        let seconds = Double(now - lastPrint) / 1e9
        let n = Double(frames)
        func ms(_ ns: UInt64) -> String { String(format: "%.1f", Double(ns) / n / 1e6) }
        printError("yolo: stream: frame \(lastIndex) time \(String(format: "%.3f", lastTime))s: "
                   + "\(String(format: "%.1f", n / seconds)) fps; per frame: decode \(ms(decode)) ms, "
                   + "preprocess \(ms(preprocess)) ms, inference \(ms(inference)) ms, postprocess \(ms(postprocess)) ms, "
                   + "draw \(ms(draw)) ms; skipped \(skippedTotal)")
    }

    mutating func finish(skippedTotal: Int) {
        let now = DispatchTime.now().uptimeNanoseconds
        report(now: now, skippedTotal: skippedTotal)
        guard enabled else { return }
        let seconds = Double(now - start) / 1e9
        printError("yolo: stream: done: \(totalFrames) frames (last frame \(lastIndex), time \(String(format: "%.3f", lastTime))s), "
                   + "\(skippedTotal) skipped, in \(String(format: "%.2f", seconds)) s: "
                   + "\(String(format: "%.2f", Double(totalFrames) / max(seconds, 1e-9))) fps")
    }
}
