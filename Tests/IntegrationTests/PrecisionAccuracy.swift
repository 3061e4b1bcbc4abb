import Foundation
import XCTest
import YOLO
import YOLOImage

/// What the accuracy tests of the reduced precisions share (issue #20's measure): the model files,
/// the photos, and detections of another precision against FP32's: a detection matches one of the
/// other with the same class and IoU >= 0.5 (greedy, most confident first); recall and precision
/// pooled over the photos, and how far matched confidences moved.
enum PrecisionAccuracy {
    static let root = DarknetImageTests.repoRoot

    static func paths() throws -> (cfg: String, weights: String, names: String) {
        let (cfg, weights, names) = (root + "/weights/yolov3-tiny.cfg", root + "/weights/yolov3-tiny.weights",
                                     root + "/weights/coco.names")
        guard FileManager.default.fileExists(atPath: weights) else {
            XCTFail("weights/yolov3-tiny.weights is missing: run weights/fetch.sh")
            throw XCTSkip("no weights")
        }
        return (cfg, weights, names)
    }

    /// The photos in samples/ (scripts/fetch-samples.sh), sorted by name.
    static func samples() throws -> [RGBImage] {
        let dir = root + "/samples"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [])
            .filter { $0.hasSuffix(".png") || $0.hasSuffix(".jpg") }.sorted()
        guard names.count >= 5 else {
            XCTFail("samples/ has \(names.count) photos: run scripts/fetch-samples.sh")
            throw XCTSkip("no samples")
        }
        return try names.map { try loadImage(path: dir + "/" + $0) }
    }

    /// Darknet's sample images (dog, eagle, giraffe, horses, kite, person, scream) where this checkout
    /// has them: ../shared/images beside the repository (or beside its parent, for a worktree).
    /// Not part of a clone (none: an empty list).
    static func darknetImages() throws -> [RGBImage] {
        let fm = FileManager.default
        guard let dir = [root + "/../shared/images", root + "/../../shared/images"].first(where: { fm.fileExists(atPath: $0) }) else {
            return []
        }
        let names = ((try? fm.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".jpg") }.sorted()
        return try names.map { try loadImage(path: dir + "/" + $0) }
    }

    /// Issue #49's evaluation photo set (Tests/IntegrationTests/Fixtures/eval-photos.txt): the paths
    /// of the photos of `split` ("calib" or "eval") in eval-photos/SPLIT/ (scripts/eval-photos.py
    /// fetches them from Debian and PyPI packages), in the manifest's order, and how many of them
    /// are missing there.
    static func evalPhotoPaths(split: String) throws -> (paths: [String], missing: Int) {
        let manifest = try String(contentsOfFile: root + "/Tests/IntegrationTests/Fixtures/eval-photos.txt", encoding: .utf8)
        let paths = evalPhotoNames(manifest: manifest, split: split).map { root + "/eval-photos/\(split)/" + $0 }
        return (paths, paths.filter { !FileManager.default.fileExists(atPath: $0) }.count)
    }

    /// The local names (PACKAGE__BASENAME) of the manifest's photos of `split`.
    static func evalPhotoNames(manifest: String, split: String) -> [String] {
        manifest.split(whereSeparator: \.isNewline).compactMap { line in
            let f = line.split(separator: " ")
            guard f.count == 4, f[0] == split else { return nil }
            return "\(f[2])__\(f[3].split(separator: "/").last!)"
        }
    }

    static func iou(_ a: Detection, _ b: Detection) -> Float {
        let w = max(0, min(a.right, b.right) - max(a.left, b.left)), h = max(0, min(a.bottom, b.bottom) - max(a.top, b.top))
        let union = (a.right - a.left) * (a.bottom - a.top) + (b.right - b.left) * (b.bottom - b.top) - w * h
        return union > 0 ? w * h / union : 0
    }

    /// How far under the threshold the other precision's confidence of a box may be for a box
    /// found in one precision only to count as borderline: about the matched boxes' largest drift.
    static let borderlineMargin: Float = 0.02

    /// Greedy matching, most confident reference first: (matched pairs).
    static func match(_ reference: [Detection], _ other: [Detection]) -> [(Detection, Detection)] {
        var used = Set<Int>(), pairs: [(Detection, Detection)] = []
        for a in reference.sorted(by: { $0.confidence > $1.confidence }) {
            var best: (Int, Float)? = nil
            for (j, b) in other.enumerated() where !used.contains(j) && b.classIndex == a.classIndex {
                let v = iou(a, b)
                if v >= 0.5 && v > (best?.1 ?? 0) { best = (j, v) }
            }
            if let (j, _) = best { used.insert(j); pairs.append((a, other[j])) }
        }
        return pairs
    }

    /// Pooled over photos, the detections above `threshold` of FP32 (`reference`) and of the other
    /// precision (`found`), those matched, and the matched pairs' confidence changes.
    struct Figures: CustomStringConvertible {
        var reference = 0, found = 0, matched = 0
        var driftSum: Float = 0, maxDrift: Float = 0
        /// Detections above the threshold in one precision only, and those of them the other
        /// precision finds just under it (same class, IoU >= 0.5, within `borderlineMargin`).
        var oneSided = 0, borderline = 0
        var recall: Double { Double(matched) / Double(max(1, reference)) }
        var precision: Double { Double(matched) / Double(max(1, found)) }
        var meanDrift: Float { matched > 0 ? driftSum / Float(matched) : 0 }
        var description: String {
            "FP32 \(reference), other \(found), matched \(matched) (one precision only: \(oneSided), \(borderline) of them borderline): recall \(String(format: "%.3f", recall)), precision \(String(format: "%.3f", precision)), confidence drift mean \(String(format: "%.4f", meanDrift)) max \(String(format: "%.4f", maxDrift))"
        }
    }

    /// `results`: per photo, (FP32's detections, the other precision's), both found with a
    /// threshold at or below `threshold`.
    static func compare(_ results: [([Detection], [Detection])], threshold: Float) -> Figures {
        var f = Figures()
        for (all32, other) in results {
            let (a, b) = (all32.filter { $0.confidence > threshold }, other.filter { $0.confidence > threshold })
            let pairs = match(a, b)
            (f.reference, f.found, f.matched) = (f.reference + a.count, f.found + b.count, f.matched + pairs.count)
            // A box above the threshold in one precision only is borderline where the other finds it just under.
            for (mine, theirs, all) in [(a, pairs.map { $0.0 }, other), (b, pairs.map { $0.1 }, all32)] {
                for d in mine where !theirs.contains(where: { $0 == d }) {
                    f.oneSided += 1
                    if all.contains(where: { $0.classIndex == d.classIndex && iou($0, d) >= 0.5 && $0.confidence >= threshold - borderlineMargin }) {
                        f.borderline += 1
                    }
                }
            }
            for (x, y) in pairs {
                let d = abs(x.confidence - y.confidence)
                f.driftSum += d
                f.maxDrift = max(f.maxDrift, d)
            }
        }
        return f
    }
}
