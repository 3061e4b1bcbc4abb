import YOLOCore
import YOLOEngine

/// How a frame is fitted to the network's input size.
public enum ResizeMode: String, Sendable {
    /// Keep the aspect ratio and pad with grey (pjreddie's Darknet, `letterbox_image`).
    case letterbox
    /// Stretch to the input size (AlexeyAB's Darknet by default, `resize_image`).
    case stretch
}

extension Model {
    /// How a `Detector` fits frames to this model unless `DetectorOptions.resize` says: its cfg's
    /// [net] letter_box (0: stretch, 1: letterbox, as AlexeyAB's Darknet), letterbox without one.
    public var defaultResize: ResizeMode { letterBox == false ? .stretch : .letterbox }
}

/// What `Detector` reports and how.
public struct DetectorOptions: Sendable, Equatable {
    /// A (box, class) is reported when objectness > threshold and objectness * P(class) > threshold.
    public var threshold: Float
    /// Boxes whose IoU with a better box of the same class exceeds this are suppressed.
    public var nmsThreshold: Float
    /// Suppress overlapping boxes whatever their class (ranked by their best class).
    public var classAgnostic: Bool
    /// Report at most this many detections: the most confident ones, kept in Darknet's order.
    public var maxDetections: Int?
    /// Only these class indices are considered (nil: all classes).
    public var classFilter: Set<Int>?
    /// Letterbox (pjreddie) or stretch (AlexeyAB) the frame to the network size; nil (the
    /// default): as the model says (`Model.defaultResize`: its cfg's [net] letter_box, else letterbox).
    public var resize: ResizeMode?

    /// Options with Darknet's defaults (threshold 0.25, NMS 0.45), per class, every detection, the model's resize.
    public init(threshold: Float = 0.25, nmsThreshold: Float = 0.45, classAgnostic: Bool = false,
                maxDetections: Int? = nil, classFilter: Set<Int>? = nil, resize: ResizeMode? = nil) {
        self.threshold = threshold
        self.nmsThreshold = nmsThreshold
        self.classAgnostic = classAgnostic
        self.maxDetections = maxDetections
        self.classFilter = classFilter
        self.resize = resize
    }
}

/// Where the time of the last `detect` went, in nanoseconds.
public struct DetectionTiming: Sendable, Equatable {
    /// Conversion to floats and resizing into the network input.
    public var preprocess: UInt64 = 0
    /// The network's forward pass (what Darknet reports as "Predicted in").
    public var inference: UInt64 = 0
    /// Decoding, NMS and building the detections.
    public var postprocess: UInt64 = 0

    /// A timing of the given parts (nanoseconds).
    public init(preprocess: UInt64 = 0, inference: UInt64 = 0, postprocess: UInt64 = 0) {
        self.preprocess = preprocess
        self.inference = inference
        self.postprocess = postprocess
    }

    /// The three parts together.
    public var totalNanoseconds: UInt64 { preprocess + inference + postprocess }
}

/// Finds objects in images: preprocesses a frame into the network's input, runs the network,
/// decodes its [yolo] heads and applies NMS, reproducing the original Darknet.
///
/// A detector owns one `Session` of a (possibly shared) `Model` and its scratch buffers;
/// preprocessing allocates nothing after the first frame of a given size. It is `Sendable`:
/// share one between threads and tasks, and calls from several at once are served one after
/// the other (each gets its own frame's detections). For frames in parallel, make one detector
/// per thread or task from one shared model, or let `Model.detectAll` do it.
public final class Detector: Sendable {
    /// The model this detector runs (shared with any other sessions of it).
    public let model: Model
    /// The detector's own session of `model`.
    public let session: Session
    /// Class names, one per class (empty when none were given: classes are then "class N").
    public let classNames: [String]
    /// The number of classes the network's heads predict.
    public let classCount: Int
    /// What `detect` reports; a change applies from the next call on (a call under way keeps
    /// the options it started with).
    public var options: DetectorOptions {
        get { state.withLock { $0.options } }
        set { state.withLock { $0.options = newValue } }
    }
    /// Timing of the last `detect` (or `detectFromInput`) that finished, whichever thread made it.
    public var lastTiming: DetectionTiming { state.withLock { $0.timing } }

    /// Everything a call changes, owned by the detector's lock.
    private struct State {
        var options: DetectorOptions
        var timing = DetectionTiming()
        /// The resize's column taps and row slots, grown as frames need.
        var resize = ResizeScratch()
        /// Byte value to float in 0...1.
        let byteTable: UnsafeMutablePointer<Float>
        var postprocessor = Postprocessor()
    }
    private let state: Locked<State>

    /// Loads a model and, when `namesPath` is given, its class names (one per line).
    public convenience init(cfgPath: String, weightsPath: String, namesPath: String? = nil,
                            options: DetectorOptions = DetectorOptions(), threads: Int? = nil,
                            modelOptions: ModelOptions = ModelOptions()) throws(YOLOError) {
        let model = try Model(cfgPath: cfgPath, weightsPath: weightsPath, options: modelOptions)
        var names: [String] = []
        if let namesPath {
            names = try Detector.readClassNames(path: namesPath)
            let classes = model.heads.first?.classes ?? 0
            if names.count < classes {
                throw .invalidArgument("\(namesPath): has \(names.count) class names, but \(cfgPath) has \(classes) classes")
            }
        }
        try self.init(model: model, classNames: names, options: options, threads: threads)
    }

    /// A detector over a (possibly shared) model, with a session of its own of `threads`
    /// threads (default: every core; give each detector a share when several run at once).
    /// `classNames` may be empty (classes are then named "class N"); otherwise it needs at
    /// least one name per class (extra names are ignored, as Darknet does).
    public init(model: Model, classNames: [String] = [], options: DetectorOptions = DetectorOptions(),
                threads: Int? = nil) throws(YOLOError) {
        let heads = model.heads
        guard let classes = heads.first?.classes else {
            throw .invalidArgument("the network has no [yolo] or [region] layer")
        }
        for head in heads where head.classes != classes {
            throw .invalidArgument("the detection heads disagree on classes: layer \(heads[0].layerIndex) has \(classes), layer \(head.layerIndex) has \(head.classes)")
        }
        guard model.inputChannels == 3 else {
            throw .invalidArgument("the network takes \(model.inputChannels) input channels; Detector needs 3 (RGB)")
        }
        if !classNames.isEmpty && classNames.count < classes {
            throw .invalidArgument("\(classNames.count) class names given, but the network has \(classes) classes")
        }
        self.model = model
        session = try Session(model: model, threads: threads)
        self.classNames = classNames
        self.classCount = classes
        let byteTable = UnsafeMutablePointer<Float>.allocate(capacity: 256)
        fillUnitByteTable(byteTable)
        state = Locked(State(options: options, byteTable: byteTable))
    }

    deinit { state.withLock { s in s.resize.deallocate(); s.byteTable.deallocate() } }

    /// Reads a Darknet names file: one class name per line (LF, CRLF or CR; a final line break
    /// is optional; a UTF-8 byte-order mark at the start is dropped, see `textLines`).
    public static func readClassNames(path: String) throws(YOLOError) -> [String] {
        var lines = textLines(try readTextFile(path)).map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    /// The name of class `index`.
    public func className(_ index: Int) -> String {
        index < classNames.count ? classNames[index] : "class \(index)"
    }

    /// Detects objects in an 8-bit frame. `rowStride` is the distance in bytes between rows
    /// (default: `width * format.bytesPerPixel`). Boxes are in the frame's pixels.
    public func detect(pixels: UnsafeRawBufferPointer, width: Int, height: Int, rowStride: Int? = nil,
                       format: PixelFormat = .rgb) throws(YOLOError) -> [Detection] {
        // The detector's lock guards its own state; the session's keeps anyone else's use of
        // the session out from the filled input to the decoded heads.
        try state.withLock { (s: inout State) throws(YOLOError) -> [Detection] in
            try session.exclusively { () throws(YOLOError) in
                try validate(s.options)
                let start = monotonicNanoseconds()
                try preprocess(&s, pixels: pixels, width: width, height: height, rowStride: rowStride, format: format)
                let prepared = monotonicNanoseconds()
                let detections = try runAndDecode(&s, imageWidth: width, imageHeight: height)
                s.timing.preprocess = prepared - start
                return detections
            }
        }
    }

    /// Detects objects in packed RGB bytes (`width * height * 3`, rows top first).
    public func detect(rgb: [UInt8], width: Int, height: Int) throws(YOLOError) -> [Detection] {
        // (withUnsafeBytes would erase the error type.)
        try rgb.withUnsafeBytes { p in
            Result { () throws(YOLOError) in try detect(pixels: p, width: width, height: height, format: .rgb) }
        }.get()
    }

    /// Fills `session.input` from an 8-bit frame as `options.resize` says (letterbox: Darknet's
    /// `letterbox_image`; stretch: `resize_image` to the input size). Allocates only when a
    /// frame is resized wider than any before.
    public func preprocess(pixels: UnsafeRawBufferPointer, width: Int, height: Int, rowStride: Int? = nil,
                           format: PixelFormat = .rgb) throws(YOLOError) {
        try state.withLock { (s: inout State) throws(YOLOError) in
            try session.exclusively { () throws(YOLOError) in
                try preprocess(&s, pixels: pixels, width: width, height: height, rowStride: rowStride, format: format)
            }
        }
    }

    /// Inside the detector's lock and `session.exclusively`.
    private func preprocess(_ s: inout State, pixels: UnsafeRawBufferPointer, width: Int, height: Int, rowStride: Int?,
                            format: PixelFormat) throws(YOLOError) {
        let bpp = format.bytesPerPixel
        guard width > 0, height > 0 else {
            throw .invalidArgument("image size \(width)x\(height): width and height must be positive")
        }
        let (rowBytes, o1) = width.multipliedReportingOverflow(by: bpp)
        guard !o1 else { throw .invalidArgument("image width \(width) is too large") }
        let stride = rowStride ?? rowBytes
        guard stride >= rowBytes else {
            throw .invalidArgument("row stride \(stride) bytes is less than width \(width) x \(bpp) bytes per pixel (\(format.rawValue)) = \(rowBytes)")
        }
        let (rows, o2) = (height - 1).multipliedReportingOverflow(by: stride)
        let (needed, o3) = rows.addingReportingOverflow(rowBytes)
        guard !o2, !o3, pixels.count >= needed, let base = pixels.baseAddress else {
            throw .invalidArgument("pixel buffer has \(pixels.count) bytes; \(width)x\(height) \(format.rawValue) with row stride \(stride) needs \(o2 || o3 ? "more" : "\(needed)")")
        }
        let src = base.assumingMemoryBound(to: UInt8.self)
        let netW = model.inputWidth, netH = model.inputHeight
        let (newW, newH) = (s.options.resize ?? model.defaultResize) == .letterbox
            ? letterboxSize(width: width, height: height, netWidth: netW, netHeight: netH)
            : (netW, netH)
        s.resize.reserve(width: newW)
        let x0 = (netW - newW) / 2, y0 = (netH - newH) / 2
        let input = session.input.baseAddress!
        resizeBilinear(src, width: width, height: height, rowStride: stride, layout: format.layout, table: s.byteTable,
                       outWidth: newW, outHeight: newH, scratch: s.resize,
                       into: input, dstWidth: netW, dstHeight: netH, x0: x0, y0: y0)
        fillOutside(input, width: netW, height: netH, x0: x0, y0: y0, boxWidth: newW, boxHeight: newH, value: 0.5)
    }

    /// Runs the network on the current contents of `session.input` (which must hold a frame of
    /// `imageWidth` x `imageHeight` preprocessed as `options.resize` says, e.g. by `preprocess`)
    /// and returns its detections.
    public func detectFromInput(imageWidth: Int, imageHeight: Int) throws(YOLOError) -> [Detection] {
        try state.withLock { (s: inout State) throws(YOLOError) -> [Detection] in
            try session.exclusively { () throws(YOLOError) in
                try validate(s.options)
                try checkImageSize(imageWidth, imageHeight)
                s.timing.preprocess = 0
                return try runAndDecode(&s, imageWidth: imageWidth, imageHeight: imageHeight)
            }
        }
    }

    /// Decodes the heads of the session's last forward pass, for a frame of the given size.
    public func decodeHeads(imageWidth: Int, imageHeight: Int) throws(YOLOError) -> [Detection] {
        try state.withLock { (s: inout State) throws(YOLOError) -> [Detection] in
            try session.exclusively { () throws(YOLOError) in
                try validate(s.options)
                try checkImageSize(imageWidth, imageHeight)
                return try decode(&s, imageWidth: imageWidth, imageHeight: imageHeight)
            }
        }
    }

    private func checkImageSize(_ width: Int, _ height: Int) throws(YOLOError) {
        guard width > 0, height > 0 else {
            throw .invalidArgument("image size \(width)x\(height): width and height must be positive")
        }
    }

    /// Inside the detector's lock and `session.exclusively`.
    private func runAndDecode(_ s: inout State, imageWidth: Int, imageHeight: Int) throws(YOLOError) -> [Detection] {
        let start = monotonicNanoseconds()
        session.forwardLocked()
        let inferred = monotonicNanoseconds()
        let detections = try decode(&s, imageWidth: imageWidth, imageHeight: imageHeight)
        s.timing.inference = inferred - start
        s.timing.postprocess = monotonicNanoseconds() - inferred
        return detections
    }

    private func validate(_ o: DetectorOptions) throws(YOLOError) {
        guard o.threshold.isFinite, (0...1).contains(o.threshold) else {
            throw .invalidArgument("threshold \(o.threshold): expected a number in 0...1")
        }
        guard o.nmsThreshold.isFinite, (0...1).contains(o.nmsThreshold) else {
            throw .invalidArgument("NMS threshold \(o.nmsThreshold): expected a number in 0...1")
        }
        if let m = o.maxDetections, m < 0 {
            throw .invalidArgument("maxDetections \(m): expected 0 or more")
        }
        if let filter = o.classFilter, let bad = filter.first(where: { !(0..<classCount).contains($0) }) {
            throw .invalidArgument("class filter: class \(bad) is out of range 0..<\(classCount)")
        }
    }

    private func decode(_ s: inout State, imageWidth: Int, imageHeight: Int) throws(YOLOError) -> [Detection] {
        let heads = session.rawHeads
        // A NaN or infinity in a head would decode to boxes with no place (or to none at all):
        // report it instead of a silently wrong answer.
        for head in heads {
            if let i = head.raw.firstIndex(where: { !$0.isFinite }) {
                throw .numeric("layer \(head.info.inputLayer) (the input of the [yolo] layer \(head.layerIndex)) holds \(head.raw[i]) at index \(i): the weights or the input give non-finite values, so there are no detections to report")
            }
        }
        var options = s.options
        options.resize = options.resize ?? model.defaultResize
        return try s.postprocessor.run(heads: heads, netWidth: model.inputWidth, netHeight: model.inputHeight,
                                       imageWidth: imageWidth, imageHeight: imageHeight, options: options,
                                       classCount: classCount, names: classNames)
    }
}

/// Decoding, NMS and reporting, with storage kept between frames.
struct Postprocessor {
    private var boxes = CandidateBoxes()
    private var order: [Int] = []
    private var scratch: [Int] = []

    /// The detections in `heads` for a frame of `imageWidth` x `imageHeight`, one per (box, class)
    /// above the threshold, boxes in Darknet's order after NMS. `names` may be empty. Throws when
    /// a decoded box is not finite (see `checkDecodedBoxes`).
    mutating func run(heads: [HeadView], netWidth: Int, netHeight: Int, imageWidth: Int, imageHeight: Int,
                      options o: DetectorOptions, classCount: Int, names: [String]) throws(YOLOError) -> [Detection] {
        var allowed: [Bool]? = nil
        var classes = Array(0..<classCount)
        if let filter = o.classFilter {
            allowed = (0..<classCount).map { filter.contains($0) }
            classes = classes.filter { filter.contains($0) }
        }
        boxes.reset(classes: classCount)
        for head in heads {
            let first = boxes.count
            decodeHead(head, netWidth: netWidth, netHeight: netHeight, threshold: o.threshold, allowed: allowed,
                       exp: exp, into: &boxes)
            if (o.resize ?? .letterbox) == .letterbox {
                undoLetterbox(&boxes, range: first..<boxes.count, imageWidth: imageWidth, imageHeight: imageHeight,
                              netWidth: netWidth, netHeight: netHeight)
            }
            try checkDecodedBoxes(boxes, range: first..<boxes.count, head: head, imageWidth: imageWidth, imageHeight: imageHeight)
        }
        // Darknet takes nms_kind and beta_nms from the network's last layer (its last [yolo]).
        let rule = heads.last.map { Suppression(kind: $0.info.nmsKind, beta: $0.info.betaNMS) } ?? Suppression()
        if o.classAgnostic {
            nmsAgnostic(&boxes, classes: classes, threshold: o.nmsThreshold, rule: rule, limit: o.maxDetections,
                        order: &order, scratch: &scratch)
        } else {
            nmsPerClass(&boxes, classes: classes, threshold: o.nmsThreshold, rule: rule, limit: o.maxDetections,
                        order: &order, scratch: &scratch)
        }
        var detections: [Detection] = []
        for (position, b) in order.enumerated() {
            for k in 0..<classCount {
                let p = boxes.probs[b * classCount + k]
                guard p > o.threshold else { continue }
                detections.append(Detection(classIndex: k, className: k < names.count ? names[k] : "class \(k)",
                                            confidence: p, objectness: boxes.objectness[b],
                                            x: boxes.x[b], y: boxes.y[b], width: boxes.w[b], height: boxes.h[b],
                                            imageWidth: imageWidth, imageHeight: imageHeight, boxIndex: position))
            }
        }
        if let m = o.maxDetections, detections.count > m {
            // Keep the m most confident (ties: the earlier one), in Darknet's order.
            var ranked = Array(detections.indices)
            stableSortDescending(&ranked, scratch: &scratch) { detections[$0].confidence }
            var keep = [Bool](repeating: false, count: detections.count)
            for i in ranked.prefix(m) { keep[i] = true }
            detections = detections.indices.filter { keep[$0] }.map { detections[$0] }
        }
        return detections
    }
}
