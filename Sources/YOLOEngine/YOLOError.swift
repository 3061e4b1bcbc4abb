import YOLOCore

/// Every problem the engine reports. The description names the file, the line or layer,
/// and what is wrong.
public enum YOLOError: Error, Equatable, CustomStringConvertible {
    /// A file could not be opened or read.
    case file(path: String, reason: String)
    /// A cfg problem at a line (1-based; 0 when it concerns the whole file).
    case cfg(file: String, line: Int, message: String)
    /// The weights file does not fit the cfg.
    case weights(file: String, message: String)
    /// A bad argument to the API (wrong input size, bad option, ...).
    case invalidArgument(String)
    /// The network computed NaN or infinity where results are read.
    case numeric(String)

    public var description: String {
        switch self {
        case let .file(path, reason): return "\(path): \(reason)"
        case let .cfg(file, line, message): return line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)"
        case let .weights(file, message): return "\(file): \(message)"
        case let .invalidArgument(message): return message
        case let .numeric(message): return message
        }
    }
}
