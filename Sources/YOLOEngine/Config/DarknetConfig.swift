import YOLOCore

/// A parsed Darknet `.cfg` file: `[section]` headers followed by `key=value` lines.
/// Comments start with `#` or `;`; blank lines and spaces are ignored, as in Darknet. Lines end
/// with LF, CRLF or CR (see `textLines`); a UTF-8 byte-order mark at the start is ignored. A key
/// may appear once per section.
public struct DarknetConfig: Sendable {
    /// One `key=value` line of a section.
    public struct Option: Sendable {
        /// The key, left of `=`, trimmed.
        public let key: String
        /// The value, right of `=`, trimmed.
        public let value: String
        /// The line of the file it is on (1-based).
        public let line: Int
    }

    /// A `[name]` header and the options that follow it.
    public struct Section: Sendable {
        /// The header's name, between the brackets (`net`, `convolutional`, ...).
        public let name: String
        /// The header's line (1-based).
        public let line: Int
        /// The file it is in, for error messages.
        public let file: String
        /// The section's options, in file order.
        public internal(set) var options: [Option]
        /// While a model is built from this section: the keys its layer looked up.
        var readKeys: KeyLog? = nil

        /// Starts recording which keys are looked up (a fresh log, owned by this copy).
        mutating func trackReads() { readKeys = KeyLog() }

        /// The first option whose key was neither looked up nor is on `noEffect` (keys that do
        /// not change inference results), if any.
        func unreadOption(noEffect: Set<String>) -> Option? {
            guard let readKeys else { return nil }
            return options.first { !readKeys.keys.contains($0.key) && !noEffect.contains($0.key) }
        }

        func error(_ message: String, line: Int? = nil) -> YOLOError {
            .cfg(file: file, line: line ?? self.line, message: "[\(name)] \(message)")
        }
        func option(_ key: String) -> Option? {
            readKeys?.keys.insert(key)
            return options.last { $0.key == key }
        }
        /// Whether the section sets `key`.
        public func has(_ key: String) -> Bool { option(key) != nil }

        /// The integer value of `key`, else `def`; an error naming the line when it is missing (no default) or not an integer.
        public func int(_ key: String, default def: Int? = nil) throws(YOLOError) -> Int {
            guard let o = option(key) else {
                if let def { return def }
                throw error("missing required key '\(key)'")
            }
            guard let v = Int(o.value) else {
                // Darknet reads integers with atoi, which also accepts "1.0"-style values; we do not.
                throw error("\(key)=\(o.value) is not an integer", line: o.line)
            }
            return try inRange(key, v, line: o.line)
        }

        /// Darknet keeps every cfg integer in a C int: a value outside 32 bits is refused (it
        /// would otherwise overflow the shape arithmetic).
        func inRange(_ key: String, _ v: Int, line: Int) throws(YOLOError) -> Int {
            guard v >= Int(Int32.min), v <= Int(Int32.max) else {
                throw error("\(key)=\(v) is out of range: cfg integers are 32-bit, as in Darknet (\(Int32.min)...\(Int32.max))",
                            line: line)
            }
            return v
        }

        /// The number value of `key`, else `def`; an error naming the line when it is missing (no default) or not a number.
        public func float(_ key: String, default def: Float? = nil) throws(YOLOError) -> Float {
            guard let o = option(key) else {
                if let def { return def }
                throw error("missing required key '\(key)'")
            }
            guard let v = Float(o.value), v.isFinite else {
                throw error("\(key)=\(o.value) is not a number", line: o.line)
            }
            return v
        }

        /// The value of `key`, else `def`; an error when it is missing and there is no default.
        public func string(_ key: String, default def: String? = nil) throws(YOLOError) -> String {
            guard let o = option(key) else {
                if let def { return def }
                throw error("missing required key '\(key)'")
            }
            return o.value
        }

        /// The comma-separated integers of `key` (nil when not set); an error naming the line when one is not an integer.
        public func intList(_ key: String) throws(YOLOError) -> [Int]? {
            guard let o = option(key) else { return nil }
            let parts = o.value.split(separator: ",", omittingEmptySubsequences: true)
            var out: [Int] = []
            for p in parts {
                guard let v = Int(p) else { throw error("\(key)=\(o.value): '\(p)' is not an integer", line: o.line) }
                out.append(try inRange(key, v, line: o.line))
            }
            if out.isEmpty { throw error("\(key) is empty", line: o.line) }
            return out
        }

        /// The comma-separated numbers of `key` (nil when not set); an error naming the line when one is not a number.
        public func floatList(_ key: String) throws(YOLOError) -> [Float]? {
            guard let o = option(key) else { return nil }
            var out: [Float] = []
            for p in o.value.split(separator: ",", omittingEmptySubsequences: true) {
                guard let v = Float(p), v.isFinite else {
                    throw error("\(key)=\(o.value): '\(p)' is not a number", line: o.line)
                }
                out.append(v)
            }
            if out.isEmpty { throw error("\(key) is empty", line: o.line) }
            return out
        }

        /// Requires `value >= minimum`, naming the key in the error.
        func positive(_ key: String, _ value: Int, minimum: Int = 1) throws(YOLOError) -> Int {
            guard value >= minimum else {
                throw error("\(key)=\(value) must be at least \(minimum)", line: option(key)?.line)
            }
            return value
        }
    }

    /// The keys a section's layer looked up while a model was built. Each build makes its own
    /// log on its own copy of the section and uses it on one thread only.
    final class KeyLog: @unchecked Sendable {
        var keys: Set<String> = []
    }

    /// The file name used in error messages.
    public let file: String
    /// The sections in file order (the first is `[net]` or `[network]` in a model's cfg).
    public let sections: [Section]

    /// Parses a cfg's text; `file` names it in errors (which give the line).
    public init(text: String, file: String = "<cfg>") throws(YOLOError) {
        self.file = file
        var sections: [Section] = []
        var lineNo = 0
        // The current section's keys and their lines: a key given twice is refused (Darknet
        // would take one silently, and which one is not what a reader of the cfg would guess).
        var keyLines: [String: Int] = [:]
        for rawLine in textLines(text) {
            lineNo += 1
            // Darknet strips every whitespace character from a line, not only the ends.
            var line = String(rawLine.filter { !$0.isWhitespace })
            if let cut = line.firstIndex(where: { $0 == "#" || $0 == ";" }) { line = String(line[..<cut]) }
            if line.isEmpty { continue }
            if line.first == "[" {
                guard line.last == "]", line.count > 2 else {
                    throw YOLOError.cfg(file: file, line: lineNo, message: "bad section header '\(rawLine)'")
                }
                let name = String(line.dropFirst().dropLast())
                sections.append(Section(name: name, line: lineNo, file: file, options: []))
                keyLines = [:]
                continue
            }
            guard let eq = line.firstIndex(of: "=") else {
                throw YOLOError.cfg(file: file, line: lineNo, message: "expected key=value, found '\(rawLine)'")
            }
            let key = String(line[..<eq]), value = String(line[line.index(after: eq)...])
            guard !key.isEmpty else {
                throw YOLOError.cfg(file: file, line: lineNo, message: "missing key before '=' in '\(rawLine)'")
            }
            guard !sections.isEmpty else {
                throw YOLOError.cfg(file: file, line: lineNo, message: "'\(key)=' appears before any [section]")
            }
            if let first = keyLines.updateValue(lineNo, forKey: key) {
                throw YOLOError.cfg(file: file, line: lineNo, message: "[\(sections[sections.count - 1].name)] the key '\(key)' is given twice: on lines \(first) and \(lineNo); keep one")
            }
            sections[sections.count - 1].options.append(Option(key: key, value: value, line: lineNo))
        }
        guard let first = sections.first else {
            throw YOLOError.cfg(file: file, line: 0, message: "no sections: not a Darknet cfg")
        }
        guard first.name == "net" || first.name == "network" else {
            throw YOLOError.cfg(file: file, line: first.line, message: "the first section must be [net] or [network], found [\(first.name)]")
        }
        self.sections = sections
    }

    /// Reads the cfg file at `path` and parses it; errors name the file and the line.
    public init(path: String) throws(YOLOError) {
        try self.init(text: try readTextFile(path), file: path)
    }
}
