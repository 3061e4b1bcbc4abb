// libFuzzer harness: the Darknet cfg parser and the network build (and, when the cfg has no
// weighted layers, one forward pass). Input: cfg text. Built and run by scripts/fuzz.sh.
import YOLO

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCfg(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data, size <= 16_384 else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    // The model's own activation cap keeps multi-GB cfgs out (a huge allocation would only
    // measure the machine); what it refuses, it refuses before allocating.
    // No weights: a cfg with convolutions is built up to the weights check; one without is
    // built completely and run.
    let options = ModelOptions(maxActivationBytes: 64 << 20)
    if let network = try? Network(cfgText: text, weights: [], cfgName: "fuzz.cfg", threads: 1, options: options) {
        for i in 0..<network.input.count { network.input[i] = Float(i % 7) / 7 }
        network.forward()
    }
    return 0
}
