import Foundation
import XCTest

/// `yolo stream --fps` out of range; the README's manifest line for the library.
final class CLIUsageTests: XCTestCase {
    func yolo(_ args: [String], in dir: String) throws -> Fixtures.Finished {
        try Fixtures.spawn([try yoloBinary()] + args, in: dir)
    }

    func testStreamFPSOutOfRangeIsAUsageError() throws {
        let dir = try temporaryDirectory()
        for fps in ["1e-300", "0.0001", "1001", "1e300", "0", "-1", "nan", "x"] {
            let r = try yolo(["stream", "--raw", "16x16", "--fps", fps], in: dir)
            XCTAssertEqual(r.exitStatus, 64, "--fps \(fps): \(r.stderr)")
            XCTAssertTrue(r.stderr.hasPrefix("yolo: --fps \(fps): expected a frame rate from 0.001 to 1000"), "--fps \(fps): \(r.stderr)")
            XCTAssertEqual(r.stdout, "")
        }
    }

    /// The library section shows the manifest line a user needs, with the package named after
    /// the clone's directory.
    func testReadmeShowsTheProductDependencyLine() throws {
        let readme = try String(contentsOfFile: repositoryRoot + "/README.md", encoding: .utf8)
        let library = try XCTUnwrap(readme.range(of: "## The library\n")).upperBound
        let section = readme[library...].prefix(3000)
        XCTAssertTrue(section.contains(#".product(name: "YOLO", package: "yolo-swift")"#), String(section))
        XCTAssertTrue(section.contains(#".product(name: "YOLOImage", package: "yolo-swift")"#), String(section))
        XCTAssertTrue(section.contains("the name of the directory"), String(section))
    }
}
