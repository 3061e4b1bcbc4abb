"""The peer runtimes behind one small interface, plus model/input helpers.

Each runner: `name`, `version`, `settings` (what it was configured as),
`set_input(x)` with x (3, H, W) float32, `prepare()` (before a batch of forwards),
`forward()` (one inference on that input),
`heads()` -> [head0 (255, 13, 13), head1 (255, 26, 26)] as float32 arrays.
"""

from pathlib import Path

import numpy as np

PEERS = Path(__file__).resolve().parent
ROOT = PEERS.parent.parent
MODELS = PEERS / "models"
CFG = ROOT / "weights" / "yolov3-tiny.cfg"
WEIGHTS = ROOT / "weights" / "yolov3-tiny.weights"


def _stale(targets, sources):
    if not all(t.exists() for t in targets):
        return True
    newest = max(s.stat().st_mtime for s in sources)
    return any(t.stat().st_mtime < newest for t in targets)


def ensure_models(cfg=CFG, weights=WEIGHTS):
    """Converts cfg + weights to ONNX and ncnn under models/ when missing or out of date."""
    import darknet
    import darknet2ncnn
    import darknet2onnx

    cfg, weights = Path(cfg), Path(weights)
    MODELS.mkdir(exist_ok=True)
    stem = MODELS / cfg.stem
    onnx_path = stem.with_suffix(".onnx")
    ncnn_param, ncnn_bin = stem.with_suffix(".param"), stem.with_suffix(".bin")
    sources = [cfg, weights, PEERS / "darknet.py", PEERS / "darknet2onnx.py", PEERS / "darknet2ncnn.py"]
    if _stale([onnx_path, ncnn_param, ncnn_bin], sources):
        import onnx

        model = darknet.load(cfg, weights)
        onnx.save(darknet2onnx.convert(model), onnx_path)
        param, blob, _ = darknet2ncnn.convert(model)
        ncnn_param.write_text(param)
        ncnn_bin.write_bytes(blob)
    return {"cfg": cfg, "weights": weights, "onnx": onnx_path,
            "ncnn_param": ncnn_param, "ncnn_bin": ncnn_bin}


def head_names(cfg=CFG):
    """Darknet names of the layers feeding the [yolo] layers (the same names the converters use)."""
    import darknet

    sections = darknet.parse_cfg(cfg)[1:]
    return [f"conv{i - 1}" for i, (kind, _) in enumerate(sections) if kind == "yolo"]


def default_input(size=416):
    """A deterministic input: a sample photo letterboxed as Darknet does if the repo has one, else seeded noise."""
    import photos

    for name in ("horse.png", "astronaut.png", "chelsea.png"):
        path = ROOT / "samples" / name
        if path.exists():
            return photos.load(path, size, size)[0], f"samples/{name} letterboxed"
    rng = np.random.default_rng(0)
    return rng.random((3, size, size), dtype=np.float32), "uniform noise [0,1), seed 0"


def load_tensor(path, shape=(3, 416, 416)):
    x = np.fromfile(path, dtype="<f4")
    if x.size != np.prod(shape):
        raise ValueError(f"{path}: {x.size} floats, expected {np.prod(shape)} for {shape}")
    return x.reshape(shape)


class Skip(Exception):
    """A runtime this machine or build cannot run; the message says why (compare.py skips it)."""


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


class Runner:
    def prepare(self):
        pass


class OnnxRuntime(Runner):
    name = "onnxruntime"

    def model_path(self, models):
        return models["onnx"]

    def __init__(self, models, threads):
        import onnxruntime as ort

        self.version = ort.__version__
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        path = self.model_path(models)
        self.session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        self.outputs = [o.name for o in self.session.get_outputs()]
        self.settings = (f"{Path(path).name}, {'+'.join(self.session.get_providers())}, intra_op={threads}, "
                         f"inter_op=1, sequential, ORT_ENABLE_ALL")

    def set_input(self, x):
        self.feed = {"data": np.ascontiguousarray(x[None])}

    def forward(self):
        return self.session.run(self.outputs, self.feed)

    def heads(self):
        return [o[0] for o in self.forward()]


class OpenVINO(Runner):
    name = "openvino"
    precision = "f32"  # INFERENCE_PRECISION_HINT; None leaves the plugin's default

    def model_path(self, models):
        return models["onnx"]

    def __init__(self, models, threads):
        import openvino as ov

        self.version = ov.get_version()
        core = ov.Core()
        default_precision = core.get_property("CPU", "INFERENCE_PRECISION_HINT").to_string()
        self.check(core)
        config = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"}
        if self.precision:
            config["INFERENCE_PRECISION_HINT"] = self.precision
        path = self.model_path(models)
        self.compiled = core.compile_model(str(path), "CPU", config)
        used = self.compiled.get_property("INFERENCE_PRECISION_HINT").to_string()
        streams = self.compiled.get_property("NUM_STREAMS")
        nthreads = self.compiled.get_property("INFERENCE_NUM_THREADS")
        self.settings = (f"{Path(path).name}, CPU plugin, precision hint {used} "
                         f"({'set' if self.precision else 'unset'}; plugin default {default_precision}), "
                         f"threads={nthreads}, streams={streams}, LATENCY hint; "
                         f"convolutions compiled to {openvino_conv_precisions(self.compiled)}")
        self.request = self.compiled.create_infer_request()

    def check(self, core):
        pass

    def set_input(self, x):
        import openvino as ov

        self._x = np.ascontiguousarray(x[None])
        self.request.set_input_tensor(ov.Tensor(self._x))

    def forward(self):
        self.request.infer()

    def heads(self):
        self.forward()
        return [self.request.get_output_tensor(i).data[0].copy()
                for i in range(len(self.compiled.outputs))]


class OpenCV(Runner):
    name = "opencv"

    def __init__(self, models, threads):
        import cv2

        self.cv2 = cv2
        self.version = cv2.__version__
        self.threads = threads
        self.net = cv2.dnn.readNetFromDarknet(str(models["cfg"]), str(models["weights"]))
        self.net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
        self.net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
        # The yolo layers' own outputs are decoded boxes; their inputs (the last convs) are the
        # raw heads. OpenCV names Darknet layer i "conv_i".
        names = self.net.getLayerNames()
        self.outputs = []
        for yolo in self.net.getUnconnectedOutLayersNames():
            index = int(yolo.rsplit("_", 1)[1]) - 1
            conv = f"conv_{index}"
            if conv not in names:
                raise RuntimeError(f"OpenCV net has no {conv} before {yolo}")
            self.outputs.append(conv)
        self.settings = f"readNetFromDarknet, DNN_BACKEND_OPENCV/DNN_TARGET_CPU, setNumThreads({threads}), outputs {'+'.join(self.outputs)}"

    def set_input(self, x):
        self.net.setInput(np.ascontiguousarray(x[None]))

    def prepare(self):
        # setNumThreads is process-wide, so claim it before every batch.
        self.cv2.setNumThreads(self.threads)

    def forward(self):
        return self.net.forward(self.outputs)

    def heads(self):
        self.prepare()
        return [o[0].copy() for o in self.forward()]


class Ncnn(Runner):
    name = "ncnn"

    def __init__(self, models, threads):
        import ncnn

        self.ncnn = ncnn
        self.version = ncnn.__version__
        self.net = ncnn.Net()
        opt = self.net.opt
        opt.num_threads = threads
        opt.use_vulkan_compute = False
        # ncnn stores weights/activations as fp16 on x86 by default; keep it all f32.
        opt.use_fp16_storage = opt.use_fp16_packed = opt.use_fp16_arithmetic = False
        opt.use_bf16_storage = False
        opt.use_int8_inference = False
        if self.net.load_param(str(models["ncnn_param"])) or self.net.load_model(str(models["ncnn_bin"])):
            raise RuntimeError("ncnn failed to load the converted model")
        self.outputs = head_names(models["cfg"])
        self.settings = (f"own .param/.bin, num_threads={threads}, fp32 (fp16/bf16 storage off), "
                         f"winograd={int(opt.use_winograd_convolution)} sgemm={int(opt.use_sgemm_convolution)} "
                         f"packing={int(opt.use_packing_layout)}")

    def set_input(self, x):
        self._x = np.ascontiguousarray(x)
        self.mat = self.ncnn.Mat(self._x)

    def forward(self):
        ex = self.net.create_extractor()
        ex.input("data", self.mat)
        return [ex.extract(name)[1] for name in self.outputs]

    def heads(self):
        return [np.array(m).copy() for m in self.forward()]


def openvino_conv_precisions(compiled):
    """What the CPU plugin compiled the convolutions to, e.g. "13 x u8 (brgconv_avx512_I8, ...)"
    (from the runtime model: each node's layerType, runtimePrecision and primitiveType)."""
    kinds = {}
    for op in compiled.get_runtime_model().get_ops():
        info = {k: info.astype(str) for k, info in op.get_rt_info().items()
                if k in ("layerType", "runtimePrecision", "primitiveType")}
        if info.get("layerType") == "Convolution":
            count, prims = kinds.get(info["runtimePrecision"], (0, set()))
            kinds[info["runtimePrecision"]] = (count + 1, prims | {info["primitiveType"]})
    return "; ".join(f"{n} x {p} ({', '.join(sorted(prims))})" for p, (n, prims) in kinds.items()) or "none found"


def onnxruntime_convs(path, threads=1):
    """The convolutions of the graph ONNX Runtime's CPU EP actually runs (ORT_ENABLE_ALL, saved
    and read back): [(op_type, name)], e.g. ("QLinearConv", "conv0_token_63") for an int8 kernel,
    ("Conv", "conv14") for a float one."""
    import tempfile

    import onnx
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as tmp:
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.log_severity_level = 3  # its warning that such a saved graph is machine-specific
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.optimized_model_filepath = str(Path(tmp) / "optimized.onnx")
        ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        return [(n.op_type, n.name) for n in onnx.load(so.optimized_model_filepath).graph.node if "Conv" in n.op_type]


class OnnxRuntimeInt8(OnnxRuntime):
    name = "onnxruntime-int8"

    def model_path(self, models):
        import quantize

        return quantize.onnxruntime_int8(models)

    def __init__(self, models, threads):
        super().__init__(models, threads)
        convs = onnxruntime_convs(self.model_path(models), threads)
        int8 = [name for op, name in convs if op.startswith("QLinear") or "Integer" in op]
        fp = [name for op, name in convs if not (op.startswith("QLinear") or "Integer" in op)]
        self.settings += (f"; static QDQ int8 (per-channel, MinMax); the CPU EP runs {len(int8)} of "
                          f"{len(convs)} convolutions as int8 (QLinearConv)")
        if fp:
            self.settings += f", {len(fp)} in float over dequantized weights ({', '.join(fp)})"


class OpenVINOInt8(OpenVINO):
    name = "openvino-int8"
    precision = None  # as NNCF's model runs by default: quantized ops in int8, the rest at the plugin default

    def model_path(self, models):
        import quantize

        return quantize.openvino_int8(models)


class OpenVINOHalf(OpenVINO):
    """OpenVINO with a 16-bit INFERENCE_PRECISION_HINT, skipped on a CPU without native arithmetic for it."""
    needs = ()       # /proc/cpuinfo flags, any of which gives the arithmetic
    capability = ""  # OpenVINO's OPTIMIZATION_CAPABILITIES entry

    def check(self, core):
        flags = cpu_flags() & set(self.needs)
        caps = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
        if not flags or self.capability not in caps:
            raise Skip(f"needs a CPU with {' or '.join(n.upper() for n in self.needs)} (/proc/cpuinfo has "
                       f"{sorted(flags) or 'neither'}; OpenVINO's CPU capabilities: {', '.join(caps)}): without them a "
                       f"{self.precision} figure is not native {self.capability} arithmetic")


class OpenVINOBF16(OpenVINOHalf):
    name = "openvino-bf16"
    precision = "bf16"
    needs = ("avx512_bf16", "amx_bf16")
    capability = "BF16"


class OpenVINOFP16(OpenVINOHalf):
    name = "openvino-fp16"
    precision = "f16"
    needs = ("avx512_fp16", "amx_fp16")
    capability = "FP16"


PEER_RUNNERS = {r.name: r for r in (OnnxRuntime, OpenVINO, OpenCV, Ncnn, OpenVINOInt8, OnnxRuntimeInt8, OpenVINOBF16,
                                    OpenVINOFP16)}
# The FP32 peers: the default set of compare.py and check_converters.py (low precision by name).
FP32_PEERS = ("onnxruntime", "openvino", "opencv", "ncnn")


def max_abs_diff(a_heads, b_heads):
    return max(float(np.max(np.abs(a.reshape(-1) - b.reshape(-1)))) for a, b in zip(a_heads, b_heads))

