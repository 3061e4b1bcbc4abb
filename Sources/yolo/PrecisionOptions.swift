// `--precision fp32|int8|bf16|fp16`, `--int8-table FILE` and `--int8-fallback auto|fp16|bf16|fp32`, the same
// for every command that loads a model (detect, stream, tune, heads): one function to call after
// parsing.
import Foundation
import YOLO

/// The option names, for each command's parser.
let precisionOptionNames: Set<String> = ["precision", "int8-table", "int8-fallback"]

/// The help lines of the precision options.
let precisionUsage = """
  --precision P    convolution arithmetic: fp32 (default, the reference), int8 (8-bit
                   weights and inputs where the calibration table covers a layer and the
                   planner finds it worth it; FP32 elsewhere, or FP16 where the CPU
                   computes in FP16 and the planner takes it), bf16 (bfloat16 products,
                   FP32 sums, in the GEMMs of im2col, 1x1 and Winograd layers; CPUs with
                   AVX-512 BF16 only: Zen 4 and later, Cooper Lake, Sapphire Rapids) or
                   fp16 (half-precision weights in the same GEMMs, half their memory; on
                   64-bit ARM CPUs with FP16 arithmetic, Cortex-A55, A76 / Raspberry Pi 5 and
                   later, and x86 CPUs with AVX-512 FP16, Sapphire Rapids and later Xeons,
                   half-precision products and sums over blocks of 128, FP32 across them;
                   elsewhere FP32 arithmetic)
  --int8-table F   the INT8 calibration table (yolo calibrate); default: the weights' path
                   with .int8 for its extension (weights/yolov3-tiny.int8 ships with the repository)
  --int8-fallback P  with --precision int8, the arithmetic of the layers not in INT8: auto
                   (default: FP16 where the CPU computes in FP16, with AMX tiles in BF16 for
                   the 1x1 layers; else BF16 where it has AVX-512 BF16, where the plan takes
                   them; else FP32), fp16 or bf16 (that
                   one; an error where the CPU lacks it) or fp32 (FP32 always: the same bits
                   on every CPU for those layers)
"""

/// Sets `options.precision`, `options.calibration` and `options.int8Fallback` from `--precision`,
/// `--int8-table` and `--int8-fallback` (the table is read here, so a bad one is reported before
/// the model loads; without `--int8-table`, the model looks next to the weights).
func applyPrecisionOptions(_ a: Arguments, to options: inout ModelOptions) throws {
    if let p = a.string("precision") {
        guard let precision = Precision(rawValue: p.lowercased()) else {
            let names = Precision.allCases.map(\.rawValue)
            throw UsageError("--precision \(p): expected \(names.dropLast().joined(separator: ", ")) or \(names.last!)")
        }
        options.precision = precision
    }
    if let fallback = a.string("int8-fallback") {
        guard options.precision == .int8 else { throw UsageError("--int8-fallback is for --precision int8") }
        guard let value = Int8Fallback(rawValue: fallback.lowercased()) else {
            throw UsageError("--int8-fallback \(fallback): expected auto, fp16, bf16 or fp32")
        }
        options.int8Fallback = value
    }
    if let table = a.string("int8-table") {
        guard options.precision == .int8 else { throw UsageError("--int8-table is for --precision int8") }
        options.calibration = try Int8Calibration(path: table)
    }
}
