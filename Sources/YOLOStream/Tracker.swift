// Tracking: each object (a box, whatever classes it is reported as) keeps one id from frame
// to frame. `IoUTracker` matches boxes by overlap; `TrackedBox` is one box of a frame with its
// id and classes, as drawn ("#3 car 61%, truck 30%").
import YOLO

/// A detection with the id of the track (the box) it belongs to.
public struct TrackedDetection: Sendable, Equatable {
    /// The detection; its box is the track's average over the last `smoothing` frames.
    public var detection: Detection
    /// A stable id (1, 2, ...): the same object keeps its id from frame to frame; the
    /// detections of one box (car and truck) share it.
    public var trackID: Int

    public init(detection: Detection, trackID: Int) {
        self.detection = detection
        self.trackID = trackID
    }
}

/// One box of a frame: its track id and its detections (one per class), most confident first.
public struct TrackedBox: Sendable, Equatable {
    public var trackID: Int
    /// At least one; all with the same (smoothed) box.
    public var detections: [Detection]

    public init(trackID: Int, detections: [Detection]) {
        self.trackID = trackID
        self.detections = detections
    }

    /// The tracked detections of a frame as boxes (one per track id), in order of first
    /// appearance; each box's detections sorted by falling confidence.
    public static func boxes(of tracked: [TrackedDetection]) -> [TrackedBox] {
        var boxes: [TrackedBox] = []
        var indexOfTrack: [Int: Int] = [:]
        for t in tracked {
            if let i = indexOfTrack[t.trackID] {
                boxes[i].detections.append(t.detection)
            } else {
                indexOfTrack[t.trackID] = boxes.count
                boxes.append(TrackedBox(trackID: t.trackID, detections: [t.detection]))
            }
        }
        for i in boxes.indices { boxes[i].detections.sort { $0.confidence > $1.confidence } }
        return boxes
    }
}

/// A greedy IoU tracker over boxes: a frame's detections are grouped by box (`boxGroups`: one
/// box reported as car and as truck is one object), and each box is matched to a live track
/// that shares one of its classes, best IoU first (each track and box used once, IoU at least
/// `minIoU`); a box left over starts a new track, a track left unmatched for more than
/// `maxMissed` frames ends. With `smoothing` N > 1 each reported box is the mean of its
/// track's last N boxes (the current one included), which steadies boxes that jitter.
///
/// Feed frames in order, one `update` per frame. Allocation is proportional to the number
/// of tracks; nothing grows with the length of the stream.
public struct IoUTracker: Sendable {
    public var minIoU: Float
    public var maxMissed: Int
    public private(set) var smoothing: Int

    private struct Track: Sendable {
        var id: Int
        /// The classes of its last box.
        var classes: Set<Int>
        /// The last raw (unsmoothed) box, as left, top, right, bottom in pixels.
        var left: Float, top: Float, right: Float, bottom: Float
        /// The last `smoothing` raw boxes as (x, y, w, h) relative to the frame, oldest first.
        var history: [(Float, Float, Float, Float)]
        var missed: Int
    }

    private var tracks: [Track] = []
    private var nextID = 1

    public init(minIoU: Float = 0.3, maxMissed: Int = 5, smoothing: Int = 1) {
        self.minIoU = minIoU
        self.maxMissed = max(0, maxMissed)
        self.smoothing = max(1, smoothing)
    }

    /// The number of live tracks.
    public var trackCount: Int { tracks.count }

    /// Forgets every track (ids keep counting up).
    public mutating func reset() { tracks.removeAll(keepingCapacity: true) }

    /// Matches one frame's detections (of a `frameWidth` x `frameHeight` frame) to the tracks;
    /// returns them in the given order with their track ids and (smoothed) boxes.
    public mutating func update(_ detections: [Detection], frameWidth: Int, frameHeight: Int) -> [TrackedDetection] {
        let groups = boxGroups(detections)
        let boxes = groups.map { detections[$0[0]] }
        let classes = groups.map { Set($0.map { detections[$0].classIndex }) }
        // Candidate pairs (IoU, track, box), best first; ties: earlier track, then box.
        var pairs: [(iou: Float, track: Int, box: Int)] = []
        for (t, track) in tracks.enumerated() {
            for (b, box) in boxes.enumerated() where !track.classes.isDisjoint(with: classes[b]) {
                let v = iou(track.left, track.top, track.right, track.bottom, box.left, box.top, box.right, box.bottom)
                if v >= minIoU && v > 0 { pairs.append((v, t, b)) }
            }
        }
        pairs.sort { a, b in
            if a.iou != b.iou { return a.iou > b.iou }
            if a.track != b.track { return a.track < b.track }
            return a.box < b.box
        }
        var trackOfBox = [Int](repeating: -1, count: boxes.count)
        var trackUsed = [Bool](repeating: false, count: tracks.count)
        for p in pairs where !trackUsed[p.track] && trackOfBox[p.box] < 0 {
            trackUsed[p.track] = true
            trackOfBox[p.box] = p.track
        }
        // Matched tracks take the new box, unmatched ones age (and end); new boxes start tracks.
        var result = detections.map { TrackedDetection(detection: $0, trackID: 0) }
        var newTracks: [Track] = []
        for (b, box) in boxes.enumerated() {
            var track: Track
            if trackOfBox[b] >= 0 {
                track = tracks[trackOfBox[b]]
            } else {
                track = Track(id: nextID, classes: [], left: 0, top: 0, right: 0, bottom: 0, history: [], missed: 0)
                nextID += 1
            }
            track.classes = classes[b]
            track.left = box.left; track.top = box.top; track.right = box.right; track.bottom = box.bottom
            track.missed = 0
            if track.history.count >= smoothing { track.history.removeFirst(track.history.count - smoothing + 1) }
            track.history.append((box.x, box.y, box.width, box.height))
            var mean: (Float, Float, Float, Float)? = nil
            if smoothing > 1 && track.history.count > 1 {
                var sx: Float = 0, sy: Float = 0, sw: Float = 0, sh: Float = 0
                for h in track.history { sx += h.0; sy += h.1; sw += h.2; sh += h.3 }
                let n = Float(track.history.count)
                mean = (sx / n, sy / n, sw / n, sh / n)
            }
            for i in groups[b] {
                result[i].trackID = track.id
                if let (x, y, w, h) = mean {
                    let d = detections[i]
                    result[i].detection = Detection(classIndex: d.classIndex, className: d.className,
                                                    confidence: d.confidence, objectness: d.objectness, x: x, y: y,
                                                    width: w, height: h, imageWidth: frameWidth,
                                                    imageHeight: frameHeight, boxIndex: d.boxIndex)
                }
            }
            if trackOfBox[b] >= 0 { tracks[trackOfBox[b]] = track } else { newTracks.append(track) }
        }
        var kept: [Track] = []
        kept.reserveCapacity(tracks.count + newTracks.count)
        for (t, var track) in tracks.enumerated() {
            if !trackUsed[t] {
                track.missed += 1
                if track.missed > maxMissed { continue }
            }
            kept.append(track)
        }
        tracks = kept + newTracks
        return result
    }
}

/// Intersection over union of two boxes given by their edges (0 when either is empty).
@inline(__always)
func iou(_ l1: Float, _ t1: Float, _ r1: Float, _ b1: Float,
         _ l2: Float, _ t2: Float, _ r2: Float, _ b2: Float) -> Float {
    let w = min(r1, r2) - max(l1, l2), h = min(b1, b2) - max(t1, t2)
    guard w > 0, h > 0 else { return 0 }
    let inter = w * h
    let union = (r1 - l1) * (b1 - t1) + (r2 - l2) * (b2 - t2) - inter
    return union > 0 ? inter / union : 0
}
