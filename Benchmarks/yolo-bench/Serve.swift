import Foundation
import YOLO

/// `yolo-bench serve`: keeps one network loaded and answers a line protocol on stdin, so a
/// peer benchmark (Benchmarks/peers/compare.py) can interleave our runs with other runtimes'.
///   run K       -> K forwards; prints "ms t1 ... tK"
///   heads DIR   -> writes DIR/head0.f32, DIR/head1.f32 (raw heads of the last forward); prints "ok"
///   quit        -> exits
enum Serve {
    static func run(session network: Session, input: [Float]) throws {
        try network.forward(input)
        print("ready")
        fflush(nil)  // all streams (stdout is not concurrency-safe to name)
        while let line = readLine() {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard let command = parts.first else { continue }
            switch command {
            case "run":
                let k = parts.count > 1 ? Int(parts[1]) ?? 1 : 1
                var times: [String] = []
                for _ in 0..<max(1, k) {
                    let t0 = nowSeconds()
                    network.forward()
                    times.append(String(format: "%.4f", (nowSeconds() - t0) * 1000))
                }
                print("ms " + times.joined(separator: " "))
            case "heads":
                guard parts.count > 1 else { print("error: heads needs a directory"); break }
                try FileManager.default.createDirectory(atPath: parts[1], withIntermediateDirectories: true)
                for (i, head) in network.heads.enumerated() {
                    let data = Data(buffer: head.raw)
                    try data.write(to: URL(fileURLWithPath: "\(parts[1])/head\(i).f32"))
                }
                print("ok")
            case "quit":
                return
            default:
                print("error: unknown command '\(command)'")
            }
            fflush(nil)  // all streams (stdout is not concurrency-safe to name)
        }
    }
}
