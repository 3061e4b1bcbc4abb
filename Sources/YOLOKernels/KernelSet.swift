// One kernel level as a value: its tile sizes and references to its functions (the packed GEMM,
// the Winograd transforms, the direct 3x3 convolution + pool), as ggml keeps a table of function
// pointers per CPU variant. Each per-ISA target (YOLOKernelsBaseline, YOLOKernelsAVX2, ...)
// exports one `KernelSet`, made by `KernelSet.make` from its own SIMD width and tag type, so every
// function in it is specialized in that target and compiled for that target's CPU. The engine
// registers the sets in one list and picks one at model load; nothing else switches on levels.
//
// Function types carry no argument labels in Swift: the labelled methods of the extensions below
// are how callers use them.

/// The CPU features a kernel set needs (x86: checked with CPUID/XGETBV by the engine).
public struct CPUFeatureSet: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// AVX2 + FMA (+ BMI1/2, LZCNT, MOVBE, F16C: what `-target-cpu haswell` may use), YMM state saved.
    public static let avx2 = CPUFeatureSet(rawValue: 1 << 0)
    /// AVX-512 F, CD, BW, DQ, VL (`-target-cpu skylake-avx512`), opmask and ZMM state saved.
    public static let avx512 = CPUFeatureSet(rawValue: 1 << 1)
    /// AVX-512 VNNI (vpdpbusd).
    public static let avx512VNNI = CPUFeatureSet(rawValue: 1 << 2)
    /// AVX-512 BF16 (vdpbf16ps).
    public static let avx512BF16 = CPUFeatureSet(rawValue: 1 << 3)
    /// AVX-VNNI (the VEX-encoded vpdpbusd of Alder Lake, Zen 5).
    public static let avxVNNI = CPUFeatureSet(rawValue: 1 << 4)
    /// ARMv8.2 dot product (sdot/udot).
    public static let dotProduct = CPUFeatureSet(rawValue: 1 << 5)
    /// ARMv8.2 half-precision arithmetic.
    public static let fp16 = CPUFeatureSet(rawValue: 1 << 6)
    /// AVX-512 FP16 (vfmadd231ph: 32 half-precision multiply-adds a zmm instruction; Sapphire Rapids
    /// and later Xeons).
    public static let avx512FP16 = CPUFeatureSet(rawValue: 1 << 7)
    /// AMX-TILE, AMX-INT8 and AMX-BF16 with the OS's tile state and, on Linux, the process's
    /// permission to use it (Sapphire Rapids and later Xeons).
    public static let amx = CPUFeatureSet(rawValue: 1 << 8)

    /// The features' names, for messages ("AVX2", "AMX", ...).
    public var names: [String] {
        let all: [(CPUFeatureSet, String)] = [(.avx2, "AVX2"), (.avx512, "AVX-512"), (.avx512VNNI, "AVX-512 VNNI"),
                                              (.avx512BF16, "AVX-512 BF16"), (.avxVNNI, "AVX-VNNI"), (.dotProduct, "dotprod"),
                                              (.fp16, "FP16 arithmetic"), (.avx512FP16, "AVX-512 FP16"), (.amx, "AMX")]
        return all.filter { contains($0.0) }.map { $0.1 }
    }
}

/// The packed GEMM of one level: C[m x n] = A[m x k] · B[k x n] (see PackedGemm.swift).
public struct GemmFunctions: Sendable {
    /// The level's name.
    public let level: String
    /// Rows and columns of the micro-kernel's register tile, SIMD width in floats.
    public let mr: Int, nr: Int, width: Int
    /// Cache blocking: at most kc steps of k and nc columns of B per packed block of B.
    public let kc: Int, nc: Int
    /// (m, k) -> floats of packed A.
    public let packedASize: @Sendable (Int, Int) -> Int
    /// (a, lda, m, k, packed)
    public let packA: @Sendable (UnsafePointer<Float>, Int, Int, Int, UnsafeMutablePointer<Float>) -> Void
    /// (m, n, k) -> floats of per-thread scratch.
    public let scratchSize: @Sendable (Int, Int, Int) -> Int
    /// (m, n, k, packedA, b, ldb, c, ldc, scratch, rows)
    public let gemm: @Sendable (Int, Int, Int, UnsafePointer<Float>, UnsafePointer<Float>, Int,
                                UnsafeMutablePointer<Float>, Int, UnsafeMutablePointer<Float>, Range<Int>) -> Void

    @usableFromInline
    init(level: String, mr: Int, nr: Int, width: Int, kc: Int, nc: Int, packedASize: @escaping @Sendable (Int, Int) -> Int,
         packA: @escaping @Sendable (UnsafePointer<Float>, Int, Int, Int, UnsafeMutablePointer<Float>) -> Void,
         scratchSize: @escaping @Sendable (Int, Int, Int) -> Int,
         gemm: @escaping @Sendable (Int, Int, Int, UnsafePointer<Float>, UnsafePointer<Float>, Int,
                                    UnsafeMutablePointer<Float>, Int, UnsafeMutablePointer<Float>, Range<Int>) -> Void) {
        (self.level, self.mr, self.nr, self.width, self.kc, self.nc) = (level, mr, nr, width, kc, nc)
        (self.packedASize, self.packA, self.scratchSize, self.gemm) = (packedASize, packA, scratchSize, gemm)
    }
}

/// The Winograd input and output transforms of one level for one tile size, with the contracts
/// of the scalar reference functions (`winogradInput`/`winogradOutput` for tile 2,
/// `winograd4Input`/`winograd4Output` for tile 4) and bit-identical results.
public struct WinogradFunctions: Sendable {
    /// (src, height, width, channelCount, channels, tileRows, tilesWide, v)
    public let input: @Sendable (UnsafePointer<Float>, Int, Int, Int, Range<Int>, Range<Int>, Int,
                                 UnsafeMutablePointer<Float>) -> Void
    /// (m, filterCount, filters, tileRows, tilesWide, outHeight, outWidth, dst)
    public let output: @Sendable (UnsafePointer<Float>, Int, Range<Int>, Range<Int>, Int, Int, Int,
                                  UnsafeMutablePointer<Float>) -> Void
    /// F(2x2) only: INT8 Winograd's quantized input transform as int16 pairs (WinogradPairsSIMD.swift).
    /// (src, height, width, channelCount, pairs, tileRows, tilesWide, quantization, words)
    public let inputPairs: (@Sendable (UnsafePointer<Float>, Int, Int, Int, Range<Int>, Range<Int>, Int, Int8Quantization,
                                       UnsafeMutablePointer<UInt32>) -> Void)?
    /// F(2x2) only: the output transform fused with the 2x2 stride-2 max pool (WinogradPooledSIMD.swift).
    /// (m, filterCount, filters, tiles, planeStride, dst)
    public let outputPooled: (@Sendable (UnsafePointer<Float>, Int, Range<Int>, Int, Int, UnsafeMutablePointer<Float>,
                                         PooledEpilogue?) -> Void)?

    @usableFromInline
    init(input: @escaping @Sendable (UnsafePointer<Float>, Int, Int, Int, Range<Int>, Range<Int>, Int,
                                     UnsafeMutablePointer<Float>) -> Void,
         output: @escaping @Sendable (UnsafePointer<Float>, Int, Range<Int>, Range<Int>, Int, Int, Int,
                                      UnsafeMutablePointer<Float>) -> Void,
         inputPairs: (@Sendable (UnsafePointer<Float>, Int, Int, Int, Range<Int>, Range<Int>, Int, Int8Quantization,
                                 UnsafeMutablePointer<UInt32>) -> Void)?,
         outputPooled: (@Sendable (UnsafePointer<Float>, Int, Range<Int>, Int, Int, UnsafeMutablePointer<Float>,
                                   PooledEpilogue?) -> Void)?) {
        (self.input, self.output, self.inputPairs, self.outputPooled) = (input, output, inputPairs, outputPooled)
    }
}

/// The direct 3x3 stride-1 pad-1 convolution + 2x2 stride-2 max pool (DirectConv.swift).
public struct DirectConvFunctions: Sendable {
    /// (filters, channels) -> floats of packed weights.
    public let packedSize: @Sendable (Int, Int) -> Int
    /// (w, filters, channels, packed)
    public let pack: @Sendable (UnsafePointer<Float>, Int, Int, UnsafeMutablePointer<Float>) -> Void
    /// (channels, width) -> floats of per-thread scratch.
    public let scratchSize: @Sendable (Int, Int) -> Int
    /// (src, height, width, channels, packed, filters, rows, dst, scratch, epilogue)
    public let pooledRows: @Sendable (UnsafePointer<Float>, Int, Int, Int, UnsafePointer<Float>, Int, Range<Int>,
                                      UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>, PooledEpilogue?) -> Void

    @usableFromInline
    init(packedSize: @escaping @Sendable (Int, Int) -> Int,
         pack: @escaping @Sendable (UnsafePointer<Float>, Int, Int, UnsafeMutablePointer<Float>) -> Void,
         scratchSize: @escaping @Sendable (Int, Int) -> Int,
         pooledRows: @escaping @Sendable (UnsafePointer<Float>, Int, Int, Int, UnsafePointer<Float>, Int, Range<Int>,
                                          UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>, PooledEpilogue?) -> Void) {
        (self.packedSize, self.pack, self.scratchSize, self.pooledRows) = (packedSize, pack, scratchSize, pooledRows)
    }
}

/// Everything one kernel level provides.
public struct KernelSet: Sendable {
    /// The level's name ("baseline", "avx2", "avx512", "neon"), as YOLO_KERNEL_LEVEL spells it.
    public let name: String
    /// What the CPU must have to run it.
    public let requires: CPUFeatureSet
    public let gemm: GemmFunctions
    /// Tiles 2 (F(2x2, 3x3)) and 4 (F(4x4, 3x3)).
    public let winograd2: WinogradFunctions
    public let winograd4: WinogradFunctions
    public let direct: DirectConvFunctions
    /// The INT8 convolution kernels, where the level has them (Int8KernelSet.swift).
    public private(set) var int8: Int8Functions?
    /// The 16-bit pair GEMM of INT8 Winograd (Int16Pairs.swift), where the level has one.
    public private(set) var int16Pairs: Int8Functions?
    /// The direct 3x3 conv + pool on int16 pairs (DirectConvPairs.swift), where the level has it.
    public private(set) var int16Direct: DirectPairFunctions?
    /// The BF16 GEMM, where the build has one for this level (BF16Gemm.swift); it may need more of
    /// the CPU than the rest of the set (`HalfKernels.requires`).
    public private(set) var bf16: HalfKernels?
    /// The FP16 GEMM (FP16Gemm.swift: FP16 products and sums, same wrapper), where the level has
    /// one; it may need more of the CPU than the rest of the set (FP16 arithmetic).
    public private(set) var fp16: HalfKernels?
    /// The level's FP32 GEMM on FP16-stored weights (FP16Weights.swift): every level has one.
    public let fp16Weights: HalfKernels?
    /// Bias + leaky or linear activation in the level's vectors (`biasActivateVectors`): (data,
    /// bias, channels, spatial, channelStride, activation) -> false for other activations.
    public let biasActivate: @Sendable (UnsafeMutablePointer<Float>, UnsafePointer<Float>, Range<Int>, Int, Int, Activation) -> Bool

    @usableFromInline
    init(name: String, requires: CPUFeatureSet, gemm: GemmFunctions, winograd2: WinogradFunctions,
         winograd4: WinogradFunctions, direct: DirectConvFunctions, fp16Weights: HalfKernels?,
         biasActivate: @escaping @Sendable (UnsafeMutablePointer<Float>, UnsafePointer<Float>, Range<Int>, Int, Int, Activation) -> Bool) {
        (self.name, self.requires, self.gemm, self.biasActivate) = (name, requires, gemm, biasActivate)
        (self.winograd2, self.winograd4, self.direct, self.fp16Weights) = (winograd2, winograd4, direct, fp16Weights)
    }

    /// What the set's kernels are, as text: the level and, per kind, its instruction and blocking
    /// (a plan measured with one set is not trusted with another: PlanCache).
    public var signature: String {
        func blocks(_ g: GemmFunctions) -> String { "\(g.mr)x\(g.nr)x\(g.width) kc \(g.kc) nc \(g.nc)" }
        func integers(_ f: Int8Functions?) -> String { f.map { "\($0.dot) \($0.mr)x\($0.nr)x\($0.lanes) kc \($0.kc) nc \($0.nc)" } ?? "none" }
        func half(_ h: HalfKernels?) -> String { h.map { "\($0.dot) \(blocks($0.gemm))" } ?? "none" }
        return "\(name): fp32 \(blocks(gemm)), int8 \(integers(int8)), pairs \(integers(int16Pairs)), direct pairs \(int16Direct?.dot ?? "none"), bf16 \(half(bf16)), "
            + "fp16 \(half(fp16)), fp16 weights \(half(fp16Weights))"
    }

    /// This set with `int8` as its INT8 kernels.
    public func adding(int8: Int8Functions) -> KernelSet {
        var set = self
        set.int8 = int8
        return set
    }

    /// This set with `int16Pairs` as its pair GEMM (made with a kc of at most
    /// `Int16Pairs.maxGroupsPerBlock`).
    public func adding(int16Pairs: Int8Functions) -> KernelSet {
        precondition(int16Pairs.kc <= Int16Pairs.maxGroupsPerBlock, "int16 pairs: kc over Int16Pairs.maxGroupsPerBlock")
        var set = self
        set.int16Pairs = int16Pairs
        return set
    }

    /// This set with `int16Direct` as its direct conv + pool on int16 pairs.
    public func adding(int16Direct: DirectPairFunctions) -> KernelSet {
        var set = self
        set.int16Direct = int16Direct
        return set
    }

    /// This set with `fp16` as its FP16 GEMM.
    public func adding(fp16: HalfKernels) -> KernelSet {
        var set = self
        set.fp16 = fp16
        return set
    }

    /// This set with `bf16` as its BF16 GEMM.
    public func adding(bf16: HalfKernels) -> KernelSet {
        var set = self
        set.bf16 = bf16
        return set
    }

    /// The kernel set of a level from its generic parts: `K` the GEMM micro-kernel, `W` the
    /// Winograd tag, `V`/`Tag` the direct convolution's vector and tag. @inlinable, so the
    /// calling target specializes every function for its own CPU.
    @inlinable
    public static func make<K: GemmMicroKernel, W: WinogradISA, V: SIMD & KernelMetatype, Tag: GemmISA>(
        name: String, requires: CPUFeatureSet, gemm _: K.Type, kc: Int, nc: Int, winograd _: W.Type,
        direct _: V.Type, _: Tag.Type) -> KernelSet where V.Scalar == Float {
        let gemm = GemmFunctions(
            level: name, mr: K.mr, nr: K.nr, width: K.Vector.scalarCount, kc: kc, nc: nc,
            packedASize: { PackedGemm<K>.packedASize(m: $0, k: $1) },
            packA: { PackedGemm<K>.packA($0, lda: $1, m: $2, k: $3, kc: kc, into: $4) },
            scratchSize: { PackedGemm<K>.scratchSize(m: $0, n: $1, k: $2, kc: kc, nc: nc) },
            gemm: { m, n, k, a, b, ldb, c, ldc, scratch, rows in
                PackedGemm<K>.gemm(m: m, n: n, k: k, packedA: a, b: b, ldb: ldb, c: c, ldc: ldc, scratch: scratch,
                                   kc: kc, nc: nc, rowStart: rows.lowerBound, rowEnd: rows.upperBound)
            })
        let w2 = WinogradFunctions(
            input: { WinogradSIMD<W>.input2($0, height: $1, width: $2, channelCount: $3, channels: $4, tileRows: $5,
                                            tilesWide: $6, into: $7) },
            output: { WinogradSIMD<W>.output2($0, filterCount: $1, filters: $2, tileRows: $3, tilesWide: $4,
                                              outHeight: $5, outWidth: $6, into: $7) },
            inputPairs: { WinogradSIMD<W>.input2Pairs($0, height: $1, width: $2, channelCount: $3, pairs: $4, tileRows: $5,
                                                      tilesWide: $6, quantization: $7, into: $8) },
            outputPooled: { WinogradSIMD<W>.output2Pooled($0, filterCount: $1, filters: $2, tiles: $3, planeStride: $4,
                                                          into: $5, epilogue: $6) })
        let w4 = WinogradFunctions(
            input: { WinogradSIMD<W>.input4($0, height: $1, width: $2, channelCount: $3, channels: $4, tileRows: $5,
                                            tilesWide: $6, into: $7) },
            output: { WinogradSIMD<W>.output4($0, filterCount: $1, filters: $2, tileRows: $3, tilesWide: $4,
                                              outHeight: $5, outWidth: $6, into: $7) },
            inputPairs: nil, outputPooled: nil)
        let direct = DirectConvFunctions(
            packedSize: { DirectConv3x3<V, Tag>.packedSize(filters: $0, channels: $1) },
            pack: { DirectConv3x3<V, Tag>.pack($0, filters: $1, channels: $2, into: $3) },
            scratchSize: { DirectConv3x3<V, Tag>.scratchSize(channels: $0, width: $1) },
            pooledRows: { DirectConv3x3<V, Tag>.pooledRows($0, height: $1, width: $2, channels: $3, packed: $4,
                                                           filters: $5, rows: $6, into: $7, scratch: $8, epilogue: $9) })
        #if os(macOS) && arch(x86_64)
        let fp16Weights: HalfKernels? = nil
        #else
        let fp16Weights: HalfKernels? = .makeFP16Weights(level: name + "-fp16-weights", requires: requires, K.self, kc: kc, nc: nc)
        #endif
        return KernelSet(name: name, requires: requires, gemm: gemm, winograd2: w2, winograd4: w4, direct: direct,
                         fp16Weights: fp16Weights, biasActivate: {
                             biasActivateVectors(V.self, Tag.self, $0, bias: $1, channels: $2, spatial: $3, channelStride: $4, activation: $5)
                         })
    }

    /// The transforms for `tile` (2 or 4).
    public func winograd(tile: Int) -> WinogradFunctions { tile == 4 ? winograd4 : winograd2 }
}

// MARK: Labelled calls

extension GemmFunctions {
    /// Packs A (m x k, row stride lda >= k) into `packed` (`packedASize(m:k:)` floats).
    @inline(__always)
    public func packA(_ a: UnsafePointer<Float>, lda: Int, m: Int, k: Int, into packed: UnsafeMutablePointer<Float>) {
        packA(a, lda, m, k, packed)
    }
    @inline(__always) public func packedASize(m: Int, k: Int) -> Int { packedASize(m, k) }
    @inline(__always) public func scratchSize(m: Int, n: Int, k: Int) -> Int { scratchSize(m, n, k) }

    /// C[m x n] (row stride ldc >= n) = A · B, A packed by `packA`, B k x n with row stride
    /// ldb >= n, `scratch` at least `scratchSize(m:n:k:)` floats. With `rows`, only those rows of
    /// C (the lower bound a multiple of `mr`): threads sharing one packed A split m this way, or
    /// split n by passing b + j0, c + j0 and a smaller n.
    @inline(__always)
    public func gemm(m: Int, n: Int, k: Int, packedA: UnsafePointer<Float>, b: UnsafePointer<Float>, ldb: Int,
                     c: UnsafeMutablePointer<Float>, ldc: Int, scratch: UnsafeMutablePointer<Float>,
                     rows: Range<Int>? = nil) {
        let rows = rows ?? 0..<m
        precondition(ldb >= n && ldc >= n, "gemm: ldb and ldc must be >= n")
        precondition(rows.lowerBound >= 0 && rows.upperBound <= m && rows.lowerBound % mr == 0,
                     "gemm: rows must lie in 0..<m and start at a multiple of mr")
        gemm(m, n, k, packedA, b, ldb, c, ldc, scratch, rows)
    }
}

extension WinogradFunctions {
    /// V[xi][c][t] for channels `channels` of channelCount, tile rows `tileRows`.
    @inline(__always)
    public func input(_ src: UnsafePointer<Float>, height: Int, width: Int, channelCount: Int, channels: Range<Int>,
                      tileRows: Range<Int>, tilesWide: Int, into v: UnsafeMutablePointer<Float>) {
        input(src, height, width, channelCount, channels, tileRows, tilesWide, v)
    }
    /// Output tiles from M[xi][f][t] for filters `filters` of filterCount.
    @inline(__always)
    public func output(_ m: UnsafePointer<Float>, filterCount: Int, filters: Range<Int>, tileRows: Range<Int>,
                       tilesWide: Int, outHeight: Int, outWidth: Int, into dst: UnsafeMutablePointer<Float>) {
        output(m, filterCount, filters, tileRows, tilesWide, outHeight, outWidth, dst)
    }
}

extension DirectConvFunctions {
    @inline(__always) public func packedSize(filters: Int, channels: Int) -> Int { packedSize(filters, channels) }
    @inline(__always)
    public func pack(_ w: UnsafePointer<Float>, filters: Int, channels: Int, into p: UnsafeMutablePointer<Float>) {
        pack(w, filters, channels, p)
    }
    @inline(__always) public func scratchSize(channels: Int, width: Int) -> Int { scratchSize(channels, width) }
    /// Raw sums (no bias; or with `epilogue`) of the conv + 2x2 stride-2 max pool for pooled rows
    /// `rows` (even height and width).
    @inline(__always)
    public func pooledRows(_ src: UnsafePointer<Float>, height: Int, width: Int, channels: Int, packed: UnsafePointer<Float>,
                           filters: Int, rows: Range<Int>, into dst: UnsafeMutablePointer<Float>,
                           scratch: UnsafeMutablePointer<Float>, epilogue: PooledEpilogue? = nil) {
        precondition(height % 2 == 0 && width % 2 == 0, "direct conv + pool: pooling needs even sizes")
        pooledRows(src, height, width, channels, packed, filters, rows, dst, scratch, epilogue)
    }
}
