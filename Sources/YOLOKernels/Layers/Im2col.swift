/// Writes rows `rows` of the column matrix of a convolution with zero padding, for the output
/// pixels of output rows `outRows`. Row (c * k + ky) * k + kx holds, for each of those pixels,
/// the input tap (ky, kx) of channel c; the matrix has c*k*k rows of outRows.count*outW floats.
/// Rows are independent, so threads split them.
public func im2col(_ src: UnsafePointer<Float>, height: Int, width: Int, kernel k: Int, stride: Int, pad: Int,
            outWidth: Int, outRows: Range<Int>, rows: Range<Int>, into dst: UnsafeMutablePointer<Float>) {
    im2col(src, height: height, width: width, kernel: k, stride: stride, pad: pad, outWidth: outWidth, outRows: outRows,
           rows: rows, padding: 0, into: dst)
}

/// `im2col` of any element type, `padding` standing for the taps outside the input (the INT8
/// convolutions' grouped u8 planes: the zero point in each byte).
@inlinable
public func im2col<T>(_ src: UnsafePointer<T>, height: Int, width: Int, kernel k: Int, stride: Int, pad: Int,
                      outWidth: Int, outRows: Range<Int>, rows: Range<Int>, padding: T, into dst: UnsafeMutablePointer<T>) {
    let rowLength = outRows.count * outWidth
    for row in rows {
        let c = row / (k * k), ky = row / k % k, kx = row % k
        let plane = src + c * height * width
        var out = dst + row * rowLength
        // Output columns whose tap lies inside the input: ox in [first, last).
        let first = min(outWidth, max(0, (pad - kx + stride - 1) / stride))
        let last = max(first, min(outWidth, (width + pad - kx + stride - 1) / stride))
        for oy in outRows {
            let iy = oy * stride + ky - pad
            if iy < 0 || iy >= height {
                out.update(repeating: padding, count: outWidth)
            } else {
                // Hot loop: a row copy for stride 1, padding only at the borders.
                out.update(repeating: padding, count: first)
                let inRow = plane + iy * width + kx - pad
                if stride == 1 {
                    (out + first).update(from: inRow + first, count: last - first)
                } else {
                    for ox in first..<last { out[ox] = inRow[ox * stride] }
                }
                (out + last).update(repeating: padding, count: outWidth - last)
            }
            out += outWidth
        }
    }
}
