/// A detection with the id of the track it belongs to.
public struct TrackedDetection: Sendable, Equatable {
    /// The detection; its box is the track's average over the last `smoothing` frames.
    public var detection: Detection
    /// A stable id (1, 2, ...): the same object keeps its id from frame to frame.
    public var trackID: Int

    public init(detection: Detection, trackID: Int) {
        self.detection = detection
        self.trackID = trackID
    }
}

/// A greedy IoU tracker: each frame's detections are matched to the live tracks of the same
/// class, best IoU first (each track and detection used once, IoU at least `minIoU`); a
/// detection left over starts a new track, a track left unmatched for more than `maxMissed`
/// frames ends. With `smoothing` N > 1 each reported box is the mean of its track's last N
/// boxes (the current one included), which steadies boxes that jitter from frame to frame.
///
/// Feed frames in order, one `update` per frame. Allocation is proportional to the number
/// of tracks; nothing grows with the length of the stream.
public struct IoUTracker: Sendable {
    public var minIoU: Float
    public var maxMissed: Int
    public private(set) var smoothing: Int

    private struct Track: Sendable {
        var id: Int
        var classIndex: Int
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
        // Candidate pairs (IoU, track, detection), best first; ties: earlier track, then detection.
        var pairs: [(iou: Float, track: Int, detection: Int)] = []
        for (t, track) in tracks.enumerated() {
            for (d, det) in detections.enumerated() where det.classIndex == track.classIndex {
                let v = iou(track.left, track.top, track.right, track.bottom, det.left, det.top, det.right, det.bottom)
                if v >= minIoU && v > 0 { pairs.append((v, t, d)) }
            }
        }
        pairs.sort { a, b in
            if a.iou != b.iou { return a.iou > b.iou }
            if a.track != b.track { return a.track < b.track }
            return a.detection < b.detection
        }
        var trackOfDetection = [Int](repeating: -1, count: detections.count)
        var trackUsed = [Bool](repeating: false, count: tracks.count)
        for p in pairs where !trackUsed[p.track] && trackOfDetection[p.detection] < 0 {
            trackUsed[p.track] = true
            trackOfDetection[p.detection] = p.track
        }
        // Unmatched tracks age (and end); matched ones take the new box.
        var result: [TrackedDetection] = []
        result.reserveCapacity(detections.count)
        var newTracks: [Track] = []
        for (d, det) in detections.enumerated() {
            var track: Track
            if trackOfDetection[d] >= 0 {
                track = tracks[trackOfDetection[d]]
            } else {
                track = Track(id: nextID, classIndex: det.classIndex, left: 0, top: 0, right: 0, bottom: 0,
                              history: [], missed: 0)
                nextID += 1
            }
            track.left = det.left; track.top = det.top; track.right = det.right; track.bottom = det.bottom
            track.missed = 0
            if track.history.count >= smoothing { track.history.removeFirst(track.history.count - smoothing + 1) }
            track.history.append((det.x, det.y, det.width, det.height))
            var out = det
            if smoothing > 1 && track.history.count > 1 {
                var sx: Float = 0, sy: Float = 0, sw: Float = 0, sh: Float = 0
                for h in track.history { sx += h.0; sy += h.1; sw += h.2; sh += h.3 }
                let n = Float(track.history.count)
                out = Detection(classIndex: det.classIndex, className: det.className, confidence: det.confidence,
                                objectness: det.objectness, x: sx / n, y: sy / n, width: sw / n, height: sh / n,
                                imageWidth: frameWidth, imageHeight: frameHeight, boxIndex: det.boxIndex)
            }
            result.append(TrackedDetection(detection: out, trackID: track.id))
            if trackOfDetection[d] >= 0 { tracks[trackOfDetection[d]] = track } else { newTracks.append(track) }
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
