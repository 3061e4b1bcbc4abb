import YOLOCore

/// A `Model` and one `Session` of it, for the simple case of one network run by one caller.
/// The session keeps every layer's output, so any layer can be inspected after a forward.
/// To run several frames at once, share `model` between several `Session`s instead.
public final class Network: Sendable {
    /// The model (shareable with other sessions).
    public let model: Model
    /// The one session, keeping every layer's output.
    public let session: Session

    /// Builds the network from files.
    public convenience init(cfgPath: String, weightsPath: String, threads: Int? = nil,
                            options: ModelOptions = ModelOptions()) throws(YOLOError) {
        try self.init(model: Model(cfgPath: cfgPath, weightsPath: weightsPath, options: options), threads: threads)
    }

    /// Builds the network from a cfg's text and a weights file's bytes.
    public convenience init(cfgText: String, weights: [UInt8], cfgName: String = "<cfg>",
                            weightsName: String = "<weights>", threads: Int? = nil,
                            options: ModelOptions = ModelOptions()) throws(YOLOError) {
        try self.init(model: Model(cfgText: cfgText, weights: weights, cfgName: cfgName, weightsName: weightsName,
                                   options: options), threads: threads)
    }

    /// A network over a (possibly shared) model.
    public init(model: Model, threads: Int? = nil) throws(YOLOError) {
        self.model = model
        session = try Session(model: model, threads: threads, keepsAllOutputs: true)
    }

    /// The network's input width in pixels.
    public var inputWidth: Int { model.inputWidth }
    /// The network's input height in pixels.
    public var inputHeight: Int { model.inputHeight }
    /// The network's input channels (3 for RGB).
    public var inputChannels: Int { model.inputChannels }
    /// A summary of each layer, in cfg order.
    public var layers: [LayerInfo] { model.layers }
    /// Floating-point operations of one forward pass.
    public var flops: Int { model.flops }
    /// The session's threads (the calling thread included).
    public var threads: Int { session.threads }
    /// The input buffer (CHW floats): fill it and call `forward()`.
    public var input: UnsafeMutableBufferPointer<Float> { session.input }

    /// Runs a forward pass on what `input` holds.
    public func forward() { session.forward() }
    /// Copies `data` (CHW floats, the input's size) into the input and runs a forward pass.
    public func forward(_ data: UnsafeBufferPointer<Float>) throws(YOLOError) { try session.forward(data) }
    /// Copies `data` (CHW floats, the input's size) into the input and runs a forward pass.
    public func forward(_ data: [Float]) throws(YOLOError) { try session.forward(data) }
    /// The detection heads after the last forward.
    public var heads: [HeadView] { session.heads }
    /// The output of layer `index` after the last forward.
    public func output(ofLayer index: Int) -> UnsafeBufferPointer<Float> {
        // Every output is kept, so only an out-of-range index can fail.
        do { return try session.output(ofLayer: index) } catch { preconditionFailure("Network.output(ofLayer:): \(error)") }
    }
}
