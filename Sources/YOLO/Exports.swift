// The library's front door: `import YOLO` brings the engine (Model, Session, ModelOptions, the
// plan), detection (Detector, decoding, NMS) and the shared types (Detection, PixelFormat,
// FileLimits) of the modules below, which can also be imported one by one.
@_exported import YOLOCore
@_exported import YOLOEngine
@_exported import YOLODetection
