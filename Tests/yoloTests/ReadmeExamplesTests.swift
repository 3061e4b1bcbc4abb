import Foundation
import XCTest

/// Every ```swift block of README.md and docs/*.md, built as a user's own package would build it:
/// a package of its own (swift-tools-version 6.0, Swift 6 language mode) that depends on this one
/// by path, one executable target per block with the block as its main.swift (top-level code),
/// linked against the products the block imports. Then each example runs from the repository root
/// (where its weights/ and samples/ paths lead) and must exit 0 and print a detection of
/// samples/coffee.png. Messages name each block by file and line.
///
/// The package lives in .build/readme-examples and keeps its own scratch directory there, so only
/// the first run builds the engine (about a minute on 2 cores); later runs rebuild what changed.
final class ReadmeExamplesTests: XCTestCase {
    struct Block { var file: String; var line: Int; var code: String }

    /// The ```swift blocks of a Markdown text, each with the 1-based line of its first code line.
    static func swiftBlocks(_ markdown: String, file: String) -> [Block] {
        var blocks: [Block] = [], current: Block? = nil
        for (i, line) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let fence = line.trimmingCharacters(in: .whitespaces)
            if var block = current {
                if fence == "```" { blocks.append(block); current = nil } else { block.code += line + "\n"; current = block }
            } else if fence == "```swift" {
                current = Block(file: file, line: i + 2, code: "")
            }
        }
        return blocks
    }

    /// README.md, then docs/*.md in name order (relative to `root`).
    static func markdownFiles(root: String) -> [String] {
        let docs = ((try? FileManager.default.contentsOfDirectory(atPath: root + "/docs")) ?? [])
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        return ["README.md"] + docs
    }

    /// The names of the library products a manifest declares.
    static func libraryProducts(_ manifest: String) -> Set<String> {
        let pattern = try! NSRegularExpression(pattern: #"\.library\(\s*name:\s*"([^"]+)""#)
        let range = NSRange(manifest.startIndex..., in: manifest)
        return Set(pattern.matches(in: manifest, range: range).compactMap { Range($0.range(at: 1), in: manifest).map { String(manifest[$0]) } })
    }

    /// The modules a block imports (`import X`, `@preconcurrency import X`).
    static func imports(_ code: String) -> [String] {
        code.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ").filter { !$0.hasPrefix("@") }
            return words.count == 2 && words[0] == "import" ? String(words[1]) : nil
        }
    }

    /// Writes `text` to `path` unless the file already holds it (an unchanged file keeps its
    /// modification time, so SwiftPM does not rebuild it).
    static func write(_ text: String, to path: String) throws {
        if (try? String(contentsOfFile: path, encoding: .utf8)) == text { return }
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    func testEverySwiftExampleInTheReadmeBuildsInAPackageOfItsOwnAndRuns() throws {
        if let sanitizer = ProcessInfo.processInfo.environment["YOLO_TEST_SANITIZER"] {
            throw XCTSkip("the examples of README.md and docs/*.md are built and run without a sanitizer (scripts/test does it); not under \(sanitizer)")
        }
        let root = repositoryRoot
        for file in ["weights/yolov3-tiny.weights", "samples/coffee.png"] where !FileManager.default.fileExists(atPath: root + "/" + file) {
            XCTFail("\(file) is missing: run scripts/bootstrap.sh")
            return
        }
        var blocks: [Block] = []
        for file in Self.markdownFiles(root: root) {
            blocks += Self.swiftBlocks(try String(contentsOfFile: root + "/" + file, encoding: .utf8), file: file)
        }
        XCTAssertGreaterThanOrEqual(blocks.count, 3, "README.md and docs/*.md have fewer ```swift blocks than expected")
        let products = Self.libraryProducts(try String(contentsOfFile: root + "/Package.swift", encoding: .utf8))
        XCTAssertTrue(products.contains("YOLO"), "no library products found in Package.swift: \(products)")
        // SwiftPM names a path dependency after its directory.
        let identity = URL(fileURLWithPath: root).lastPathComponent.lowercased()

        let dir = root + "/.build/readme-examples"
        var targets: [String] = []
        for (k, block) in blocks.enumerated() {
            let name = "example\(k + 1)"
            let deps = Self.imports(block.code).filter(products.contains)
            XCTAssertFalse(deps.isEmpty, "\(block.file):\(block.line): the example imports none of \(products.sorted()): add its imports")
            let depList = deps.map { #".product(name: "\#($0)", package: "\#(identity)")"# }.joined(separator: ", ")
            targets.append(#"        .executableTarget(name: "\#(name)", dependencies: [\#(depList)]),"#)
            try Self.write(block.code, to: "\(dir)/Sources/\(name)/main.swift")
        }
        // Targets of blocks that are gone.
        for old in (try? FileManager.default.contentsOfDirectory(atPath: dir + "/Sources")) ?? []
        where !(1...max(1, blocks.count)).map({ "example\($0)" }).contains(old) {
            try FileManager.default.removeItem(atPath: "\(dir)/Sources/\(old)")
        }
        try Self.write("""
            // swift-tools-version:6.0
            // Generated by Tests/yoloTests/ReadmeExamplesTests.swift from the ```swift blocks of README.md and docs/*.md.
            import PackageDescription

            let package = Package(
                name: "readme-examples",
                dependencies: [.package(path: "\(root)")],
                targets: [
            \(targets.joined(separator: "\n"))
                ],
                swiftLanguageModes: [.v6]
            )

            """, to: dir + "/Package.swift")

        let scratch = dir + "/.build"
        var build = try runProcess("swift", ["build", "--package-path", dir, "--scratch-path", scratch], in: dir, timeout: 900)
        var fresh = false
        func again() throws {
            // A scratch path kept from before a change of the engine's types links old symbols, or
            // code compiled against the old layout of a struct (SwiftPM does not rebuild what
            // reaches them through YOLO): once more from nothing.
            try? FileManager.default.removeItem(atPath: scratch)
            build = try runProcess("swift", ["build", "--package-path", dir, "--scratch-path", scratch], in: dir, timeout: 900)
            fresh = true
        }
        if build.status != 0 && (build.stdout + build.stderr).contains("undefined reference to") { try again() }
        guard build.status == 0 else {
            // Compiler messages point at the Markdown files' lines.
            var log = build.stdout + build.stderr
            for (k, block) in blocks.enumerated() {
                let source = "\(dir)/Sources/example\(k + 1)/main.swift:"
                while let r = log.range(of: source) {
                    let digits = log[r.upperBound...].prefix { $0.isNumber }
                    log.replaceSubrange(r.lowerBound..<log.index(r.upperBound, offsetBy: digits.count),
                                        with: "\(block.file):\(block.line + (Int(digits) ?? 1) - 1)")
                }
            }
            // (Each diagnostic comes twice: as a line and drawn under the source; keep the lines.)
            let errors = log.split(separator: "\n").filter { $0.contains("error:") && !$0.hasPrefix(" ") }
            XCTFail("the Swift examples of README.md and docs/*.md do not build (swift build: exit \(build.status)):\n"
                    + (errors.isEmpty ? log : errors.joined(separator: "\n")))
            return
        }
        var runs = try blocks.indices.map { k in try runProcess("\(scratch)/debug/example\(k + 1)", [], in: root, timeout: 300) }
        if !fresh && runs.contains(where: { $0.status != 0 }) {
            try again()
            guard build.status == 0 else { XCTFail("the examples do not build from nothing: \(build.stderr)"); return }
            runs = try blocks.indices.map { k in try runProcess("\(scratch)/debug/example\(k + 1)", [], in: root, timeout: 300) }
        }
        for (k, block) in blocks.enumerated() {
            let run = runs[k]
            XCTAssertEqual(run.status, 0, "\(block.file):\(block.line): the example exits \(run.status): \(run.stderr)")
            XCTAssertTrue(run.stdout.contains("cup"),
                          "\(block.file):\(block.line): the example prints no detection of the cup in samples/coffee.png:\n\(run.stdout)\(run.stderr)")
        }
    }
}
