import Foundation
import XCTest

/// The repository root, found from this file's path (Tests/yoloTests/Support.swift).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

extension XCTestCase {
    /// The `yolo` executable: SwiftPM builds it next to the test bundle.
    func yoloBinary() throws -> String {
        var dirs = Bundle.allBundles.map { $0.bundleURL.deletingLastPathComponent().path }
        dirs.append(Bundle.main.bundlePath)
        dirs.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path)
        for dir in dirs where FileManager.default.isExecutableFile(atPath: dir + "/yolo") { return dir + "/yolo" }
        XCTFail("no yolo executable next to the test bundle (looked in \(Set(dirs).sorted()))")
        throw XCTSkip("no yolo binary")
    }

    /// A new directory, removed when the test ends.
    func temporaryDirectory() throws -> String {
        let dir = NSTemporaryDirectory() + "yolo-test-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return dir
    }
}
