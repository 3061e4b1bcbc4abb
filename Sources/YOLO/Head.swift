/// One YOLO output head after a forward pass. The buffers belong to the network and are
/// valid until its next `forward`.
public struct HeadView {
    /// Index of the [yolo] layer in the cfg (0-based, not counting [net]).
    public let layerIndex: Int
    public let gridWidth: Int
    public let gridHeight: Int
    public let classes: Int
    /// Anchor sizes (w, h) in network-input pixels for this head's mask, in mask order.
    public let anchors: [(width: Float, height: Float)]
    /// The mask indices into the cfg's full anchor list.
    public let mask: [Int]
    /// The raw head: the output of the conv before the [yolo] layer (CHW,
    /// channel = anchor * (5 + classes) + entry; entries tx, ty, tw, th, objectness, classes).
    public let raw: UnsafeBufferPointer<Float>
    /// The [yolo] layer's output, as Darknet computes it: logistic applied to entries
    /// 0, 1 and 4... of each anchor; tw, th left raw. (Computed when `Network.heads` is read.)
    public let activated: UnsafeBufferPointer<Float>
}
