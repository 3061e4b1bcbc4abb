// JSON text as the tools write it: strings, numbers and one image's detections as one line
// (what `yolo detect --json` prints and `yolo serve`'s POST /detect answers), or its error.
import Foundation
import YOLO

/// A JSON string literal, quotes included: `"`, `\` and control characters escaped; everything
/// else (UTF-8 included) as is.
public func jsonString(_ s: String) -> String {
    var out = "\""
    for u in s.unicodeScalars {
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case "\u{08}": out += "\\b"
        case "\u{0C}": out += "\\f"
        default:
            if u.value < 0x20 || u.value == 0x7F {
                out += String(format: "\\u%04x", u.value)
            } else {
                out.unicodeScalars.append(u)
            }
        }
    }
    return out + "\""
}

/// A float as JSON: the shortest text that reads back as the same Float; `null` if not finite.
public func jsonNumber(_ v: Float) -> String { v.isFinite ? "\(v)" : "null" }

/// A double as JSON with a fixed number of decimals; `null` if not finite.
public func jsonNumber(_ v: Double, decimals: Int) -> String { v.isFinite ? String(format: "%.\(decimals)f", v) : "null" }

/// One detection as a JSON object: class, class_index, confidence, objectness, box (pixels,
/// unclamped), rel [x, y, w, h] and box_index; with `track`, the id of its track (yolo stream) last.
public func detectionJSON(_ d: Detection, track: Int? = nil) -> String {
    "{\"class\": \(jsonString(d.className)), \"class_index\": \(d.classIndex), "
        + "\"confidence\": \(jsonNumber(d.confidence)), \"objectness\": \(jsonNumber(d.objectness)), "
        + "\"box\": {\"left\": \(jsonNumber(d.left)), \"top\": \(jsonNumber(d.top)), "
        + "\"right\": \(jsonNumber(d.right)), \"bottom\": \(jsonNumber(d.bottom))}, "
        + "\"rel\": [\(jsonNumber(d.x)), \(jsonNumber(d.y)), \(jsonNumber(d.width)), \(jsonNumber(d.height))], "
        + "\"box_index\": \(d.boxIndex)" + (track.map { ", \"track\": \($0)" } ?? "") + "}"
}

/// One image's detections as a single line of JSON (without the line break).
public func detectionsJSON(image: String, width: Int, height: Int, inferenceMilliseconds: Double,
                           detections: [Detection]) -> String {
    "{\"image\": \(jsonString(image)), \"width\": \(width), \"height\": \(height), "
        + "\"inference_ms\": \(jsonNumber(inferenceMilliseconds, decimals: 3)), "
        + "\"detections\": [\(detections.map { detectionJSON($0) }.joined(separator: ", "))]}"
}

/// An image that could not be processed, as a single line of JSON (without the line break):
/// `{"image": ..., "error": ...}` (what `yolo detect --json` writes for it in a batch).
public func detectionErrorJSON(image: String, error: String) -> String {
    "{\"image\": \(jsonString(image)), \"error\": \(jsonString(error))}"
}
