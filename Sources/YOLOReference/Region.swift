// Naive references of YOLOv2's [reorg] and [region], written out from their definitions one
// element at a time, in double: what the engine's ReorgLayer and region decoding are tested against.

/// One box of a [region] head before any threshold: centre and size relative to the network
/// input, objectness and each class's probability (objectness times the class score).
public struct NaiveRegionBox: Sendable {
    public var anchor: Int, row: Int, col: Int
    public var x, y, w, h, objectness: Double
    public var probs: [Double]
}

extension Naive {
    /// Darknet's [reorg] (pjreddie's reorg_cpu on the input's shape, forward=0), by its
    /// definition: for k < c, j < h, i < w with g = c / stride^2, q = k / g, the value at
    /// flat index i + w * (j + h * k) of the output is the input's value at flat index
    /// (i * stride + q % stride) + w * stride * ((j * stride + q / stride) + h * stride * (k % g)).
    /// The output's shape is c * stride^2 x h / stride x w / stride.
    public static func reorg(_ t: Tensor, stride: Int) -> Tensor {
        let (c, h, w) = (t.channels, t.height, t.width)
        let g = c / (stride * stride)
        var out = [Float](repeating: .nan, count: c * h * w)
        for k in 0..<c {
            for j in 0..<h {
                for i in 0..<w {
                    let q = k / g
                    let w2 = i * stride + q % stride, h2 = j * stride + q / stride
                    out[i + w * (j + h * k)] = t.values[w2 + w * stride * (h2 + h * stride * (k % g))]
                }
            }
        }
        return Tensor(channels: c * stride * stride, height: h / stride, width: w / stride, values: out)
    }

    /// Every box of a raw [region] head (one block of 5 + `classes` channels per anchor),
    /// anchor by anchor, cells row-major: x = (col + logistic(tx)) / width, w = exp(tw) *
    /// anchorWidth / width (anchors in grid cells), objectness = logistic(to), class scores by
    /// softmax (raw without it), each times the objectness.
    public static func regionBoxes(_ head: Tensor, classes: Int, anchors: [(width: Float, height: Float)],
                                   softmax: Bool, libm: Libm) -> [NaiveRegionBox] {
        let plane = head.width * head.height
        var boxes: [NaiveRegionBox] = []
        for (n, anchor) in anchors.enumerated() {
            for row in 0..<head.height {
                for col in 0..<head.width {
                    func entry(_ e: Int) -> Double { Double(head.values[(n * (classes + 5) + e) * plane + row * head.width + col]) }
                    let objectness = logistic(entry(4), libm: libm)
                    var scores = (0..<classes).map { entry(5 + $0) }
                    if softmax {
                        let top = scores.max() ?? 0
                        let e = scores.map { libm.exp($0 - top) }
                        let sum = e.reduce(0, +)
                        scores = e.map { $0 / sum }
                    }
                    boxes.append(NaiveRegionBox(
                        anchor: n, row: row, col: col,
                        x: (Double(col) + logistic(entry(0), libm: libm)) / Double(head.width),
                        y: (Double(row) + logistic(entry(1), libm: libm)) / Double(head.height),
                        w: libm.exp(entry(2)) * Double(anchor.width) / Double(head.width),
                        h: libm.exp(entry(3)) * Double(anchor.height) / Double(head.height),
                        objectness: objectness, probs: scores.map { $0 * objectness }))
                }
            }
        }
        return boxes
    }
}
