// What `yolo detect` writes: Darknet's text lines, COCO results, YOLO label files and the
// progress bar (JSON lines: YOLOText).
import Foundation
import YOLO
import YOLOText

/// Darknet's console output for one image: `dog: 57%` per (box, class), in Darknet's order. With
/// `pixelBoxesIn` (the image's width and height: AlexeyAB's `-ext_output`) each line goes on
/// with the box in pixels, rounded and unclamped, as Darknet prints it:
/// `dog: 57%\t(left_x:  128   top_y:  224   width:  185   height:  303)`.
func darknetLines(_ detections: [Detection], pixelBoxesIn image: (width: Int, height: Int)? = nil) -> [String] {
    detections.map { d in
        let line = "\(d.className): \(String(format: "%.0f", Double(d.confidence) * 100))%"
        guard let image else { return line }
        let w = Float(image.width), h = Float(image.height)
        let box = [d.left, d.top, d.width * w, d.height * h].map { String(format: "%4.0f", Double($0.rounded())) }
        return line + "\t(left_x: \(box[0])   top_y: \(box[1])   width: \(box[2])   height: \(box[3]))"
    }
}

/// YOLO-format labels, as Ultralytics' `save_txt` writes them: `class cx cy w h` per detection,
/// the box clamped to the image (each edge, as Ultralytics' clip_boxes) and divided by its size,
/// numbers as `%g`; with `confidence` (`save_conf`), the confidence last.
func yoloLabelLines(_ detections: [Detection], width: Int, height: Int, confidence: Bool) -> [String] {
    let w = Float(width), h = Float(height)
    return detections.map { d in
        let x0 = min(max(0, d.left), w), x1 = min(max(0, d.right), w)
        let y0 = min(max(0, d.top), h), y1 = min(max(0, d.bottom), h)
        var values = [(x0 + x1) / 2 / w, (y0 + y1) / 2 / h, (x1 - x0) / w, (y1 - y0) / h]
        if confidence { values.append(d.confidence) }
        return "\(d.classIndex) " + values.map { String(format: "%g", Double($0)) }.joined(separator: " ")
    }
}

/// COCO's category ids for the 80 classes of coco.names, in order (COCO numbers 91 categories,
/// 11 of them unused in detection).
let cocoCategoryIDs: [Int] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 27, 28, 31, 32, 33, 34,
    35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63,
    64, 65, 67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90,
]

/// The COCO image id of a file: its name when that is a number (`000000000139.jpg` -> 139), or
/// the number after the last underscore (`COCO_val2014_000000000042.jpg` -> 42), else nil.
func cocoImageID(path: String) -> Int? {
    let base = (path as NSString).lastPathComponent
    let stem = (base as NSString).deletingPathExtension
    let digits = stem.split(separator: "_").last.map(String.init) ?? stem
    guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
    return Int(digits)
}

/// The COCO image ids of `paths` (in input order; a path given twice is one image): a file's
/// number (`cocoImageID`) when no other file claims the same number; else, and for names
/// without a number, the smallest ids that no file's number takes, in order (0, 1, 2, ...).
/// Distinct files never share an id.
func cocoImageIDs(_ paths: [String]) -> [String: Int] {
    var distinct: [String] = [], seen = Set<String>()
    for path in paths where seen.insert(path).inserted { distinct.append(path) }
    var claims: [Int: Int] = [:]
    for path in distinct { if let n = cocoImageID(path: path) { claims[n, default: 0] += 1 } }
    var ids: [String: Int] = [:], next = 0
    for path in distinct {
        if let n = cocoImageID(path: path), claims[n] == 1 { ids[path] = n; continue }
        while claims[next] == 1 { next += 1 }
        ids[path] = next
        next += 1
    }
    return ids
}

/// One COCO results entry per detection: bbox [x, y, width, height] in pixels, clamped to the
/// image as Darknet's COCO validation does.
func cocoEntries(_ detections: [Detection], imageID: Int, width: Int, height: Int, classCount: Int) -> [String] {
    detections.map { d in
        let w = Float(width), h = Float(height)
        let x0 = max(0, d.left), y0 = max(0, d.top)
        let x1 = min(w, d.right), y1 = min(h, d.bottom)
        let category = classCount == cocoCategoryIDs.count ? cocoCategoryIDs[d.classIndex] : d.classIndex
        return "{\"image_id\": \(imageID), \"category_id\": \(category), \"bbox\": [\(jsonNumber(x0)), \(jsonNumber(y0)), "
            + "\(jsonNumber(x1 - x0)), \(jsonNumber(y1 - y0))], \"score\": \(jsonNumber(d.confidence))}"
    }
}

/// A one-line progress bar on stderr, redrawn in place; only when stderr is a terminal.
struct ProgressBar {
    let total: Int
    let enabled: Bool
    private var shown = false

    init(total: Int, enabled: Bool) {
        self.total = total
        self.enabled = enabled && isatty(2) != 0
    }

    mutating func show(done: Int, current: String) {
        guard enabled else { return }
        let width = 30
        let filled = total > 0 ? width * done / total : width
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        var name = (current as NSString).lastPathComponent
        if name.count > 40 { name = "..." + name.suffix(37) }
        FileHandle.standardError.write("\r\u{1B}[K[\(bar)] \(done)/\(total) \(name)".data(using: .utf8)!)
        shown = true
    }

    /// Erases the bar (before other output, and at the end).
    mutating func clear() {
        guard enabled, shown else { return }
        FileHandle.standardError.write("\r\u{1B}[K".data(using: .utf8)!)
        shown = false
    }
}
