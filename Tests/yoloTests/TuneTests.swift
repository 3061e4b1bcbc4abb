import Foundation
import XCTest

/// `yolo tune`: measures each convolution's candidates, prints the table, stores the plan where
/// the next load finds it; bad arguments are usage errors.
final class TuneTests: XCTestCase {
    func testTuneMeasuresPrintsAndStoresThePlan() throws {
        let yolo = try yoloBinary()
        let cache = try temporaryDirectory()
        let run = try runProcess(yolo, ["tune", "--threads", "1", "--cache", cache], in: repositoryRoot)
        XCTAssertEqual(run.status, 0, run.stderr)
        // One line per step; each of the 13 convolutions with its candidates' times.
        let measured = run.stdout.split(separator: "\n").filter { $0.contains("(measured) [") }
        XCTAssertEqual(measured.count, 13, run.stdout)  // 13 convolutions, 0 and 2 with their pools
        XCTAssertTrue(run.stdout.contains("0-1 conv 3x3/1 3x416x416 -> 16x416x416 + maxpool"), run.stdout)
        XCTAssertTrue(measured.allSatisfy { $0.contains(" ms") })
        XCTAssertTrue(run.stdout.contains("stored in \(cache)/"), run.stdout)
        let files = try FileManager.default.contentsOfDirectory(atPath: cache).filter { $0.hasSuffix(".plan") }
        XCTAssertEqual(files.count, 1)
        let text = try String(contentsOfFile: cache + "/" + files[0], encoding: .utf8)
        XCTAssertTrue(text.hasPrefix("yolo-swift plan 1\nkey engine plan 1; cpu "), text)
        XCTAssertEqual(text.split(separator: "\n").filter { $0.hasPrefix("node ") }.count, 13)

        // --no-cache stores nothing; a second thread count is a second entry.
        let other = try temporaryDirectory()
        let none = try runProcess(yolo, ["tune", "--threads", "2", "--no-cache"], in: repositoryRoot,
                                  environment: ["XDG_CACHE_HOME": other])
        XCTAssertEqual(none.status, 0, none.stderr)
        XCTAssertTrue(none.stdout.contains("not stored (--no-cache)"), none.stdout)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: other), [])
    }

    func testBadArgumentsAreUsageErrors() throws {
        let yolo = try yoloBinary()
        for (args, message) in [(["tune", "--threads", "0"], "--threads 0: expected thread counts in 1...256"),
                                (["tune", "--threads", "1,x"], "expected thread counts"),
                                (["tune", "--conv", "fft"], "--conv fft: expected winograd, winograd2, im2col"),
                                (["tune", "--cache", "/tmp", "--no-cache"], "exclude each other"),
                                (["tune", "photo.jpg"], "takes no positional arguments")] {
            let run = try runProcess(yolo, args, in: repositoryRoot)
            XCTAssertEqual(run.status, 64, "\(args): \(run.stderr)")
            XCTAssertTrue(run.stderr.contains(message), "\(args): \(run.stderr)")
        }
    }
}
