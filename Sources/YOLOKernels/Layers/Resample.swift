/// Nearest-neighbour upsampling by an integer `stride`, times `scale` (Darknet's [upsample]).
public func upsampleNearest(_ src: UnsafePointer<Float>, height: Int, width: Int, stride s: Int, scale: Float,
                     channels: Range<Int>, into dst: UnsafeMutablePointer<Float>) {
    let outWidth = width * s
    for c in channels {
        let plane = src + c * height * width
        var out = dst + c * height * s * outWidth
        for y in 0..<height {
            let row = plane + y * width
            for x in 0..<width {
                let v = row[x] * scale
                for d in 0..<s { out[x * s + d] = v }
            }
            for r in 1..<s { (out + r * outWidth).update(from: out, count: outWidth) }
            out += s * outWidth
        }
    }
}

/// dst[i] = a[i] + b[i] over `range`.
public func add(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, range: Range<Int>, into dst: UnsafeMutablePointer<Float>) {
    for i in range { dst[i] = a[i] + b[i] }
}
