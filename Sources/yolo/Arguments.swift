// A small command-line parser (options, flags, positionals; typed values with ranges), usage errors, stderr.
import Foundation
import YOLO

/// A usage error: printed to stderr with a hint, exit code 64 (EX_USAGE).
struct UsageError: Error, CustomStringConvertible {
    let description: String
    /// Whether to add "Run 'yolo --help' for usage." (not when the message says all).
    let hint: Bool
    init(_ message: String, hint: Bool = true) { description = message; self.hint = hint }
}

/// A small command-line parser: `--name value`, `--name=value`, boolean `--flag`s and positionals.
struct Arguments {
    private(set) var values: [String: String] = [:]
    /// Every value of each option, in order (`values` keeps the last).
    private(set) var allValues: [String: [String]] = [:]
    private(set) var flags: Set<String> = []
    private(set) var positionals: [String] = []

    /// `options` take a value; `flags` take none. Names are given without the leading dashes.
    /// `short` maps one-letter aliases (e.g. "o": "output").
    init(_ args: [String], options: Set<String>, flags: Set<String>, short: [Character: String] = [:]) throws {
        var i = 0
        var onlyPositionals = false
        while i < args.count {
            let arg = args[i]
            i += 1
            if onlyPositionals || arg == "-" || !arg.hasPrefix("-") { positionals.append(arg); continue }
            if arg == "--" { onlyPositionals = true; continue }
            var name: String
            var inline: String? = nil
            if arg.hasPrefix("--") {
                name = String(arg.dropFirst(2))
                if let eq = name.firstIndex(of: "=") {
                    inline = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
            } else if arg.count == 2, let long = short[arg.last!] {
                name = long
            } else {
                throw UsageError("unknown option '\(arg)'")
            }
            if flags.contains(name) {
                if inline != nil { throw UsageError("--\(name) takes no value") }
                self.flags.insert(name)
            } else if options.contains(name) {
                if let inline { values[name] = inline; allValues[name, default: []].append(inline); continue }
                guard i < args.count else { throw UsageError("--\(name) needs a value") }
                values[name] = args[i]
                allValues[name, default: []].append(args[i])
                i += 1
            } else {
                throw UsageError("unknown option '\(arg)'")
            }
        }
    }

    func has(_ flag: String) -> Bool { flags.contains(flag) }
    func string(_ name: String) -> String? { values[name] }
    /// Every value a repeatable option was given.
    func strings(_ name: String) -> [String] { allValues[name] ?? [] }

    func int(_ name: String, default def: Int, range: ClosedRange<Int> = Int.min...Int.max) throws -> Int {
        guard let s = values[name] else { return def }
        guard let v = Int(s), range.contains(v) else {
            throw UsageError("--\(name) \(s): expected an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return v
    }

    /// `--name WxH` (or a single N for NxN): the one size parser of the commands (network input
    /// sizes, frame sizes). Each side in 1...32768 and a multiple of `multiple`; nil when not given.
    func size(_ name: String, multipleOf multiple: Int = 1, example: String) throws -> (width: Int, height: Int)? {
        guard let s = values[name] else { return nil }
        let parts = s.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let w = Int(parts[0]), let h = Int(parts.last!),
              (1...(1 << 15)).contains(w), (1...(1 << 15)).contains(h) else {
            throw UsageError("--\(name) \(s): expected WIDTHxHEIGHT (each 1...32768), e.g. \(example)")
        }
        guard w % multiple == 0, h % multiple == 0 else {
            throw UsageError("--\(name) \(s): width and height must be multiples of \(multiple) (YOLO networks downsample by 32), e.g. \(max(multiple, (w + multiple / 2) / multiple * multiple))x\(max(multiple, (h + multiple / 2) / multiple * multiple))")
        }
        return (w, h)
    }

    /// `--name WxH` (or a single N for NxN) as a network input size (multiples of 32); nil when not given.
    func inputSize(_ name: String) throws -> ModelOptions.InputSize? {
        try size(name, multipleOf: 32, example: "416x416 or 608x352").map { ModelOptions.InputSize(width: $0.width, height: $0.height) }
    }

    /// `--conv ALGO` (which algorithms convolutions may use); nil when not given.
    func convolution() throws -> ModelOptions.Convolution? {
        try values["conv"].map { conv in
            guard let c = ModelOptions.Convolution(rawValue: conv) else {
                throw UsageError("--conv \(conv): expected \(ModelOptions.Convolution.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return c
        }
    }

    func float(_ name: String, default def: Float, range: ClosedRange<Float>) throws -> Float {
        guard let s = values[name] else { return def }
        guard let v = Float(s), range.contains(v) else {
            throw UsageError("--\(name) \(s): expected a number in \(range.lowerBound)...\(range.upperBound)")
        }
        return v
    }
}

/// Writes to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write((message + "\n").data(using: .utf8)!)
}
