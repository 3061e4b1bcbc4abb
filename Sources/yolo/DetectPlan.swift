// Where `yolo detect` reads and writes: the input images (files as given, directories searched)
// and one output path per input for annotated images and label files, checked against the inputs.
import Foundation
import YOLO

/// An image to detect in: its path (as given, or under the directory given) and the name its
/// outputs take (its path relative to the directory searched, or its file name).
struct DetectInput {
    var path: String
    var outputName: String
}

extension DetectCommand {
    /// Expands the IMAGE|DIR arguments: files as given (a missing one stays in the list and fails
    /// when loaded, so that the error names it), directories searched (`findImageFiles`), without
    /// the subdirectory `outputDirectory` when there is one inside (an earlier run's annotated
    /// images are not inputs: said once on stderr). Problems are printed; `failed` says if any.
    static func expandInputs(_ args: [String], outputDirectory: String?)
        -> (inputs: [DetectInput], sawDirectory: Bool, failed: Bool) {
        var inputs: [DetectInput] = []
        var sawDirectory = false, failed = false
        let excluded = Set([outputDirectory.flatMap { FileIdentity(path: $0) }].compactMap { $0 })
        for arg in args {
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: arg, isDirectory: &isDir), isDir.boolValue else {
                inputs.append(DetectInput(path: arg, outputName: (arg as NSString).lastPathComponent))
                continue
            }
            sawDirectory = true
            let search = findImageFiles(in: arg, excluding: excluded)
            let prefix = arg.hasSuffix("/") ? arg : arg + "/"
            for dir in search.skipped {
                printError("yolo: \(prefix + dir): not searched: it is the output directory (--output), which holds annotated images")
            }
            for error in search.errors { printError("yolo: \(error)") }
            if search.files.isEmpty {
                printError("yolo: \(arg): no .jpg, .jpeg or .png files in this directory")
            }
            failed = failed || search.files.isEmpty || !search.errors.isEmpty
            inputs += search.files.map { DetectInput(path: prefix + $0, outputName: $0) }
        }
        return (inputs, sawDirectory, failed)
    }

    /// Paths under `dir` for `names` (relative paths), each made unique by -2, -3, ... before
    /// its extension when an earlier one took it.
    static func uniquePaths(_ names: [String], in dir: String) -> [String] {
        var used = Set<String>()
        return names.map { name in
            var candidate = (dir as NSString).appendingPathComponent(name)
            var n = 2
            while used.contains(candidate) {
                let stem = (name as NSString).deletingPathExtension, ext = (name as NSString).pathExtension
                candidate = (dir as NSString).appendingPathComponent(ext.isEmpty ? "\(stem)-\(n)" : "\(stem)-\(n).\(ext)")
                n += 1
            }
            used.insert(candidate)
            return candidate
        }
    }

    /// Refuses outputs that would replace an input (by identity: also through links) or each
    /// other; `outputs` pairs each path with what would be written there.
    static func checkOutputs(_ outputs: [(path: String, what: String)], inputs: [String]) throws {
        var inputFiles = InputFiles()
        for path in inputs { inputFiles.add(path) }
        var taken: [String: String] = [:]
        for (path, what) in outputs {
            try inputFiles.checkOutput(path, option: what)
            let key = (path as NSString).standardizingPath
            if let other = taken[key] {
                throw UsageError("\(path): both \(other) and \(what) would go there", hint: false)
            }
            taken[key] = what
        }
    }
}
