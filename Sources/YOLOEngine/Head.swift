import YOLOCore

/// A detection head as the model describes it: where it is and how its output is laid out.
public struct HeadInfo: Sendable {
    /// Index of the [yolo] (or [region]) layer in the cfg (0-based, not counting [net]).
    public let layerIndex: Int
    /// The layer whose output is the raw head (the conv before the [yolo] layer).
    public let inputLayer: Int
    /// The head's grid width in cells.
    public let gridWidth: Int
    /// The head's grid height in cells.
    public let gridHeight: Int
    /// The number of classes the head scores.
    public let classes: Int
    /// Anchor sizes (w, h) in network-input pixels for this head's mask, in mask order; for a
    /// [region] head, in grid cells (every anchor: its mask is 0..<num).
    public let anchors: [(width: Float, height: Float)]
    /// The mask indices into the cfg's full anchor list.
    public let mask: [Int]
    /// AlexeyAB's `scale_x_y` (default 1): the box centre is
    /// `(col + logistic(tx) * scaleXY - (scaleXY - 1) / 2) / gridWidth`, likewise y.
    public var scaleXY: Float = 1
    /// AlexeyAB's `new_coords=1` (Scaled-YOLOv4, YOLOv7): the conv before the head already
    /// applied the logistic, so the head takes none; w = (2 tw)^2 * anchor / netWidth.
    public var newCoords: Bool = false
    /// The cfg's `nms_kind` (greedynms by default) and `beta_nms` (default 0.6, DIoU-NMS only).
    /// Darknet uses the last [yolo] layer's; so does `Detector`.
    public var nmsKind: NMSKind = .greedy
    /// The `beta_nms` of DIoU-NMS (default 0.6).
    public var betaNMS: Float = 0.6
    /// A YOLOv2 [region] head rather than [yolo]: x = (col + logistic(tx)) / gridWidth,
    /// w = exp(tw) * anchorWidth / gridWidth, objectness logistic(to); the class scores by
    /// softmax when `softmax`, else raw (Darknet's get_region_detections).
    public var region: Bool = false
    /// Whether a [region] head's class scores go through softmax (its cfg's `softmax=1`).
    public var softmax: Bool = false
}

/// How overlapping boxes are suppressed (AlexeyAB's `nms_kind`).
public enum NMSKind: String, Sendable {
    /// IoU above the threshold (Darknet's `do_nms_sort`; `nms_kind=greedynms` is the same).
    case greedy = "greedynms"
    /// DIoU above the threshold: IoU - (centre distance^2 / enclosing diagonal^2)^beta_nms
    /// (Darknet's `diounms_sort`).
    case diou = "diounms"
}

/// One YOLO output head after a forward pass. The buffers belong to the session and are
/// valid until its next `forward`.
public struct HeadView {
    /// The head's layout, as the model describes it.
    public let info: HeadInfo
    /// The raw head: the output of the conv before the [yolo] layer (CHW,
    /// channel = anchor * (5 + classes) + entry; entries tx, ty, tw, th, objectness, classes).
    public let raw: UnsafeBufferPointer<Float>
    /// The [yolo] layer's output, as Darknet computes it: logistic applied to entries
    /// 0, 1 and 4... of each anchor; tw, th left raw. (Computed when `Session.heads` is read.)
    public let activated: UnsafeBufferPointer<Float>

    /// `info.layerIndex`: the [yolo] or [region] layer's index.
    public var layerIndex: Int { info.layerIndex }
    /// `info.gridWidth`: the grid width in cells.
    public var gridWidth: Int { info.gridWidth }
    /// `info.gridHeight`: the grid height in cells.
    public var gridHeight: Int { info.gridHeight }
    /// `info.classes`: the number of classes.
    public var classes: Int { info.classes }
    /// `info.anchors`: this head's anchors, in mask order.
    public var anchors: [(width: Float, height: Float)] { info.anchors }
    /// `info.mask`: the head's indices into the cfg's anchors.
    public var mask: [Int] { info.mask }
}
