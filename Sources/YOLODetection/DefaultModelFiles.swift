/// `DefaultModelFiles`: where the command-line tools (`yolo`, `yolo-bench`) find the cfg,
/// weights and class names when none are given: the directory `$YOLO_WEIGHTS`, else `weights/`.

import YOLOCore

/// The default model files' paths: yolov3-tiny and the COCO class names in `directory`.
public enum DefaultModelFiles {
    /// `$YOLO_WEIGHTS` (without a final slash) when it is set and not empty, else `weights`
    /// (relative to the current directory).
    public static var directory: String {
        guard let value = getenv("YOLO_WEIGHTS"), value.pointee != 0 else { return "weights" }
        let dir = String(cString: value)
        return dir.count > 1 && dir.hasSuffix("/") ? String(dir.dropLast()) : dir
    }

    /// The default cfg: `directory`/yolov3-tiny.cfg.
    public static var cfg: String { directory + "/yolov3-tiny.cfg" }
    /// The default weights: `directory`/yolov3-tiny.weights.
    public static var weights: String { directory + "/yolov3-tiny.weights" }
    /// The default class names: `directory`/coco.names.
    public static var names: String { directory + "/coco.names" }

    /// The tools' usage line about it, also given when a default file is missing.
    public static let hint = "The default cfg, weights and names are read from $YOLO_WEIGHTS (a directory), else weights/."
}
