/// `DefaultModelFiles`: where the command-line tools (`yolo`, `yolo-bench`) find the cfg,
/// weights and class names when none are given: the directory `$YOLO_WEIGHTS`, else `weights/`.

import YOLOCore

public enum DefaultModelFiles {
    /// `$YOLO_WEIGHTS` (without a final slash) when it is set and not empty, else `weights`
    /// (relative to the current directory).
    public static var directory: String {
        guard let value = getenv("YOLO_WEIGHTS"), value.pointee != 0 else { return "weights" }
        let dir = String(cString: value)
        return dir.count > 1 && dir.hasSuffix("/") ? String(dir.dropLast()) : dir
    }

    public static var cfg: String { directory + "/yolov3-tiny.cfg" }
    public static var weights: String { directory + "/yolov3-tiny.weights" }
    public static var names: String { directory + "/coco.names" }

    /// The tools' usage line about it, also given when a default file is missing.
    public static let hint = "The default cfg, weights and names are read from $YOLO_WEIGHTS (a directory), else weights/."
}
