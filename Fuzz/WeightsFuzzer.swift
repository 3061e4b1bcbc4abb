// libFuzzer harness: the weights loader, the network build and one forward pass. Input: one
// byte choosing one of three small cfgs (and fit mode, threads), then the weights file's bytes.
import YOLO

let fuzzCfgs = [
    // conv with batch norm + max pool + 1x1 conv + yolo (1 class, 3 anchors)
    """
    [net]
    width=16
    height=16
    channels=3
    [convolutional]
    batch_normalize=1
    filters=4
    size=3
    stride=1
    pad=1
    activation=leaky
    [maxpool]
    size=2
    stride=2
    [convolutional]
    size=1
    stride=1
    pad=1
    filters=18
    activation=linear
    [yolo]
    mask=0,1,2
    anchors=2,3, 4,5, 6,7
    classes=1
    num=3
    """,
    // Winograd-sized conv (32 input channels), shortcut, max pool, upsample, route
    """
    [net]
    width=6
    height=6
    channels=32
    [convolutional]
    filters=4
    size=3
    stride=1
    pad=1
    activation=relu
    [convolutional]
    filters=4
    size=3
    stride=1
    pad=1
    activation=leaky
    [shortcut]
    from=-2
    activation=linear
    [maxpool]
    size=2
    stride=1
    [upsample]
    stride=2
    [route]
    layers=-1
    [convolutional]
    filters=6
    size=1
    activation=logistic
    [yolo]
    mask=0
    anchors=1,1
    classes=1
    num=1
    """,
    // strided convs, odd sizes
    """
    [net]
    width=13
    height=11
    channels=1
    [convolutional]
    batch_normalize=1
    filters=3
    size=5
    stride=2
    pad=1
    activation=leaky
    [convolutional]
    filters=2
    size=3
    stride=2
    padding=2
    activation=linear
    """,
]

/// The float count of each cfg's parameters (biases, batch-norm scales, means, variances, weights).
let fuzzParameterCounts = [214, 1334, 143]

/// First byte: bits 0-1 choose the cfg (0-2, 3 = 0), bit 6 "fit" mode, bit 7 two threads. The rest
/// is the weights file. In fit mode it is cut or zero-padded to the size the cfg needs (per its
/// header's version), so that mutations reach the folding and the forward pass instead of the
/// size check.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWeights(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data, size >= 1 else { return 0 }
    let choice = Int(data[0] & 3) % fuzzCfgs.count
    var weights = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    if data[0] & 0x40 != 0, weights.count >= 8 {
        func int32(_ at: Int) -> Int32 {
            Int32(bitPattern: UInt32(weights[at]) | UInt32(weights[at + 1]) << 8 | UInt32(weights[at + 2]) << 16
                  | UInt32(weights[at + 3]) << 24)
        }
        let major = Int(int32(0)), minor = Int(int32(4))
        let header = major * 10 + minor >= 2 ? 20 : 16
        let expected = header + 4 * fuzzParameterCounts[choice]
        if weights.count > expected { weights.removeSubrange(expected...) }
        weights += [UInt8](repeating: 0, count: expected - weights.count)
    }
    let threads = data[0] & 0x80 != 0 ? 2 : 1
    guard let network = try? Network(cfgText: fuzzCfgs[choice], weights: weights, cfgName: "fuzz.cfg", threads: threads)
    else { return 0 }
    for i in 0..<network.input.count { network.input[i] = Float(i % 11) / 11 }
    network.forward()
    return 0
}
