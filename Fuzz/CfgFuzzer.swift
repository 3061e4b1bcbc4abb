// libFuzzer harness: the Darknet cfg parser and the network build (and, when the cfg has no
// weighted layers, one forward pass). Input: cfg text. Built and run by scripts/fuzz.sh.
import YOLO

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCfg(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data, size <= 16_384 else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let config = try? DarknetConfig(text: text, file: "fuzz.cfg") else { return 0 }
    // Skip cfgs whose buffers would be huge: memory caps on the network are checked elsewhere
    // (and a multi-GB allocation would only measure the machine, not find bugs).
    guard memoryBound(config) <= Double(1 << 24) else { return 0 }
    // No weights: a cfg with convolutions is built up to the weights check; one without is
    // built completely and run.
    if let network = try? Network(cfgText: text, weights: [], cfgName: "fuzz.cfg", threads: 1) {
        for i in 0..<network.input.count { network.input[i] = Float(i % 7) / 7 }
        network.forward()
    }
    return 0
}

/// An upper bound, in floats, on the activations and scratch the network would allocate
/// (generous: every padding and every route taken at its largest).
func memoryBound(_ config: DarknetConfig) -> Double {
    guard let net = config.sections.first else { return 0 }
    func value(_ section: DarknetConfig.Section, _ key: String, _ def: Int) -> Double {
        Double((try? section.int(key, default: def)) ?? def).magnitude
    }
    var c = value(net, "channels", 3), h = value(net, "height", 0), w = value(net, "width", 0)
    var total = c * h * w, maxC = c, maxH = h, maxW = w
    for section in config.sections.dropFirst() {
        switch section.name {
        case "convolutional", "conv":
            let size = value(section, "size", 1), pad = value(section, "padding", 0) + size
            let filters = value(section, "filters", 1)
            let oh = h + 2 * pad + 1, ow = w + 2 * pad + 1
            total += c * size * size * oh * ow * 2 + 16 * filters * c  // im2col or Winograd scratch
            c = filters; h = oh; w = ow
        case "maxpool", "max":
            let size = value(section, "size", 1), pad = value(section, "padding", 0) + size
            h += pad + 1; w += pad + 1
        case "upsample":
            let stride = max(value(section, "stride", 2), 1)
            h *= stride; w *= stride
        case "route":
            let count = Double((try? section.intList("layers"))??.count ?? 1)
            c = count * maxC; h = maxH; w = maxW
        case "yolo", "region":
            if !section.has("mask") { total += value(section, "num", 1) }
        default:
            break
        }
        total += c * h * w
        maxC = max(maxC, c); maxH = max(maxH, h); maxW = max(maxW, w)
    }
    return total
}
