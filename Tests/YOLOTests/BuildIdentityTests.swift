import Foundation
import XCTest
@testable import YOLOEngine

/// The engine's build identity (the plan cache's last key field): the GNU build ID of the ELF
/// file holding the engine, read from untrusted bytes without ever reading out of bounds.
final class BuildIdentityTests: XCTestCase {
    /// A 64-bit little-endian ELF header, one PT_NOTE program header and `notes` at offset 120.
    static func elf(notes: [UInt8], noteSize: Int? = nil, phnum: UInt16 = 1) -> [UInt8] {
        func le(_ v: UInt64, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
        var header = [0x7F, 0x45, 0x4C, 0x46, 2, 1, 1] + [UInt8](repeating: 0, count: 9)
        header += le(3, 2) + le(62, 2) + le(1, 4) + le(0, 8) + le(64, 8) + le(0, 8) + le(0, 4)
        header += le(64, 2) + le(56, 2) + le(UInt64(phnum), 2) + le(64, 2) + le(0, 2) + le(0, 2)
        var program = le(4, 4) + le(4, 4) + le(120, 8) + le(0, 8) + le(0, 8)
        program += le(UInt64(noteSize ?? notes.count), 8) + le(UInt64(notes.count), 8) + le(4, 8)
        return header + program + notes
    }

    static func note(name: [UInt8], type: UInt32, desc: [UInt8]) -> [UInt8] {
        func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        func padded(_ b: [UInt8]) -> [UInt8] { b + [UInt8](repeating: 0, count: (4 - b.count % 4) % 4) }
        return le32(name.count) + le32(desc.count) + le32(Int(type)) + padded(name) + padded(desc)
    }

    func file(_ bytes: [UInt8]) throws -> String {
        let path = NSTemporaryDirectory() + "yolo-build-id-\(getpid())-\(UUID().uuidString)"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    func testReadsTheGNUBuildIDNote() throws {
        let gnu: [UInt8] = [0x47, 0x4E, 0x55, 0]
        let id: [UInt8] = [0xDE, 0xAD, 0x01, 0xBE, 0xEF]
        // Another note first (skipped), then the build ID.
        let notes = BuildIdentityTests.note(name: gnu, type: 1, desc: [1, 2, 3, 4, 5, 6]) + BuildIdentityTests.note(name: gnu, type: 3, desc: id)
        XCTAssertEqual(BuildIdentity.gnuBuildID(path: try file(BuildIdentityTests.elf(notes: notes))), "dead01beef")
        // No such note, another owner's type 3, not ELF, truncated, lying sizes: nil, never a crash.
        let cases: [(String, [UInt8])] = [
            ("other notes only", BuildIdentityTests.elf(notes: BuildIdentityTests.note(name: gnu, type: 1, desc: id))),
            ("another owner", BuildIdentityTests.elf(notes: BuildIdentityTests.note(name: [0x58, 0], type: 3, desc: id))),
            ("not ELF", Array("#!/bin/sh\necho hello, this is not an ELF file at all ......................\n".utf8)),
            ("header only", Array(BuildIdentityTests.elf(notes: notes).prefix(64))),
            ("segment past the end", BuildIdentityTests.elf(notes: notes, noteSize: notes.count + 100)),
            ("descriptor past the segment", BuildIdentityTests.elf(notes: Array(notes.dropLast(4)))),
            ("program headers past the end", BuildIdentityTests.elf(notes: notes, phnum: 900)),
            ("empty", []),
        ]
        for (why, bytes) in cases {
            XCTAssertNil(BuildIdentity.gnuBuildID(path: try file(bytes)), why)
        }
        XCTAssertNil(BuildIdentity.gnuBuildID(path: "/nonexistent/yolo"))
        XCTAssertNil(BuildIdentity.gnuBuildID(path: NSTemporaryDirectory()), "a directory")
    }

    func testFindsTheFileMappedAtAnAddress() {
        let maps = """
        55d0c0000000-55d0c0100000 r--p 00000000 08:01 1234 /usr/bin/yolo
        55d0c0100000-55d0c0400000 r-xp 00100000 08:01 1234                    /usr/bin/yolo
        7f0000000000-7f0000021000 rw-p 00000000 00:00 0 
        7f0000100000-7f0000200000 r-xp 00000000 08:01 99 /opt/lib/libYOLO with space.so
        7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
        """
        XCTAssertEqual(BuildIdentity.objectPath(containing: 0x55d0c0200000, maps: maps), "/usr/bin/yolo")
        XCTAssertEqual(BuildIdentity.objectPath(containing: 0x7f0000100000, maps: maps), "/opt/lib/libYOLO with space.so")
        XCTAssertNil(BuildIdentity.objectPath(containing: 0x7f0000000010, maps: maps), "anonymous")
        XCTAssertNil(BuildIdentity.objectPath(containing: 0x7ffd00000010, maps: maps), "[stack]")
        XCTAssertNil(BuildIdentity.objectPath(containing: 0x7f0000200000, maps: maps), "the end is exclusive")
    }

    func testThisBuildHasAnIdentity() {
        #if os(Linux)
        let id = BuildIdentity.current
        let hex = id.count >= 16 && id.allSatisfy { $0.isHexDigit }
        XCTAssertTrue(hex || id.hasPrefix("size "), "a GNU build ID or the file's size and time, not '\(id)'")
        // The key carries it; the file name does not (another build finds the entry and says so).
        XCTAssertTrue(PlanCache.withoutBuild("a; b" + PlanCache.buildField + id) == "a; b")
        XCTAssertEqual(PlanCache.path(directory: "/d", key: "k" + PlanCache.buildField + "1"),
                       PlanCache.path(directory: "/d", key: "k" + PlanCache.buildField + "2"))
        #endif
    }
}
