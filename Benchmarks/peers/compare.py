#!/usr/bin/env python3
"""Time our engine against onnxruntime, OpenVINO, OpenCV DNN and ncnn on one input, in FP32
and in the peers' low-precision modes (openvino-int8, onnxruntime-int8, openvino-bf16).

Rounds are interleaved: in round r each runtime in turn (order rotated by r) runs
--per-round forwards. A batch is disturbed when, meanwhile, processes outside this one and
the engine's tree used more than --max-other of a core (from /proc/stat and
/proc/<pid>/stat); it is re-run up to --retries times, then the round is dropped for that
runtime. Our engine runs as a subprocess
(`--engine CMD --threads N --input PATH [--precision P] [--engine-args]`) speaking the protocol in
mock_engine.py; `ours-int8` (`ours-bf16`, `ours-fp16`) starts it with `--precision int8` (...), and
is skipped, saying why, when the engine refuses that. A peer this machine cannot run (openvino-bf16
without AVX512_BF16 or AMX) is skipped the same way.
"""

import argparse
import json
import os
import platform
import queue
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import darknet
import runtimes

HZ = os.sysconf("SC_CLK_TCK")
OURS = "ours"
# Our engine in a low precision: `ours-P` starts it with `--precision P`.
OURS_PRECISIONS = ("int8", "bf16", "fp16")
OURS_NAMES = (OURS, *(f"{OURS}-{p}" for p in OURS_PRECISIONS))


class Engine:
    """Our engine behind the line protocol."""

    def __init__(self, name, cmd, threads, input_path, model_args, timeout):
        self.name = name
        self.timeout = timeout
        precision = name[len(OURS) + 1:]
        argv = shlex.split(cmd) + ["--threads", str(threads), "--input", str(input_path)] + model_args
        if precision:
            argv += ["--precision", precision]
        self.proc = subprocess.Popen(argv, cwd=runtimes.ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.lines = queue.Queue()
        self.errors = []  # the engine's stderr lines, also passed on to ours
        threading.Thread(target=self._pump, daemon=True).start()
        self.error_pump = threading.Thread(target=self._pump_errors, daemon=True)
        self.error_pump.start()
        try:
            while (line := self._read()) != "ready":
                print(f"[{name}] {line}", file=sys.stderr)
        except EngineExited as e:
            if not precision:
                sys.exit(str(e))
            raise runtimes.Skip(f"the engine did not start with --precision {precision} ({e}): "
                                f"build one that has it (the int8 work) or leave {name} out") from None
        self.version = f"engine {argv[0]}"
        self.settings = " ".join(argv)

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _pump_errors(self):
        for line in self.proc.stderr:
            self.errors.append(line.rstrip("\n"))
            print(f"[{self.name} stderr] {line}", end="", file=sys.stderr)

    def _read(self):
        try:
            line = self.lines.get(timeout=self.timeout)
        except queue.Empty:
            self.close()
            sys.exit(f"{self.name}: engine sent nothing for {self.timeout}s")
        if line is None:
            status = self.proc.wait()
            self.error_pump.join(timeout=5)  # its last stderr lines
            said = next((e for e in reversed(self.errors) if not e.startswith("Run '")), "")
            raise EngineExited(f"engine exited with status {status}" + (f": {said}" if said else ""))
        return line

    def _ask(self, command, prefix):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        line = self._read()
        if not line.startswith(prefix):
            sys.exit(f"engine answered {line!r} to {command!r}")
        return line

    def batch(self, k):
        return [float(t) for t in self._ask(f"run {k}", "ms").split()[1:]]

    def heads(self, shapes):
        with tempfile.TemporaryDirectory() as tmp:
            self._ask(f"heads {tmp}", "ok")
            return [runtimes.load_tensor(Path(tmp) / f"head{i}.f32", s) for i, s in enumerate(shapes)]

    def pids(self):
        return [self.proc.pid] + _descendants(self.proc.pid)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


class EngineExited(Exception):
    pass


def check_engine(cmd):
    exe = shlex.split(cmd)[0]
    if "/" in exe and not (runtimes.ROOT / exe).exists():
        sys.exit(f"engine not found: {exe} (build it with `swift build -c release --product "
                 f"yolo-bench`, pass --engine, or leave '{OURS}' out of --runtimes)")


class Peer:
    """A runtimes.* runner timed from here, one perf_counter span per forward."""

    def __init__(self, runner):
        self.runner = runner
        self.name, self.version, self.settings = runner.name, runner.version, runner.settings

    def batch(self, k):
        self.runner.prepare()
        times = []
        for _ in range(k):
            t0 = time.perf_counter()
            self.runner.forward()
            times.append((time.perf_counter() - t0) * 1e3)
        return times

    def heads(self, shapes):
        return [h.reshape(s) for h, s in zip(self.runner.heads(), shapes)]

    def pids(self):
        return []

    def close(self):
        pass


def _descendants(pid):
    children = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                ppid = int(_stat_fields(entry.name)[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def _stat_fields(pid):
    """Fields of /proc/PID/stat after the command name: [state, ppid, ...]."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def _machine_busy():
    with open("/proc/stat") as f:
        user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in f.readline().split()[1:9])
    return user + nice + system + irq + softirq + steal


def _own_ticks(pids):
    total = 0
    for pid in pids:
        try:
            fields = _stat_fields(pid)
            total += int(fields[11]) + int(fields[12])  # utime + stime
        except (OSError, IndexError):
            pass
    return total


def timed_batch(rt, k, own_pids):
    """Runs k forwards; returns (ms per forward, ticks and cores used by everything else meanwhile)."""
    busy0, own0, t0 = _machine_busy(), _own_ticks(own_pids), time.monotonic()
    times = rt.batch(k)
    own1, busy1, t1 = _own_ticks(own_pids), _machine_busy(), time.monotonic()
    other = max(0, (busy1 - busy0) - (own1 - own0))
    return times, other, other / HZ / max(t1 - t0, 1e-6)


def start(name, threads, args, input_path, x, models):
    """The runtime `name` set up for `threads` threads; runtimes.Skip when it cannot run here."""
    if name in OURS_NAMES:
        model_args = shlex.split(args.engine_args)
        if args.cfg:
            model_args += ["--cfg", str(models["cfg"])]
        if args.weights:
            model_args += ["--weights", str(models["weights"])]
        return Engine(name, args.engine, threads, input_path, model_args, args.engine_timeout)
    rt = Peer(runtimes.PEER_RUNNERS[name](models, threads))
    rt.runner.set_input(x)
    return rt


def bench(threads, names, args, input_path, x, models):
    rts, skipped = [], {}
    try:
        for name in names:
            try:
                rts.append(start(name, threads, args, input_path, x, models))
            except runtimes.Skip as e:
                skipped[name] = str(e)
                print(f"skipped {name}: {e}", file=sys.stderr)
        if not rts:
            sys.exit("every runtime was skipped")
        # What a batch may use: the engine's process tree for ours; this process for a peer, which
        # runs in it. The rest is "other": the engine while a peer runs, and while ours runs the
        # peers' worker threads, which live in this process and may still spin.
        own_pids = {rt.name: rt.pids() or [os.getpid()] for rt in rts}

        layers = darknet.load(models["cfg"], models["weights"])
        shapes = [layers.layers[i].shape for i in layers.heads]
        heads = {rt.name: rt.heads(shapes) for rt in rts}
        ref = OURS if OURS in heads else rts[0].name

        for rt in rts:
            if args.warmup:
                rt.batch(args.warmup)
        rounds = {rt.name: [] for rt in rts}
        for r in range(args.rounds):
            shift = r % len(rts)
            for rt in rts[shift:] + rts[:shift]:
                for attempt in range(1, args.retries + 2):
                    # The pause lets the previous runtime's spinning workers park.
                    time.sleep(args.gap if attempt == 1 else args.retry_pause)
                    times, ticks, cores = timed_batch(rt, args.per_round, own_pids[rt.name])
                    # One tick is within the sampling noise between /proc/stat and per-process times.
                    disturbed = ticks > 1 and cores > args.max_other
                    if not disturbed:
                        break
                rounds[rt.name].append({"ms": times, "other_cores": round(cores, 4),
                                        "attempts": attempt, "dropped": disturbed})
    finally:
        for rt in rts:
            rt.close()

    results = {}
    for rt in rts:
        kept = [t for rd in rounds[rt.name] if not rd["dropped"] for t in rd["ms"]]
        all_dropped = not kept
        if all_dropped:
            kept = [t for rd in rounds[rt.name] for t in rd["ms"]]
        results[rt.name] = {
            "version": rt.version, "settings": rt.settings,
            "min_ms": min(kept), "median_ms": statistics.median(kept), "max_ms": max(kept),
            "forwards": len(kept), "dropped_rounds": sum(rd["dropped"] for rd in rounds[rt.name]),
            "retries": sum(rd["attempts"] - 1 for rd in rounds[rt.name]),
            "all_rounds_dropped": all_dropped,
            "median_other_cores": statistics.median(rd["other_cores"] for rd in rounds[rt.name]),
            "max_abs_diff": None if rt.name == ref else runtimes.max_abs_diff(heads[ref], heads[rt.name]),
            "rounds": rounds[rt.name],
        }
    base = args.baseline if args.baseline in results else None
    if base:
        for name, res in results.items():
            res["ours_over_theirs"] = results[base]["median_ms"] / res["median_ms"]
    return {"threads": threads, "diff_reference": ref, "baseline": base, "runtimes": results, "skipped": skipped}


def print_table(run, rounds):
    ref = run["diff_reference"]
    ratio_head = f"{run['baseline'] or 'ours'}/them"
    width = max([16, len(ratio_head)] + [len(n) for n in run["runtimes"]])
    print(f"\n== threads {run['threads']}  ({rounds} rounds; diff = max |heads - {ref} heads|, both heads)")
    print(f"{'runtime':<{width}} {'min ms':>8} {'median':>8} {'max':>8} {ratio_head:>{max(9, len(ratio_head))}} "
          f"{'max diff':>9} {'dropped':>8} {'retries':>7} {'load':>5}")
    for name, res in run["runtimes"].items():
        ratio = f"{res['ours_over_theirs']:.2f}" if "ours_over_theirs" in res else "-"
        diff = "-" if res["max_abs_diff"] is None else f"{res['max_abs_diff']:.1e}"
        flag = "*" if res["all_rounds_dropped"] else ""
        print(f"{name:<{width}} {res['min_ms']:>8.2f} {res['median_ms']:>8.2f} {res['max_ms']:>8.2f} "
              f"{ratio:>{max(9, len(ratio_head))}} {diff:>9} {res['dropped_rounds']:>5}/{rounds}{flag:<1} "
              f"{res['retries']:>6} {res['median_other_cores']:>5.2f}")
    print("load: median cores other processes used during its batches (last attempt of each round)")
    if any(res["all_rounds_dropped"] for res in run["runtimes"].values()):
        print("* every round was disturbed: figures are from all rounds")
    for name, why in run["skipped"].items():
        print(f"skipped {name}: {why}")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--threads", default="1,2", help="comma list; each is benchmarked in turn")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--per-round", type=int, default=10, help="forwards per runtime per round")
    ap.add_argument("--warmup", type=int, default=5, help="forwards per runtime before the rounds")
    ap.add_argument("--input", help="CHW 3x416x416 float32 tensor (default: made from samples/ or noise)")
    ap.add_argument("--runtimes", default=",".join([OURS, *runtimes.FP32_PEERS]),
                    help=f"comma list from {','.join(OURS_NAMES + tuple(runtimes.PEER_RUNNERS))} (default: %(default)s)")
    ap.add_argument("--engine", default=".build/release/yolo-bench serve",
                    help="our engine's command, run from the repo root (default: %(default)s)")
    ap.add_argument("--engine-args", default="",
                    help="more arguments for every ours* engine, e.g. \"--conv im2col\" (ours-int8 adds --precision int8)")
    ap.add_argument("--baseline", default=OURS, help="the runtime the ratio column divides (default: %(default)s)")
    ap.add_argument("--engine-timeout", type=float, default=300, help="seconds to wait for an engine reply")
    ap.add_argument("--cfg", help=f"default {runtimes.CFG.relative_to(runtimes.ROOT)}")
    ap.add_argument("--weights", help=f"default {runtimes.WEIGHTS.relative_to(runtimes.ROOT)}")
    ap.add_argument("--max-other", type=float, default=0.10,
                    help="drop a round when other processes used more than this many cores")
    ap.add_argument("--retries", type=int, default=2,
                    help="re-run a disturbed batch up to this many times before dropping the round")
    ap.add_argument("--retry-pause", type=float, default=0.5, help="seconds to wait before a retry")
    ap.add_argument("--gap", type=float, default=0.05, help="seconds of pause before each batch")
    ap.add_argument("--json", help="write all results (every round's timings) to this file")
    args = ap.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)

    names = [n.strip() for n in args.runtimes.split(",") if n.strip()]
    unknown = set(names) - {*OURS_NAMES, *runtimes.PEER_RUNNERS}
    if unknown:
        ap.error(f"unknown runtimes {sorted(unknown)}; choose from {','.join(OURS_NAMES + tuple(runtimes.PEER_RUNNERS))}")
    thread_counts = [int(t) for t in args.threads.split(",")]
    if any(n in OURS_NAMES for n in names):
        check_engine(args.engine)

    models = runtimes.ensure_models(args.cfg or runtimes.CFG, args.weights or runtimes.WEIGHTS)
    if args.input:
        input_path = Path(args.input).resolve()
        x, input_desc = runtimes.load_tensor(input_path), str(args.input)
    else:
        x, input_desc = runtimes.default_input()
        input_path = runtimes.MODELS / "default_input_416.f32"
        x.astype("<f4").tofile(input_path)

    print(f"machine: {cpu_model()}, {os.cpu_count()} cpus; input: {input_desc}")
    if "OPENBLAS_CORETYPE" in os.environ:
        print(f"OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} (passed through to the engine)")
    runs = []
    for threads in thread_counts:
        run = bench(threads, names, args, input_path, x, models)
        if not runs:
            for name, res in run["runtimes"].items():
                print(f"{name:<16} {res['version']}")
        for name, res in run["runtimes"].items():
            print(f"  [{threads}t] {name}: {res['settings']}")
        print_table(run, args.rounds)
        runs.append(run)

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": cpu_model(), "cpus": os.cpu_count(), "input": input_desc,
                       "rounds": args.rounds, "per_round": args.per_round, "warmup": args.warmup,
                       "max_other_cores": args.max_other, "runs": runs}, f, indent=1)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
