import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Files made by the tests themselves: small PNGs, tiny Darknet models, and a subprocess runner
/// that reports the child's peak memory and the signal that ended it.
enum Fixtures {
    /// A PNG of `width` x `height` RGB pixels from `pixel`, deflate-stored (no compression).
    static func png(width: Int, height: Int, _ pixel: (Int, Int) -> [UInt8]) -> Data {
        var raw: [UInt8] = []
        for y in 0..<height {
            raw.append(0)
            for x in 0..<width { raw += pixel(x, y) }
        }
        var zlib: [UInt8] = [0x78, 0x01]
        var rest = raw[...]
        repeat {
            let block = rest.prefix(65535)
            rest = rest.dropFirst(block.count)
            let n = UInt16(block.count)
            zlib += [rest.isEmpty ? 1 : 0, UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8(~n >> 8)] + block
        } while !rest.isEmpty
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in raw { a = (a + UInt32(byte)) % 65521; b = (b + a) % 65521 }
        zlib += bigEndian(b << 16 | a)
        let header = bigEndian(UInt32(width)) + bigEndian(UInt32(height)) + [8, 2, 0, 0, 0]
        return Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header) + chunk("IDAT", zlib) + chunk("IEND", []))
    }

    /// Pseudo-random pixels (they do not compress: the annotated image is about 3 bytes a pixel).
    static func noise(_ x: Int, _ y: Int) -> [UInt8] {
        var z = UInt64(y << 20 | x) &* 0x9E37_79B9_7F4A_7C15  // SplitMix64's finaliser
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return [UInt8(z & 0xFF), UInt8(z >> 8 & 0xFF), UInt8(z >> 16 & 0xFF)]
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in body {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return bigEndian(UInt32(data.count)) + body + bigEndian(~crc)
    }

    static func bigEndian(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    /// A Darknet weights file: the 0.2 header, then `floats` (little-endian float32).
    static func weights(_ floats: [Float]) -> Data {
        var bytes: [UInt8] = []
        for v in [UInt32(0), 2, 0, 0, 0] + floats.map(\.bitPattern) {
            bytes += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)]
        }
        return Data(bytes)
    }

    /// Writes model.cfg, model.weights and model.names into `dir`; returns the options naming them.
    static func model(in dir: String, cfg: String, floats: [Float], names: String) throws -> [String] {
        try Data(cfg.utf8).write(to: URL(fileURLWithPath: dir + "/model.cfg"))
        try weights(floats).write(to: URL(fileURLWithPath: dir + "/model.weights"))
        try Data(names.utf8).write(to: URL(fileURLWithPath: dir + "/model.names"))
        return ["--cfg", dir + "/model.cfg", "--weights", dir + "/model.weights", "--names", dir + "/model.names", "--threads", "1"]
    }

    /// A tiny model of 2 classes: a 1x1 conv of stride 32 (weights 0, so its output is its
    /// biases) into a [yolo] head with one 32x32 anchor on a 1x1 grid. Its one box: centre in the
    /// middle of the 32x32 input, w = e^0.5 (wider than the image), h = e^-1 of the input,
    /// objectness and class 0 logistic(4), class 1 logistic(-4).
    static func tinyModel(in dir: String, names: String = "thing\nother\n") throws -> [String] {
        let cfg = "[net]\nwidth=32\nheight=32\nchannels=3\n\n[convolutional]\nfilters=7\nsize=1\nstride=32\npad=1\nactivation=linear\n\n"
            + "[yolo]\nmask=0\nanchors=32,32\nclasses=2\nnum=1\n"
        return try model(in: dir, cfg: cfg, floats: [0, 0, 0.5, -1, 4, 4, -4] + [Float](repeating: 0, count: 21), names: names)
    }

    /// How a subprocess ended, what it wrote, and its peak resident memory.
    struct Finished {
        var waitStatus: Int32
        var maxRSSKiB: Int
        var stdout: String
        var stderr: String
        /// The exit status, or nil when a signal ended it.
        var exitStatus: Int32? { waitStatus & 0x7F == 0 ? (waitStatus >> 8) & 0xFF : nil }
        /// The signal that ended it, if one did.
        var signal: Int32? { waitStatus & 0x7F != 0 && waitStatus & 0x7F != 0x7F ? waitStatus & 0x7F : nil }
    }

    /// Runs `argv` (argv[0] a path) with posix_spawn and wait4, stdin from /dev/null, stdout and
    /// stderr to files, SIGINT, SIGTERM and SIGHUP at their defaults and unblocked in the child
    /// (whatever this test process inherited), `environment` added to ours.
    static func spawn(_ argv: [String], environment: [String: String] = [:], in dir: String,
                      timeout: Double = 300) throws -> Finished {
        let out = dir + "/.spawn-stdout-\(UUID().uuidString)", err = dir + "/.spawn-stderr-\(UUID().uuidString)"
        defer { unlink(out); unlink(err) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t(), none = sigset_t()
        sigemptyset(&defaults)
        sigemptyset(&none)
        for s in [SIGINT, SIGTERM, SIGHUP, SIGXFSZ] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let env = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0)=\($1)" }
        let cArgs = argv.map { strdup($0) } + [nil], cEnv = env.map { strdup($0) } + [nil]
        defer { (cArgs + cEnv).forEach { free($0) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, argv[0], &actions, &attributes, cArgs, cEnv)
        guard rc == 0 else { throw NSError(domain: "spawn \(argv[0])", code: Int(rc)) }
        var status: Int32 = 0
        var usage = rusage()
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let r = wait4(pid, &status, WNOHANG, &usage)
            if r == pid { break }
            if r < 0 && errno != EINTR { throw NSError(domain: "wait4", code: Int(errno)) }
            if Date() > deadline { kill(pid, SIGKILL); XCTFail("\(argv) did not finish within \(timeout) s") }
            usleep(10_000)
        }
        return Finished(waitStatus: status, maxRSSKiB: Int(usage.ru_maxrss),
                        stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
                        stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    }

    /// A C compiler command for the machine the tests run on: $YOLO_TEST_CC when set (words: a
    /// cross build's tests name a compiler for their target, scripts/arm-linux-check.sh), else
    /// clang, cc or gcc from PATH, or the clang next to the Swift toolchain.
    static func cCompiler() -> [String]? {
        if let cc = ProcessInfo.processInfo.environment["YOLO_TEST_CC"], !cc.isEmpty {
            return cc.split(separator: " ").map(String.init)
        }
        var dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        dirs += ["/opt/swift/usr/bin", "/usr/bin"]
        for name in ["clang", "cc", "gcc"] {
            for dir in dirs where FileManager.default.isExecutableFile(atPath: dir + "/" + name) { return [dir + "/" + name] }
        }
        return nil
    }
}
