// Decoding the [yolo] and [region] heads into candidate boxes, as Darknet's get_yolo_detections,
// get_region_detections and correct_yolo_boxes do, with the same float/double evaluation so the results match bit for bit.
import YOLOCore
import YOLOEngine

/// The boxes that passed the objectness threshold, with their class probabilities, in
/// Darknet's order (heads in cfg order, cells row-major, then the anchors of a cell).
/// Storage is kept between frames.
struct CandidateBoxes {
    /// Box centre and size, relative (0...1 inside the image).
    var x: [Float] = []
    var y: [Float] = []
    var w: [Float] = []
    var h: [Float] = []
    var objectness: [Float] = []
    /// `count * classes` probabilities: objectness * P(class), or 0 unless above the threshold.
    var probs: [Float] = []
    private(set) var classes = 0

    var count: Int { x.count }

    mutating func reset(classes: Int) {
        self.classes = classes
        x.removeAll(keepingCapacity: true)
        y.removeAll(keepingCapacity: true)
        w.removeAll(keepingCapacity: true)
        h.removeAll(keepingCapacity: true)
        objectness.removeAll(keepingCapacity: true)
        probs.removeAll(keepingCapacity: true)
    }

    /// Appends a box whose class probabilities the caller appends to `probs` next.
    mutating func appendBox(x: Float, y: Float, w: Float, h: Float, objectness: Float) {
        self.x.append(x); self.y.append(y); self.w.append(w); self.h.append(h)
        self.objectness.append(objectness)
    }
}

/// Appends the boxes of one head whose objectness is above `threshold` (strictly), as AlexeyAB's
/// Darknet's [yolo] layer and get_yolo_detections: sx = logistic(tx) * scaleXY - (scaleXY - 1) / 2
/// (both in float, the shift rounded from double, as its scal_add_cpu), x = (col + sx) / gridWidth,
/// w = exp(tw) * anchorWidth / netWidth (exp in double), prob[k] = objectness * class_k, kept
/// only when above the threshold. With scaleXY = 1 this is pjreddie's formula, bit for bit.
/// With new_coords the head is already activated: no logistic, w = tw * tw * 4 * anchorWidth /
/// netWidth (float). `allowed`, when given, has one entry per class; probabilities of classes it
/// excludes are set to 0. `exp` is the C library's double exp (passed in so this file needs no
/// libm import).
func decodeHead(_ head: HeadView, netWidth: Int, netHeight: Int, threshold: Float, allowed: [Bool]?,
                exp: (Double) -> Double, into boxes: inout CandidateBoxes) {
    if head.info.region {
        return decodeRegionHead(head, threshold: threshold, allowed: allowed, exp: exp, into: &boxes)
    }
    let plane = head.gridWidth * head.gridHeight
    let entries = head.classes + 5
    // The raw head, with Darknet's [yolo] logistic (in double) taken of just the entries
    // needed: every objectness, and x, y and the classes of the boxes that pass.
    let raw = head.raw
    let newCoords = head.info.newCoords
    let scale = head.info.scaleXY
    let shift = Float(-0.5 * (Double(scale) - 1))
    @inline(__always) func logistic(_ i: Int) -> Float {
        newCoords ? raw[i] : Float(1.0 / (1.0 + exp(-Double(raw[i]))))
    }
    for i in 0..<plane {
        let row = i / head.gridWidth
        let col = i % head.gridWidth
        for n in 0..<head.anchors.count {
            let base = n * entries * plane + i
            let objectness = logistic(base + 4 * plane)
            guard objectness > threshold else { continue }
            let anchor = head.anchors[n]
            let sx = logistic(base) * scale + shift
            let sy = logistic(base + plane) * scale + shift
            let bx = (Float(col) + sx) / Float(head.gridWidth)
            let by = (Float(row) + sy) / Float(head.gridHeight)
            let bw: Float, bh: Float
            if newCoords {
                let tw = raw[base + 2 * plane], th = raw[base + 3 * plane]
                bw = tw * tw * 4 * anchor.width / Float(netWidth)
                bh = th * th * 4 * anchor.height / Float(netHeight)
            } else {
                bw = Float(exp(Double(raw[base + 2 * plane])) * Double(anchor.width) / Double(netWidth))
                bh = Float(exp(Double(raw[base + 3 * plane])) * Double(anchor.height) / Double(netHeight))
            }
            boxes.appendBox(x: bx, y: by, w: bw, h: bh, objectness: objectness)
            for k in 0..<head.classes {
                let prob = objectness * logistic(base + (5 + k) * plane)
                let keep = prob > threshold && (allowed.map { k < $0.count && $0[k] } ?? true)
                boxes.probs.append(keep ? prob : 0)
            }
            // Heads with fewer classes than the widest one (not in a valid cfg) pad with zeros.
            for _ in head.classes..<max(head.classes, boxes.classes) { boxes.probs.append(0) }
        }
    }
}

/// Appends the boxes of a YOLOv2 [region] head whose objectness is above `threshold` (strictly),
/// as pjreddie's get_region_detections on forward_region_layer's output: objectness =
/// logistic(to), x = (col + logistic(tx)) / gridWidth, w = exp(tw) * anchorWidth / gridWidth
/// (anchors in grid cells; exp, product and quotient in double), class k's probability
/// objectness * softmax(classes)[k] (raw scores without softmax=1), kept when above the
/// threshold. Darknet numbers these boxes anchor by anchor (index n * cells + cell), so they are
/// appended in that order: NMS breaks ties by it.
func decodeRegionHead(_ head: HeadView, threshold: Float, allowed: [Bool]?, exp: (Double) -> Double,
                      into boxes: inout CandidateBoxes) {
    let plane = head.gridWidth * head.gridHeight
    let entries = head.classes + 5
    let raw = head.raw
    @inline(__always) func logistic(_ i: Int) -> Float { Float(1.0 / (1.0 + exp(-Double(raw[i])))) }
    var scores = [Float](repeating: 0, count: head.classes)
    for n in 0..<head.anchors.count {
        let anchor = head.anchors[n]
        for i in 0..<plane {
            let base = n * entries * plane + i
            let objectness = logistic(base + 4 * plane)
            guard objectness > threshold else { continue }
            let row = i / head.gridWidth, col = i % head.gridWidth
            let bx = (Float(col) + logistic(base)) / Float(head.gridWidth)
            let by = (Float(row) + logistic(base + plane)) / Float(head.gridHeight)
            let bw = Float(exp(Double(raw[base + 2 * plane])) * Double(anchor.width) / Double(head.gridWidth))
            let bh = Float(exp(Double(raw[base + 3 * plane])) * Double(anchor.height) / Double(head.gridHeight))
            boxes.appendBox(x: bx, y: by, w: bw, h: bh, objectness: objectness)
            for k in 0..<head.classes { scores[k] = raw[base + (5 + k) * plane] }
            if head.info.softmax { softmaxInPlace(&scores, exp: exp) }
            for k in 0..<head.classes {
                let prob = objectness * scores[k]
                let keep = prob > threshold && (allowed.map { k < $0.count && $0[k] } ?? true)
                boxes.probs.append(keep ? prob : 0)
            }
            for _ in head.classes..<max(head.classes, boxes.classes) { boxes.probs.append(0) }
        }
    }
}

/// Darknet's softmax (temperature 1): the largest subtracted in float, exp in double, the sum
/// accumulated in float, each value divided by it.
func softmaxInPlace(_ v: inout [Float], exp: (Double) -> Double) {
    guard let largest = v.max() else { return }
    var sum: Float = 0
    for k in v.indices {
        v[k] = Float(exp(Double(v[k] - largest)))
        sum += v[k]
    }
    for k in v.indices { v[k] /= sum }
}

/// Maps the boxes from `range` back from the letterboxed network input to the original image,
/// as Darknet's correct_yolo_boxes (relative coordinates): the offset is an integer difference
/// halved in double, the scale a float ratio, the division done in double.
func undoLetterbox(_ boxes: inout CandidateBoxes, range: Range<Int>, imageWidth: Int, imageHeight: Int,
                   netWidth: Int, netHeight: Int) {
    let (newWidth, newHeight) = letterboxSize(width: imageWidth, height: imageHeight,
                                              netWidth: netWidth, netHeight: netHeight)
    let offsetX = Double(netWidth - newWidth) / 2.0 / Double(netWidth)
    let offsetY = Double(netHeight - newHeight) / 2.0 / Double(netHeight)
    let ratioX = Double(Float(newWidth) / Float(netWidth))
    let ratioY = Double(Float(newHeight) / Float(netHeight))
    let growX = Float(netWidth) / Float(newWidth)
    let growY = Float(netHeight) / Float(newHeight)
    for i in range {
        boxes.x[i] = Float((Double(boxes.x[i]) - offsetX) / ratioX)
        boxes.y[i] = Float((Double(boxes.y[i]) - offsetY) / ratioY)
        boxes.w[i] *= growX
        boxes.h[i] *= growY
    }
}

/// Throws when a box in `range` (decoded from `head`, its letterbox undone) or its scores are not
/// finite numbers, or its edges in the image's pixels (as `Detection` reports them) are not.
/// The raw heads are finite by then (checked before decoding), so this happens only when a
/// box's size overflows: exp(tw) of a raw value over about 88, which no network whose weights
/// fit its cfg gives. Such boxes have no place in the image (JSON would say null, COCO's
/// clamping would turn them into whole-image boxes): the frame fails, naming the head, rather
/// than reporting boxes that are not there or silently dropping what the network said.
func checkDecodedBoxes(_ boxes: CandidateBoxes, range: Range<Int>, head: HeadView,
                       imageWidth: Int, imageHeight: Int) throws(YOLOError) {
    let iw = Float(imageWidth), ih = Float(imageHeight)
    for i in range {
        let x = boxes.x[i], y = boxes.y[i], w = boxes.w[i], h = boxes.h[i]
        let left = (x - w / 2) * iw, right = (x + w / 2) * iw, top = (y - h / 2) * ih, bottom = (y + h / 2) * ih
        var finite = x.isFinite && y.isFinite && w.isFinite && h.isFinite && boxes.objectness[i].isFinite
            && left.isFinite && right.isFinite && top.isFinite && bottom.isFinite
        for k in (i * boxes.classes)..<((i + 1) * boxes.classes) where !boxes.probs[k].isFinite { finite = false }
        if finite { continue }
        throw .numeric("the [yolo] layer \(head.layerIndex) decodes a box to x \(x), y \(y), width \(w), height \(h) (relative to the image): its raw values overflow, so the weights do not fit this network and there are no detections to report")
    }
}
