// What goes into a `FramePipeline` (`VideoFrame`, and `Detector.detect` of one), what comes out
// (`FrameResult`) and how it runs (`FramePipelineOptions`).
import YOLO

/// One video frame handed to a `FramePipeline`.
public struct VideoFrame: Sendable {
    /// The frame's position in the source (0, 1, 2, ...), counting frames that get skipped.
    public var index: Int
    /// Its time in seconds (presentation time, or index / frame rate).
    public var time: Double
    /// The pixels: `height` rows `rowStride` bytes apart, in `format`.
    public var pixels: [UInt8]
    public var width: Int
    public var height: Int
    public var rowStride: Int
    public var format: PixelFormat
    /// How long reading and decoding the frame took (reported back in `FrameResult`).
    public var decodeNanoseconds: UInt64

    public init(index: Int, time: Double, pixels: [UInt8], width: Int, height: Int, rowStride: Int? = nil,
                format: PixelFormat = .rgb, decodeNanoseconds: UInt64 = 0) {
        self.index = index
        self.time = time
        self.pixels = pixels
        self.width = width
        self.height = height
        self.rowStride = rowStride ?? width * format.bytesPerPixel
        self.format = format
        self.decodeNanoseconds = decodeNanoseconds
    }
}

/// What a `FramePipeline` reports for one frame, in frame order.
public struct FrameResult: Sendable {
    /// The frame, pixels included (to draw on and pass on).
    public var frame: VideoFrame
    /// The detections, in Darknet's order (as `Detector.detect` returns them).
    public var detections: [Detection]
    /// The same detections with track ids, boxes smoothed as `FramePipelineOptions.smoothing` says.
    public var tracked: [TrackedDetection]
    /// Preprocess, inference and postprocess time of this frame.
    public var timing: DetectionTiming
    /// Indices of the frames dropped (live sources only) since the previous result.
    public var skipped: [Int]
    /// Set when the frame could not be processed (e.g. a buffer too small for its size).
    public var error: YOLOError?

    /// The tracked detections as boxes: one per object, with its track id and its classes,
    /// most confident first (what a frame shows: "#3 car 61%, truck 30%").
    public var boxes: [TrackedBox] { TrackedBox.boxes(of: tracked) }
}

/// How a `FramePipeline` runs.
public struct FramePipelineOptions: Sendable {
    /// Detectors (sessions) working at once, all sharing one model.
    public var sessions: Int
    /// Threads per session.
    public var threadsPerSession: Int
    /// Frames admitted and not yet taken by `next()` (queued, being processed or done and
    /// waiting to be emitted in order); `submit` waits (or, when live, drops) beyond this.
    /// Default: 2 x sessions.
    public var maxInFlight: Int?
    /// A live source: `submit` never waits. At most one frame waits for a free detector; a
    /// newer frame replaces it (newest wins), and the replaced frames are reported in the
    /// next result's `skipped`.
    public var dropStale: Bool
    /// Frames each tracked box is averaged over (1: no smoothing).
    public var smoothing: Int
    /// The tracker's minimum IoU to continue a track, and how many frames a track survives unseen.
    public var trackMinIoU: Float
    public var trackMaxMissed: Int

    public init(sessions: Int = 2, threadsPerSession: Int = 1, maxInFlight: Int? = nil, dropStale: Bool = false,
                smoothing: Int = 1, trackMinIoU: Float = 0.3, trackMaxMissed: Int = 5) {
        self.sessions = sessions
        self.threadsPerSession = threadsPerSession
        self.maxInFlight = maxInFlight
        self.dropStale = dropStale
        self.smoothing = smoothing
        self.trackMinIoU = trackMinIoU
        self.trackMaxMissed = trackMaxMissed
    }
}

extension Detector {
    /// Detects in a frame (its pixels in place, any format and row stride).
    public func detect(_ frame: VideoFrame) throws(YOLOError) -> [Detection] {
        // (withUnsafeBytes would erase the error type.)
        try frame.pixels.withUnsafeBytes { p in
            Result { () throws(YOLOError) in
                try detect(pixels: p, width: frame.width, height: frame.height, rowStride: frame.rowStride,
                           format: frame.format)
            }
        }.get()
    }
}
