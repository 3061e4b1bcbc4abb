// The plan cache: measured algorithm choices stored per CPU, kernel level, threads, cfg and input
// size, so the next load of the same model on the same machine measures nothing. One small text
// file per key in a directory ($XDG_CACHE_HOME/yolo-swift/plans by default):
//
//   yolo-swift plan 1
//   key <the whole key text>
//   node 0-1 direct+pool | direct+pool 1.130 im2col 2.104 winograd2 2.050 winograd4 1.912
//   node 4 winograd4 | im2col 1.530 winograd2 1.210 winograd4 0.910
//
// An entry is trusted only when it parses, its key equals the model's, and it names one of the
// current candidates for every node that has a choice: anything else is ignored with a warning
// and measured again. The key ends with the engine's build (its version, `kernelRevision` and the
// kernel set's signature), which does not name the file: an entry another build measured is found,
// reported as such and (measuring) replaced.
import YOLOCore

/// One measured node: the algorithm chosen and every candidate's milliseconds.
struct CachedChoice: Equatable {
    var layers: ClosedRange<Int>
    var chosen: ConvAlgorithm
    var timings: [PlanReport.Timing]
}

/// Measured plans stored per CPU, model, threads and options (`yolo tune`), read back at load.
public enum PlanCache {
    /// The plan format; bumped when what is measured or how it is chosen changes.
    static let formatVersion = 1
    /// Bumped when a kernel or an algorithm changes its speed in a way the kernel set's signature
    /// does not show (an inner loop, a transform): plans measured before are measured again.
    /// 2: vpdpwssd in the VNNI levels' pair GEMM, the avxvnni level.
    /// 3: F(2x2)'s fused INT8 input pass and its output transform fused with the pool; the direct
    /// conv's vectorized row split.
    /// 4: two-vector tails of the INT8 and FP16 GEMMs' last, partial panel.
    /// 5: the direct conv + pool in FP16 (`direct+pool-fp16`), a new candidate; the spin budget in time.
    /// 6: the direct conv + pool on int16 pairs (`direct+pool-int8`), a new candidate.
    /// 7: BF16 candidates in INT8 models where the CPU has AVX-512 BF16 and no FP16 arithmetic; the
    /// BF16 GEMM's column kernel for the last few columns.
    /// 8: INT8 im2col on 10-bit inputs in two 8-bit passes (`a10` layers), a new candidate.
    /// 9: at the amx level, INT8 and BF16 im2col of 3x3 stride-1 layers as tap products (TapConv.swift).
    /// 10: at the other levels, INT8 im2col of 3x3 stride-1 layers with B packed from padded planes
    /// (Int8PlaneB.swift): faster, so plans measured before may choose otherwise now.
    /// 11: `gemm1x1-int8`, the pair 1x1 form of layers the table marks `a12`, a new candidate.
    static let kernelRevision = 11

    /// `$XDG_CACHE_HOME/yolo-swift/plans`, else `$HOME/.cache/yolo-swift/plans` (nil when neither
    /// variable is set).
    public static var defaultDirectory: String? {
        if let x = getenv("XDG_CACHE_HOME").map({ String(cString: $0) }), x.hasPrefix("/") { return x + "/yolo-swift/plans" }
        if let h = getenv("HOME").map({ String(cString: $0) }), !h.isEmpty { return h + "/.cache/yolo-swift/plans" }
        return nil
    }

    /// What the measurements depend on, as text.
    static func key(config: DarknetConfig, input: Shape, kernelSet: String, openBLAS: Bool, kernels: String, threads: Int,
                    options: ModelOptions) -> String {
        return "engine plan \(formatVersion); cpu \(HostCPU.identity); level \(kernelSet)\(openBLAS ? " + OpenBLAS" : ""); "
            + "threads \(threads); cfg \(config.fingerprint); input \(input); convolution \(options.convolution.rawValue); "
            + "fuses \(options.fusesLayers)" + (options.precision == .fp32 ? "" : "; precision \(options.precision.rawValue)")
            + (options.precision == .int8 && options.int8Fallback != .auto ? " fallback \(options.int8Fallback)" : "")
            + (options.calibration.map { "; int8 table \($0.fingerprint)" } ?? "") + buildField + build + "; kernels " + kernels
    }

    /// The key's last field, the engine's build: its version, kernel revision and kernel set.
    static let buildField = "; build "
    static var build: String { "\(BuildInfo.version) revision \(kernelRevision)" }

    /// The key without its build: what names the file, so that another build of the engine finds
    /// the entry, says it was made by another build, and (measuring) replaces it.
    static func withoutBuild(_ key: String) -> Substring {
        var i = key.endIndex
        while i > key.startIndex {
            i = key.index(before: i)
            if key[i...].hasPrefix(buildField) { return key[..<i] }
        }
        return key[...]
    }

    /// The file for `key` in `directory`.
    static func path(directory: String, key: String) -> String {
        var h = FNV64()
        h.add(String(withoutBuild(key)))
        return directory + "/" + h.hex + ".plan"
    }

    static func encode(key: String, choices: [CachedChoice]) -> String {
        var text = "yolo-swift plan \(formatVersion)\nkey \(key)\n"
        for c in choices {
            let range = c.layers.count == 1 ? "\(c.layers.lowerBound)" : "\(c.layers.lowerBound)-\(c.layers.upperBound)"
            let times = c.timings.map { "\($0.algorithm) \(formatMilliseconds($0.milliseconds))" }.joined(separator: " ")
            text += "node \(range) \(c.chosen.rawValue) | \(times)\n"
        }
        return text
    }

    /// The choices of a cache file's text for `key`, or why it is not usable.
    static func decode(_ text: String, key: String) -> Result<[CachedChoice], PlanCacheProblem> {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        guard lines.first == "yolo-swift plan \(formatVersion)" else { return .failure(.init("not a plan of format \(formatVersion)")) }
        guard lines.count >= 2, lines[1] == "key " + key else {
            if lines.count >= 2, lines[1].hasPrefix("key "), withoutBuild(String(lines[1].dropFirst(4))) == withoutBuild(key) {
                return .failure(.init("measured by another build of the engine (its kernels may rank differently); 'yolo tune' measures this one"))
            }
            return .failure(.init("made for another CPU, cfg or setting"))
        }
        var choices: [CachedChoice] = []
        for line in lines.dropFirst(2) {
            let halves = line.split(separator: "|", maxSplits: 1).map { $0.split(separator: " ").map(String.init) }
            guard halves.count == 2, halves[0].count == 3, halves[0][0] == "node",
                  let chosen = ConvAlgorithm(rawValue: halves[0][2]) else { return .failure(.init("bad line '\(line)'")) }
            let bounds = halves[0][1].split(separator: "-").compactMap { Int($0) }
            guard (1...2).contains(bounds.count), bounds[0] >= 0, bounds.last! >= bounds[0] else {
                return .failure(.init("bad layer range in '\(line)'"))
            }
            var timings: [PlanReport.Timing] = []
            let t = halves[1]
            guard t.count % 2 == 0 else { return .failure(.init("bad timings in '\(line)'")) }
            for i in Swift.stride(from: 0, to: t.count, by: 2) {
                guard ConvAlgorithm(rawValue: t[i]) != nil, let ms = Double(t[i + 1]), ms.isFinite, ms >= 0 else {
                    return .failure(.init("bad timing '\(t[i]) \(t[i + 1])'"))
                }
                timings.append(PlanReport.Timing(algorithm: t[i], milliseconds: ms))
            }
            choices.append(CachedChoice(layers: bounds[0]...bounds.last!, chosen: chosen, timings: timings))
        }
        return .success(choices)
    }

    static func formatMilliseconds(_ ms: Double) -> String {
        let micro = Int((ms * 1000).rounded())
        let frac = micro % 1000
        return "\(micro / 1000)." + (frac < 10 ? "00" : frac < 100 ? "0" : "") + "\(frac)"
    }

    /// Reads the entry for `key` from `directory`: nil when there is none, else its choices or
    /// why it was ignored.
    static func read(directory: String, key: String) -> Result<[CachedChoice], PlanCacheProblem>? {
        let file = path(directory: directory, key: key)
        switch readRegularFile(file, maxBytes: 1 << 20) {
        case .failure(.notFound): return nil
        case .failure(.system(let reason)) where reason == errnoText(ENOTDIR): return nil  // reported by `write`
        case .failure(let failure): return .failure(.init("\(file): \(failure.reason)"))
        case .success(let bytes):
            return decode(String(decoding: bytes, as: UTF8.self), key: key).mapError { .init("\(file): \($0.message)") }
        }
    }

    /// Stores the choices for `key` (atomically, the directory made if missing; a symbolic link
    /// at the entry's path is replaced, not followed, and a special file refused); returns nil
    /// or why it could not.
    static func write(directory: String, key: String, choices: [CachedChoice]) -> String? {
        var made = directory.hasPrefix("/") ? "/" : ""
        for part in directory.split(separator: "/") {
            made += (made.isEmpty || made.hasSuffix("/") ? "" : "/") + part
            if mkdir(made, 0o755) != 0 && errno != EEXIST { return "\(made): \(errnoText())" }
        }
        let file = path(directory: directory, key: key)
        let text = Array(encode(key: key, choices: choices).utf8)
        return text.withUnsafeBytes { writeFileAtomically($0, to: file, use: .cache) }.map { "\(file): \($0)" }
    }
}

struct PlanCacheProblem: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

extension DarknetConfig {
    /// A hash of the cfg's sections, keys and values (not its file name, comments or layout):
    /// what plans and calibration tables are made for.
    var fingerprint: String {
        var h = FNV64()
        for section in sections {
            h.add("[\(section.name)]")
            for o in section.options { h.add("\(o.key)=\(o.value)") }
        }
        return h.hex
    }
}

/// 64-bit FNV-1a, for cache keys and file names.
struct FNV64 {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325
    mutating func add(_ text: String) {
        for b in text.utf8 { value = (value ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
        value = (value ^ 0x0A) &* 0x0000_0100_0000_01B3
    }
    var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: (0..<16).map { digits[Int((value >> (60 - 4 * UInt64($0))) & 0xF)] }, as: UTF8.self)
    }
}
