// What the planner works with besides the layers, made once per model load: the kernel set and
// who computes the GEMMs, what those kernels can compute (KernelCapabilities), the quantization
// of each INT8 input from the calibration table, and the GEMM scratch a thread needs.
import YOLOCore
import YOLOKernels

struct PlanContext {
    let kernelSet: KernelSet
    /// Whether OpenBLAS computes the FP32 GEMMs; `gemm` is our kernels' GEMM, nil with OpenBLAS.
    let usesOpenBLAS: Bool
    let gemm: GemmFunctions?
    let kernels: KernelCapabilities
    /// The quantization of each convolution's input that may run in INT8 (precision .int8, a
    /// level with INT8 kernels, and a calibrated range), by layer.
    let int8Inputs: [Int: Int8Quantization]
    /// The 10-bit quantization of the inputs the calibration table marks `a10`.
    let tenBitInputs: [Int: Int8Quantization]
    /// The 12-bit quantization of the (1x1 layers') inputs the calibration table marks `a12`.
    let twelveBitInputs: [Int: Int8Quantization]
    /// The calibration table's rounding of INT8 weights (GPTQ), by layer, where the layer may run in INT8.
    let int8Rounding: [Int: Int8Rounding]
    /// Floats of GEMM scratch one thread of a session needs.
    let gemmScratchPerThread: Int

    /// The context of `layers` under `options`: the kernel set they ask for, the calibration
    /// table checked against the cfg (`fingerprint`) and the weights, the 16-bit GEMM where the
    /// precision has one. Notes what falls back to FP32 in `warnings`.
    init(options: ModelOptions, layers: [any Layer], fingerprint: String, cfg: String, weights: WeightsReader.Origin,
         weightsName: String, warnings: inout [String]) throws(YOLOError) {
        let (kernelSet, openBLAS) = try Gemm.kernels(for: options)
        (self.kernelSet, usesOpenBLAS, gemm) = (kernelSet, openBLAS, openBLAS ? nil : kernelSet.gemm)
        (int8Inputs, tenBitInputs, twelveBitInputs) = try PlanContext.int8Inputs(options, layers: layers, fingerprint: fingerprint, cfg: cfg,
                                                                kernels: kernelSet.int8, warnings: &warnings)
        if options.precision == .int8 { try options.calibration?.check(weights: weights, name: weightsName) }
        let inputs = int8Inputs
        int8Rounding = options.precision == .int8 ? (options.calibration?.rounding ?? [:]).filter { inputs[$0.key] != nil } : [:]
        let int8Scratch = int8Inputs.isEmpty ? 0 : [kernelSet.int8, kernelSet.int16Pairs].map {
            $0.map { ($0.scratchSize(m: 1, n: 1 << 30, k: 1 << 30) + 3) / 4 } ?? 0
        }.max()!
        let features = HostCPU.features.union(options.assumesFP16Arithmetic ? .fp16 : [])
        kernels = try KernelCapabilities.make(kernelSet: kernelSet, openBLAS: openBLAS, options: options, features: features)
        gemmScratchPerThread = max(Gemm.scratchPerThread(gemm), int8Scratch, kernels.halves.values.map { Gemm.scratchPerThread($0.gemm) }.max() ?? 0)
    }

    /// With precision .int8: the quantization of each convolution input the calibration table
    /// covers (checked against the cfg), when the kernel set has INT8 kernels (else a warning: all
    /// FP32). Whichever library computes the FP32 GEMMs (ours or OpenBLAS).
    static func int8Inputs(_ options: ModelOptions, layers: [any Layer], fingerprint: String, cfg: String,
                           kernels: Int8Functions?, warnings: inout [String])
        throws(YOLOError) -> (eightBit: [Int: Int8Quantization], tenBit: [Int: Int8Quantization], twelveBit: [Int: Int8Quantization]) {
        guard options.precision == .int8 else { return ([:], [:], [:]) }
        guard let table = options.calibration else {
            throw .invalidArgument("precision int8 needs a calibration table (ModelOptions.calibration; make one with 'yolo calibrate')")
        }
        try table.check(fingerprint: fingerprint, convolutions: Set(layers.compactMap { $0.convolution?.index }), cfg: cfg)
        guard kernels != nil else {
            warnings.append("precision int8: the kernel level has no INT8 kernels: every convolution runs in FP32")
            return ([:], [:], [:])
        }
        var (inputs, tenBit, twelveBit): ([Int: Int8Quantization], [Int: Int8Quantization], [Int: Int8Quantization]) = ([:], [:], [:])
        for l in layers {
            guard let c = l.convolution else { continue }
            inputs[c.index] = table.quantization(ofLayer: c.index)
            tenBit[c.index] = table.tenBitQuantization(ofLayer: c.index)
            twelveBit[c.index] = table.twelveBitQuantization(ofLayer: c.index)
            if twelveBit[c.index] != nil && !c.isPointwise {
                throw .invalidArgument("\(table.source): layer \(c.index) is marked a12, but only 1x1 stride-1 convolutions take 12-bit inputs")
            }
        }
        return (inputs, tenBit, twelveBit)
    }

    /// Bits of layer `index`'s INT8 input: 12 or 10 where the table marks it `a12` or `a10`, else 8.
    func inputBits(_ index: Int) -> Int {
        twelveBitInputs[index] != nil ? 12 : tenBitInputs[index] != nil ? 10 : 8
    }
}
