// libFuzzer harness: the INT8 calibration table's reader (ranges, marks, the GPTQ `rounding` lines
// and their base64) and its writer. Input: table text. A table that reads must write text that
// reads back to the same text. Built and run by scripts/fuzz.sh.
import YOLO

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInt8Table(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data, size <= 16_384 else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let table = try? Int8Calibration(text: text, name: "fuzz.int8") else { return 0 }
    let written = table.text
    guard let again = try? Int8Calibration(text: written, name: "fuzz.int8"), again.text == written else {
        fatalError("a table's text does not read back as the same table")
    }
    return 0
}
