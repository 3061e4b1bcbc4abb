// Class colours for video (`videoClassColor`): as far apart as colours get, so that boxes of
// different classes (car and truck, person and bicycle) never look alike, and distinct for
// any class count.
import YOLOCore

/// A distinct colour for each class, for any number of classes. The first 256 classes get
/// colours picked one after the other, each the one farthest (CIELAB distance) from all picked
/// before it, among vivid colours (HSV hues in 4-degree steps, saturation 1, 0.75, 0.5, value
/// 1, 0.8, 0.6: no greys, nothing too dark to see): any two of the 80 COCO classes are at
/// least 18 CIELAB units apart, neighbours and car/truck much more. Beyond 256, hues step by
/// the golden ratio, with the index in the channels' low bits (distinct up to 4096 classes).
/// Deterministic; `classCount` is accepted for symmetry with `classColor`.
public func videoClassColor(_ classIndex: Int, classCount: Int = 80) -> RGBColor {
    let i = Int(classIndex.magnitude % (1 << 20))
    if i < distinctPalette.count { return distinctPalette[i] }
    var hue = Double(i) * 0.618033988749895
    hue -= hue.rounded(.down)
    let levels: [(s: Double, v: Double)] = [(0.85, 1.0), (1.0, 0.72), (0.55, 0.92)]
    let (s, v) = levels[(i / 7) % levels.count]
    let c = hsvColor(hue: hue, saturation: s, value: v)
    // The index's low 12 bits in the channels' low 4 bits: invisible, but distinct.
    let k = UInt8(truncatingIfNeeded: i), h = UInt8(truncatingIfNeeded: i >> 8)
    return RGBColor(red: c.red & 0xF0 | k & 15, green: c.green & 0xF0 | k >> 4, blue: c.blue & 0xF0 | h & 15)
}

/// The first 256 class colours, each the farthest from those before it (see `videoClassColor`).
let distinctPalette: [RGBColor] = {
    var candidates: [RGBColor] = []
    for hue in stride(from: 0, to: 360, by: 4) {
        for s in [1.0, 0.75, 0.5] {
            for v in [1.0, 0.8, 0.6] { candidates.append(hsvColor(hue: Double(hue) / 360, saturation: s, value: v)) }
        }
    }
    let lab = candidates.map(cieLab)
    var picked: [RGBColor] = [candidates[0]]  // pure red first
    var nearest = lab.map { labDistance($0, lab[0]) }
    while picked.count < 256 {
        var best = 0
        for j in nearest.indices where nearest[j] > nearest[best] { best = j }
        picked.append(candidates[best])
        for j in nearest.indices { nearest[j] = min(nearest[j], labDistance(lab[j], lab[best])) }
    }
    return picked
}()

/// HSV (each 0...1) to 8-bit RGB.
func hsvColor(hue: Double, saturation s: Double, value v: Double) -> RGBColor {
    let h6 = (hue - hue.rounded(.down)) * 6
    let sector = Int(h6.rounded(.down)) % 6
    let f = h6 - h6.rounded(.down)
    let p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f))
    let (r, g, b): (Double, Double, Double)
    switch sector {
    case 0: (r, g, b) = (v, t, p)
    case 1: (r, g, b) = (q, v, p)
    case 2: (r, g, b) = (p, v, t)
    case 3: (r, g, b) = (p, q, v)
    case 4: (r, g, b) = (t, p, v)
    default: (r, g, b) = (v, p, q)
    }
    func byte(_ x: Double) -> UInt8 { UInt8(min(max(x * 255 + 0.5, 0), 255)) }
    return RGBColor(red: byte(r), green: byte(g), blue: byte(b))
}

/// CIELAB (D65) of an sRGB colour.
func cieLab(_ c: RGBColor) -> (l: Double, a: Double, b: Double) {
    func linear(_ v: UInt8) -> Double {
        let x = Double(v) / 255
        return x <= 0.04045 ? x / 12.92 : pow((x + 0.055) / 1.055, 2.4)
    }
    let r = linear(c.red), g = linear(c.green), b = linear(c.blue)
    let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    let y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
    func f(_ t: Double) -> Double { t > 0.008856 ? cbrt(t) : 7.787 * t + 16.0 / 116 }
    return (116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z)))
}

/// The CIE76 colour difference (about 2.3 is just noticeable; 20 and more, clearly different colours).
func labDistance(_ p: (l: Double, a: Double, b: Double), _ q: (l: Double, a: Double, b: Double)) -> Double {
    ((p.l - q.l) * (p.l - q.l) + (p.a - q.a) * (p.a - q.a) + (p.b - q.b) * (p.b - q.b)).squareRoot()
}

func colorDistance(_ a: RGBColor, _ b: RGBColor) -> Double { labDistance(cieLab(a), cieLab(b)) }
