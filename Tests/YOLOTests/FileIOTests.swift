import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif
@testable import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore

/// The engine's file reader: only regular files, within a size cap, never blocking.
final class FileIOTests: XCTestCase {
    func temporaryDirectory() throws -> String {
        let dir = NSTemporaryDirectory() + "yolo-fileio-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return dir
    }

    func expectFileError(_ body: () throws -> Void, path: String, contains phrase: String,
                         file: StaticString = #filePath, line: UInt = #line) {
        do {
            try body()
            XCTFail("expected an error (\(phrase))", file: file, line: line)
        } catch let error as YOLOError {
            guard case .file(path, _) = error else { return XCTFail("wrong error: \(error)", file: file, line: line) }
            XCTAssertTrue(error.description.contains(phrase), "\(error) lacks \"\(phrase)\"", file: file, line: line)
        } catch {
            XCTFail("not a YOLOError: \(error)", file: file, line: line)
        }
    }

    /// A FIFO as the cfg would block `open` forever: refused at once.
    func testFIFOIsRefusedWithoutBlocking() throws {
        let path = try temporaryDirectory() + "/net.cfg"
        XCTAssertEqual(mkfifo(path, 0o600), 0)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var caught: Error?
        Thread.detachNewThread {
            do { _ = try DarknetConfig(path: path) } catch { caught = error }
            done.signal()
        }
        if done.wait(timeout: .now() + 5) == .timedOut {
            XCTFail("reading a FIFO blocked")
            let writer = open(path, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
            done.wait()
            return
        }
        expectFileError({ if let caught { throw caught } }, path: path, contains: "FIFO")
    }

    /// Devices are refused: /dev/zero as weights would be read until memory ran out.
    func testDevicesAreRefused() throws {
        expectFileError({ _ = try readFileBytes("/dev/zero") }, path: "/dev/zero", contains: "character device")
        expectFileError({ _ = try DarknetConfig(path: "/dev/null") }, path: "/dev/null", contains: "character device")
    }

    func testDirectoryIsRefused() throws {
        let dir = try temporaryDirectory()
        expectFileError({ _ = try readFileBytes(dir) }, path: dir, contains: "is a directory")
    }

    func testSizeCaps() throws {
        let path = try temporaryDirectory() + "/twenty"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(repeating: 7, count: 20)))
        XCTAssertEqual(try readFileBytes(path, maxBytes: 20), [UInt8](repeating: 7, count: 20))
        expectFileError({ _ = try readFileBytes(path, maxBytes: 19) }, path: path,
                        contains: "file too large: 20 bytes, the limit is 19")
        XCTAssertEqual(FileLimits.textBytes, 16 << 20)
        XCTAssertEqual(FileLimits.weightsBytes, 2 << 30)
        XCTAssertEqual(FileLimits.imageBytes, 256 << 20)
    }

    func testMissingFile() {
        expectFileError({ _ = try readTextFile("/nonexistent/x.cfg") }, path: "/nonexistent/x.cfg", contains: "No such file")
    }

    /// The atomic writer: the old file stays whole until the new one is complete.
    func testAtomicWrite() throws {
        let dir = try temporaryDirectory()
        let path = dir + "/out.bin"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data([1, 2, 3])))
        XCTAssertEqual(Glibc.link(path, dir + "/old.bin"), 0)
        XCTAssertNil([UInt8](repeating: 9, count: 5).withUnsafeBytes { writeFileAtomically($0, to: path) })
        XCTAssertEqual(FileManager.default.contents(atPath: path), Data(repeating: 9, count: 5))
        XCTAssertEqual(FileManager.default.contents(atPath: dir + "/old.bin"), Data([1, 2, 3]))
        XCTAssertNotNil([UInt8]([1]).withUnsafeBytes { writeFileAtomically($0, to: dir + "/missing/x.bin") })
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).sorted(), ["old.bin", "out.bin"])
    }

    /// Outputs by what their path is (`outputTarget`): a link is followed to what it points at
    /// (a cache entry's link is replaced instead), a FIFO is a stream for an output and refused
    /// as a cache entry, a loop of links is an error.
    func testOutputTargets() throws {
        let dir = try temporaryDirectory()
        XCTAssertTrue(FileManager.default.createFile(atPath: dir + "/file", contents: Data([1])))
        XCTAssertEqual(symlink("file", dir + "/link"), 0)
        XCTAssertEqual(symlink(dir + "/link", dir + "/link2"), 0)
        XCTAssertEqual(mkfifo(dir + "/fifo", 0o600), 0)
        XCTAssertEqual(symlink("loop", dir + "/loop"), 0)
        XCTAssertEqual(outputTarget(dir + "/link2"), .success(.replace(path: dir + "/file")))
        XCTAssertEqual(outputTarget(dir + "/link", use: .cache), .success(.replace(path: dir + "/link")))
        XCTAssertEqual(outputTarget(dir + "/fifo"), .success(.stream(path: dir + "/fifo")))
        XCTAssertEqual(outputTarget(dir + "/new"), .success(.replace(path: dir + "/new")))
        guard case .failure(let fifo) = outputTarget(dir + "/fifo", use: .cache) else { return XCTFail("a FIFO as a cache entry") }
        XCTAssertTrue(fifo.reason.hasPrefix("it is a FIFO; refusing to write there"), fifo.reason)
        guard case .failure(let loop) = outputTarget(dir + "/loop") else { return XCTFail("a loop of links") }
        XCTAssertEqual(loop.reason, String(cString: strerror(ELOOP)))

        // Written through the link: the link stays; as a cache entry: the link is replaced.
        XCTAssertNil([UInt8]([2]).withUnsafeBytes { writeFileAtomically($0, to: dir + "/link2") })
        XCTAssertEqual(FileManager.default.contents(atPath: dir + "/file"), Data([2]))
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: dir + "/link2"), dir + "/link")
        XCTAssertNil([UInt8]([3]).withUnsafeBytes { writeFileAtomically($0, to: dir + "/link", use: .cache) })
        XCTAssertThrowsError(try FileManager.default.destinationOfSymbolicLink(atPath: dir + "/link"))
        XCTAssertEqual(FileManager.default.contents(atPath: dir + "/link"), Data([3]))
        XCTAssertEqual(FileManager.default.contents(atPath: dir + "/file"), Data([2]))
        XCTAssertNotNil([UInt8]([4]).withUnsafeBytes { writeFileAtomically($0, to: dir + "/fifo", use: .cache) })
        var st = stat()
        XCTAssertEqual(lstat(dir + "/fifo", &st), 0)
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFIFO)
    }
}
