/// Unfolds channels `channels` of a CHW image into rows of the column matrix of a convolution
/// with zero padding: row (c * k + ky) * k + kx holds, for every output pixel, the input tap
/// (ky, kx) of channel c. The matrix has c*k*k rows of outH*outW floats.
func im2col(_ src: UnsafePointer<Float>, height: Int, width: Int, kernel k: Int, stride: Int, pad: Int,
            outHeight: Int, outWidth: Int, channels: Range<Int>, into dst: UnsafeMutablePointer<Float>) {
    let rowLength = outHeight * outWidth
    for c in channels {
        let plane = src + c * height * width
        for ky in 0..<k {
            for kx in 0..<k {
                var out = dst + ((c * k + ky) * k + kx) * rowLength
                // Output columns whose tap lies inside the input: ox in [first, last).
                let first = min(outWidth, max(0, (pad - kx + stride - 1) / stride))
                let last = max(first, min(outWidth, (width + pad - kx + stride - 1) / stride))
                for oy in 0..<outHeight {
                    let iy = oy * stride + ky - pad
                    if iy < 0 || iy >= height {
                        out.initialize(repeating: 0, count: outWidth)
                    } else {
                        out.initialize(repeating: 0, count: first)
                        let inRow = plane + iy * width + kx - pad
                        if stride == 1 {
                            (out + first).update(from: inRow + first, count: last - first)
                        } else {
                            for ox in first..<last { out[ox] = inRow[ox * stride] }
                        }
                        (out + last).initialize(repeating: 0, count: outWidth - last)
                    }
                    out += outWidth
                }
            }
        }
    }
}
