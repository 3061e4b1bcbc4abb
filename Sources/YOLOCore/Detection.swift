/// One object found in an image: one (box, class) pair whose probability is above the
/// threshold, as Darknet reports them (so one box can appear twice, e.g. as car and truck).
public struct Detection: Sendable, Equatable {
    /// Index into the class names (COCO: 0 = person, 16 = dog, ...).
    public var classIndex: Int
    /// The class name, or "class N" when no names were given.
    public var className: String
    /// objectness * P(class | object), as Darknet prints it.
    public var confidence: Float
    /// The box's objectness score.
    public var objectness: Float
    /// Box edges in original-image pixels, unclamped (may lie outside the image).
    public var left: Float
    /// The top edge.
    public var top: Float
    /// The right edge.
    public var right: Float
    /// The bottom edge.
    public var bottom: Float
    /// Box centre and size relative to the original image (Darknet's `rel`), unclamped.
    public var x: Float
    /// The box centre's y, as a fraction of the image height.
    public var y: Float
    /// The box width, as a fraction of the image width.
    public var width: Float
    /// The box height, as a fraction of the image height.
    public var height: Float
    /// Position of the box in the list after NMS (Darknet's `det_index`); detections that
    /// share a box share this index.
    public var boxIndex: Int

    /// A detection from Darknet's relative box (centre and size), its edges computed for an image of `imageWidth` x `imageHeight` pixels.
    public init(classIndex: Int, className: String, confidence: Float, objectness: Float,
                x: Float, y: Float, width: Float, height: Float,
                imageWidth: Int, imageHeight: Int, boxIndex: Int) {
        self.classIndex = classIndex
        self.className = className
        self.confidence = confidence
        self.objectness = objectness
        self.x = x; self.y = y; self.width = width; self.height = height
        let iw = Float(imageWidth), ih = Float(imageHeight)
        self.left = (x - width / 2) * iw
        self.right = (x + width / 2) * iw
        self.top = (y - height / 2) * ih
        self.bottom = (y + height / 2) * ih
        self.boxIndex = boxIndex
    }
}
