// `yolo stream`'s options: the usage text, parsing and validation (usage errors, exit 64), and the
// rule that no output may replace a file the run reads.
import Foundation
import YOLO
import YOLOText
import YOLOImage

/// The options of one `yolo stream` run (`DetectionOptions` plus source and outputs).
struct StreamOptions {
    static let usage = """
    Usage:   yolo stream [options] --input SOURCE | --raw WIDTHxHEIGHT
    Example: yolo stream --input clip.mp4 > detections.jsonl
             yolo stream --input clip.mp4 --output annotated.mp4 --smooth 3
             yolo stream --input /dev/video0 --classes person --output - | ffplay -f rawvideo -pixel_format rgb24 -video_size 640x480 -
             ffmpeg -i clip.mp4 -f rawvideo -pix_fmt rgb24 - | yolo stream --raw 640x360 --fps 30

    Detects objects in every frame of a video with YOLOv3-tiny: one JSON line per frame, in
    frame order. Frames are read and decoded by ffmpeg (a subprocess), detected by several
    detectors sharing one model, and drawn and encoded, all at once.

    Input:
      --input SOURCE   anything ffmpeg opens: a file, a device (/dev/video0), a URL (rtsp://...)
      --raw WxH        raw rgb24 frames on stdin (as 'ffmpeg ... -f rawvideo -pix_fmt rgb24 -' writes)
      --fps F          frame rate of --raw input (frame times are index / F), 0.001 to 1000,
                       default 25
      --scale WxH      have ffmpeg scale the frames to WxH first (--input only)
      --live           a live source: drop stale frames (newest wins) instead of falling behind;
                       default for devices and URLs; files and stdin are processed frame by frame
    Detection (as for 'yolo detect'):
    \(DetectionOptions.help(threads: "threads per detector, default 1 (the least memory: --threads 1 --sessions 1\n                   --conv im2col)"))
      --sessions N     detectors working at once (all sharing one model), default the number of
                       cores divided by --threads (\(MachineCores.available) cores here)
      --smooth N       average each tracked box over its last N frames, default 1 (none)
    Output:
      --output PATH    annotated video, encoded by ffmpeg (format from the extension); written
                       to a temporary name and renamed into place at the end (a FIFO or
                       device is written directly)
      --output -       annotated raw rgb24 frames on stdout (JSON then goes to stderr)
      --json FILE      JSON lines to FILE instead of stdout
      --no-stats       no statistics on stderr (default: once a second, and a summary at the end)
      -h, --help       show this help

    No output (--output, --json) may replace a file the run reads (the input video, stdin when
    it is a file, the cfg, weights or names; also through symbolic or hard links), nor may two
    outputs share a file: such a run is refused before anything is written. Special files
    (/dev/null, /dev/stdout, a FIFO) are fine.

    JSON, one line per frame: {"frame", "time" (s, index / fps), "skipped": [indices of frames
    dropped before this one (live only)], "width", "height", "inference_ms", "latency_ms" (frame
    read to result), "timing_ms": {"decode", "preprocess", "inference", "postprocess"},
    "detections": [as 'yolo detect --json', plus "track": the object's track id]}. Each box is
    drawn once with its track id and every class it was reported as ("#3 car 61%, truck 30%").
    Exit status: 0 at the end of the input, on SIGINT, SIGTERM or SIGHUP (after the frames in
    flight, with the video closed and renamed; a second signal aborts, removing the partial
    video) or when the reader of stdout goes away; 1 when ffmpeg is missing or fails, the input
    cannot be opened or is damaged (cut short, corrupt: the frames before are still processed),
    or a frame fails; 64 usage error.
    """

    var input: String?
    var raw: (width: Int, height: Int)?
    var fps: Double?
    var scale: (width: Int, height: Int)?
    var live: Bool
    /// What is shared with `yolo detect`: model files, network, threads, what is reported.
    var detection: DetectionOptions
    var sessions: Int
    var threadsPerSession: Int
    var smooth: Int
    var output: String?
    var json: String?
    var stats: Bool
    var help: Bool

    /// An annotated video file is written (by ffmpeg).
    var encodesVideo: Bool { output != nil && output != "-" }

    init(_ args: [String]) throws {
        let a = try Arguments(args, options: DetectionOptions.optionNames.union(["input", "raw", "fps", "scale", "sessions",
                                                                                 "smooth", "output", "json"]),
                              flags: DetectionOptions.flagNames.union(["live", "no-stats", "help"]), short: ["h": "help"])
        help = a.has("help")
        guard a.positionals.isEmpty else { throw UsageError("stream takes no positional arguments (use --input SOURCE)") }
        input = a.string("input")
        let rawText = a.string("raw")
        if !help && (input == nil) == (rawText == nil) {
            throw UsageError("stream needs one of --input SOURCE or --raw WIDTHxHEIGHT")
        }
        if let input, input.isEmpty { throw UsageError("--input needs a source") }
        raw = try a.size("raw", example: "640x480")
        if a.string("scale") != nil && input == nil {
            throw UsageError("--scale needs --input (scale raw frames with ffmpeg before the pipe)")
        }
        scale = try a.size("scale", example: "640x360")
        // (--scale goes to ffmpeg, which refuses sizes it cannot make; the decoded size is checked.)
        if let raw, let problem = Self.frameSizeProblem(raw) { throw UsageError("--raw \(a.string("raw")!): \(problem)") }
        if let f = a.string("fps") {
            // (Frame times are index / fps: a rate outside this range makes them meaningless.)
            guard let v = Double(f), (0.001...1000).contains(v) else {
                throw UsageError("--fps \(f): expected a frame rate from 0.001 to 1000 (frames per second)")
            }
            fps = v
        }
        detection = try DetectionOptions(a)
        threadsPerSession = detection.threads ?? 1
        sessions = try a.int("sessions", default: max(1, MachineCores.available / threadsPerSession),
                             range: 1...256)
        smooth = try a.int("smooth", default: 1, range: 1...1000)
        output = a.string("output")
        if let output, output.isEmpty { throw UsageError("--output needs a file name (or - for stdout)") }
        json = a.string("json")
        if let json, json.isEmpty || json == "-" && output == "-" {
            throw UsageError("--json needs a file name (stdout carries the frames with --output -)")
        }
        if json == "-" { json = nil }
        live = a.has("live") || input.map(Self.isLiveSource) ?? false
        stats = !a.has("no-stats")
    }

    /// Refuses (usage error, before anything is written) an output that is, or resolves to, a
    /// file the run reads, and two outputs that would write one file.
    func checkOutputs() throws {
        var inputs = InputFiles()
        for path in detection.modelFiles + (input.map { [$0] } ?? ["/dev/stdin"]) { inputs.add(path) }
        if encodesVideo, let output { try inputs.checkOutput(output, option: "the annotated video") }
        if let json { try inputs.checkOutput(json, option: "the JSON lines") }
        if encodesVideo, let output, let json, Self.sameFile(output, json) {
            throw UsageError("\(json): both the annotated video and the JSON lines would go there", hint: false)
        }
    }

    /// Two paths of one regular file (or of one file still to be made); special files, such as
    /// /dev/null, take any number of writers.
    static func sameFile(_ a: String, _ b: String) -> Bool {
        let ia = FileIdentity(path: a), ib = FileIdentity(path: b)
        if let ia, let ib { return ia == ib && ia.isRegularFile }
        if ia != nil || ib != nil { return false }
        return URL(fileURLWithPath: a).standardizedFileURL.path == URL(fileURLWithPath: b).standardizedFileURL.path
    }

    /// Why frames of this size are refused (nil: they are not): over `defaultMaxPixels` (2^27,
    /// as for images), each frame in flight would take gigabytes.
    static func frameSizeProblem(_ size: (width: Int, height: Int)) -> String? {
        size.width * size.height <= defaultMaxPixels ? nil
            : "frames of \(size.width)x\(size.height) are over \(defaultMaxPixels) pixels (2^27), refused"
    }

    /// Devices and network URLs are live; files and pipes are not.
    static func isLiveSource(_ input: String) -> Bool {
        if input.hasPrefix("/dev/") && input != "/dev/stdin" { return true }
        let schemes = ["rtsp", "rtsps", "rtmp", "rtmps", "rtp", "udp", "tcp", "srt", "http", "https", "mms", "v4l2"]
        if let colon = input.firstIndex(of: ":"), schemes.contains(input[..<colon].lowercased()) { return true }
        return false
    }
}
