// The boxes NMS has kept so far, found by where they lie: a later box is checked only against
// kept boxes it intersects, since a box it does not intersect has IoU 0 (and DIoU <= 0), which
// exceeds no threshold in 0...1. The result is Darknet's quadratic loop's (docs/architecture.md,
// "NMS"); the cost falls from candidates x kept to candidates x neighbours.

/// Kept boxes in a uniform grid over the candidates' extent; a box spanning many cells is kept
/// in a list every query reads instead.
struct KeptBoxes {
    private var minX: Float = 0, minY: Float = 0
    private var scaleX: Float = 0, scaleY: Float = 0
    private var side = 1
    private var cells: [[Int32]] = []
    private var wide: [Int32] = []
    private var all: [Int32] = []
    /// Boxes covering more cells than this go to `wide` (and such queries read `all`).
    private var wideCells = 16

    /// Candidates below this count are checked against every kept box: a grid costs more.
    static let gridFrom = 64

    /// Empties the index for the candidates `members` (the grid spans their extent).
    mutating func reset(members: ArraySlice<Int>, box: (Int) -> CenterBox) {
        all.removeAll(keepingCapacity: true)
        wide.removeAll(keepingCapacity: true)
        var lx = Float.infinity, ly = Float.infinity, hx = -Float.infinity, hy = -Float.infinity
        for i in members {
            let b = box(i)
            lx = min(lx, b.x - b.w / 2); hx = max(hx, b.x + b.w / 2)
            ly = min(ly, b.y - b.h / 2); hy = max(hy, b.y + b.h / 2)
        }
        // About four candidates a cell, at most 64 x 64 cells.
        side = members.count < Self.gridFrom ? 1 : max(1, min(64, Int(Float(members.count / 4).squareRoot())))
        let spanX = hx - lx, spanY = hy - ly
        guard side > 1, spanX.isFinite, spanY.isFinite, spanX > 0, spanY > 0 else { side = 1; return }
        minX = lx; minY = ly
        scaleX = Float(side) / spanX; scaleY = Float(side) / spanY
        wideCells = max(4, side * side / 16)
        if cells.count < side * side { cells = [[Int32]](repeating: [], count: side * side) }
        for i in 0..<(side * side) { cells[i].removeAll(keepingCapacity: true) }
    }

    /// The cells a box covers, as ranges of columns and rows: monotone in the box's edges, so two
    /// boxes that share an area share a cell.
    @inline(__always)
    private func span(_ b: CenterBox) -> (ClosedRange<Int>, ClosedRange<Int>) {
        func cell(_ v: Float, _ low: Float, _ scale: Float) -> Int {
            let c = ((v - low) * scale).rounded(.down)
            return c < 0 ? 0 : (c >= Float(side) ? side - 1 : Int(c))
        }
        let x0 = cell(b.x - b.w / 2, minX, scaleX), x1 = cell(b.x + b.w / 2, minX, scaleX)
        let y0 = cell(b.y - b.h / 2, minY, scaleY), y1 = cell(b.y + b.h / 2, minY, scaleY)
        return (x0...x1, y0...y1)
    }

    mutating func insert(_ index: Int, _ b: CenterBox) {
        all.append(Int32(index))
        guard side > 1 else { return }
        let (xs, ys) = span(b)
        if xs.count * ys.count > wideCells { wide.append(Int32(index)); return }
        for row in ys { for col in xs { cells[row * side + col].append(Int32(index)) } }
    }

    /// Whether a kept box suppresses `b` (each kept box `a` is given to `suppresses(a)`).
    @inline(__always)
    func anySuppresses(_ b: CenterBox, _ suppresses: (Int) -> Bool) -> Bool {
        guard side > 1 else { return all.contains { suppresses(Int($0)) } }
        let (xs, ys) = span(b)
        if xs.count * ys.count > wideCells { return all.contains { suppresses(Int($0)) } }
        if wide.contains(where: { suppresses(Int($0)) }) { return true }
        for row in ys {
            for col in xs where cells[row * side + col].contains(where: { suppresses(Int($0)) }) { return true }
        }
        return false
    }
}
