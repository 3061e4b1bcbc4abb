/// Darknet's max pool: window `size`, `stride`, total padding `pad` of which pad/2 lies
/// before the input (so with the default pad = size-1 and size 2 all of it lies after).
/// Taps outside the input are skipped, never read as zero.
public func maxPool(_ src: UnsafePointer<Float>, height: Int, width: Int, size: Int, stride: Int, pad: Int,
             outHeight: Int, outWidth: Int, channels: Range<Int>, into dst: UnsafeMutablePointer<Float>) {
    let offset = -(pad / 2)
    if size == 2 && stride == 2 && offset == 0 && outHeight * 2 <= height && outWidth * 2 <= width {
        maxPool2x2(src, height: height, width: width, outHeight: outHeight, outWidth: outWidth,
                   channels: channels, into: dst)
        return
    }
    if size == 2 && stride == 1 && offset == 0 && outHeight == height && outWidth == width {
        maxPool2x2Stride1(src, height: height, width: width, channels: channels, into: dst)
        return
    }
    if size > 2 {
        maxPoolSeparable(src, height: height, width: width, size: size, stride: stride, offset: offset,
                         outHeight: outHeight, outWidth: outWidth, channels: channels, into: dst)
        return
    }
    for c in channels {
        let plane = src + c * height * width
        var out = dst + c * outHeight * outWidth
        for oy in 0..<outHeight {
            let y0 = oy * stride + offset
            let ys = max(0, y0)..<min(height, y0 + size)
            for ox in 0..<outWidth {
                let x0 = ox * stride + offset
                let xs = max(0, x0)..<min(width, x0 + size)
                var m = -Float.greatestFiniteMagnitude
                for y in ys { for x in xs { m = max(m, plane[y * width + x]) } }
                out[ox] = m
            }
            out += outWidth
        }
    }
}

/// A window of any size as two passes: each input row's maximum over the window's columns, then
/// the maximum of those over the window's rows: 2 k comparisons an output instead of k² (the SPP
/// block's 5, 9 and 13 wide pools in yolov4 and its kin). Taps outside the input are skipped, as
/// in the direct loop above, and the result is the same value: `max` keeps the later of two equal
/// values, and the later row's later tap is also the later in the direct loop's order.
func maxPoolSeparable(_ src: UnsafePointer<Float>, height: Int, width: Int, size: Int, stride: Int, offset: Int,
                      outHeight: Int, outWidth: Int, channels: Range<Int>, into dst: UnsafeMutablePointer<Float>) {
    withUnsafeTemporaryAllocation(of: Float.self, capacity: max(1, height * outWidth)) { rowMaxima in
        let h = rowMaxima.baseAddress!
        for c in channels {
            let plane = src + c * height * width
            for y in 0..<height {
                let row = plane + y * width, hy = h + y * outWidth
                for ox in 0..<outWidth {
                    let x0 = ox * stride + offset, lo = max(0, x0), hi = min(width, x0 + size)
                    var m = -Float.greatestFiniteMagnitude
                    if lo < hi { for x in lo..<hi { m = max(m, row[x]) } }
                    hy[ox] = m
                }
            }
            let out = dst + c * outHeight * outWidth
            for oy in 0..<outHeight {
                let y0 = oy * stride + offset, lo = max(0, y0), hi = min(height, y0 + size)
                let o = out + oy * outWidth
                o.update(repeating: -Float.greatestFiniteMagnitude, count: outWidth)
                if lo < hi {
                    for y in lo..<hi {
                        let hy = h + y * outWidth
                        for ox in 0..<outWidth { o[ox] = max(o[ox], hy[ox]) }
                    }
                }
            }
        }
    }
}

/// The common 2x2 stride-2 case where every tap is inside the input.
public func maxPool2x2(_ src: UnsafePointer<Float>, height: Int, width: Int, outHeight: Int, outWidth: Int,
                channels: Range<Int>, into dst: UnsafeMutablePointer<Float>) {
    for c in channels {
        let plane = src + c * height * width
        var out = dst + c * outHeight * outWidth
        for oy in 0..<outHeight {
            let r0 = plane + 2 * oy * width, r1 = r0 + width
            for ox in 0..<outWidth {
                out[ox] = max(max(r0[2 * ox], r0[2 * ox + 1]), max(r1[2 * ox], r1[2 * ox + 1]))
            }
            out += outWidth
        }
    }
}

/// 2x2 stride 1 with Darknet's padding of one row and column after the input: the output
/// keeps the input's size and the last row and column see only the taps that exist.
public func maxPool2x2Stride1(_ src: UnsafePointer<Float>, height: Int, width: Int, channels: Range<Int>,
                       into dst: UnsafeMutablePointer<Float>) {
    for c in channels {
        let plane = src + c * height * width
        let out = dst + c * height * width
        for y in 0..<height {
            let r0 = plane + y * width, r1 = plane + min(y + 1, height - 1) * width
            let o = out + y * width
            for x in 0..<(width - 1) { o[x] = max(max(r0[x], r0[x + 1]), max(r1[x], r1[x + 1])) }
            o[width - 1] = max(r0[width - 1], r1[width - 1])
        }
    }
}
