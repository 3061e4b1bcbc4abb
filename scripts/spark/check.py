#!/usr/bin/env python3
"""The Spark example's end-to-end check (run by SparkTests with scripts/spark-test-setup.sh's
Python): copies the sample photos to --count files, runs examples/spark/yolo_spark.py's job in
local mode (RDD.mapPartitions; again with one task's yolo killed mid-partition, which Spark
retries; and the mapInPandas variant), reads the Parquet back and compares its rows with
`yolo detect --json` on the same files: the same multiset of rows, so no image lost or
duplicated. Prints one JSON line last: counts, times, and "problems" (empty when all is well)."""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "examples", "spark"))
import yolo_spark  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--yolo", required=True)
parser.add_argument("--weights", required=True)
parser.add_argument("--samples", required=True)
parser.add_argument("--count", type=int, default=500)
parser.add_argument("--yolo-args", default="")
parser.add_argument("--master", default="local[2,3]", help="local[N,maxFailures]: a failed task is tried again")
parser.add_argument("--work", help="a directory to work in (default: a temporary one, removed)")
args = parser.parse_args()
yolo_args = args.yolo_args.split()
work = args.work or tempfile.mkdtemp(prefix="yolo-spark-")
problems, report, times = [], {}, {}

# The images: the samples copied to --count files of their own.
samples = sorted(os.path.join(args.samples, f) for f in os.listdir(args.samples) if f.lower().endswith((".png", ".jpg", ".jpeg")))
os.makedirs(os.path.join(work, "images"), exist_ok=True)
paths = []
for i in range(args.count):
    source = samples[i % len(samples)]
    path = os.path.join(work, "images", f"img{i:05d}{os.path.splitext(source)[1]}")
    shutil.copyfile(source, path)
    paths.append(path)
paths_file = os.path.join(work, "paths.txt")
with open(paths_file, "w") as f:
    f.write("".join(p + "\n" for p in paths))

# The reference: yolo detect --json on the same files, one thread per session as the job runs it.
t = time.time()
env = dict(os.environ, YOLO_WEIGHTS=args.weights)
ref = subprocess.run([args.yolo, "detect", "--files-from", paths_file, "--json", "--threads", "1"] + yolo_args,
                     capture_output=True, env=env, check=False)
times["reference"] = round(time.time() - t, 1)
if ref.returncode != 0:
    problems.append(f"yolo detect exited {ref.returncode}: {ref.stderr.decode()[-500:]}")
lines = [json.loads(l) for l in ref.stdout.splitlines()]
if [l["image"] for l in lines] != paths:
    problems.append(f"yolo detect answered {len(lines)} lines for {len(paths)} paths")
expected = collections.Counter(r for l in lines for r in yolo_spark.rows_of_line(l))
report["images"] = len(paths)
report["rows"] = sum(expected.values())
report["detections"] = sum(1 for r in expected.elements() if r[3] is not None)


def compare(name, out):
    got = collections.Counter(tuple(row[c] for c in yolo_spark.COLUMNS) for row in spark.read.parquet(out).collect())
    images = collections.Counter(r[0] for r in got.elements())
    if got != expected:
        lost = sorted(set(paths) - set(images))
        extra = got - expected
        problems.append(f"{name}: {sum(got.values())} rows, {len(images)} images; lost images {lost[:5]} ({len(lost)}), "
                        f"rows not in the reference: {list(extra)[:3]} ({sum(extra.values())})")
    report[name] = {"rows": sum(got.values()), "images": len(images)}


from pyspark.sql import SparkSession  # noqa: E402
# For kill_once.py, in the Python workers (which take the environment the JVM started with).
marker = os.path.join(work, "kill-marker")
# Killed a quarter of the way: half-way through its partition (of 2).
os.environ.update(YOLO_REAL=args.yolo, YOLO_KILL_MARKER=marker, YOLO_KILL_AFTER=str(max(1, args.count // 4)))
# The workers' Python: this one (with pandas and pyarrow for mapInPandas), not python3 in PATH.
os.environ["PYSPARK_PYTHON"] = sys.executable
t = time.time()
spark = (SparkSession.builder.master(args.master).appName("yolo-spark-check")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
         .config("spark.driver.memory", "1g").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
spark.sparkContext.addPyFile(yolo_spark.__file__)  # as spark-submit --py-files would ship it
times["spark_start"] = round(time.time() - t, 1)
try:
    # 1. The RDD job as a user runs it.
    t = time.time()
    out = os.path.join(work, "rdd.parquet")
    yolo_spark.detections(spark, paths_file, args.yolo, args.weights, yolo_args, partitions=2).write.mode("overwrite").parquet(out)
    times["rdd"] = round(time.time() - t, 1)
    compare("rdd", out)

    # 2. The same with one task's yolo killed mid-partition: Spark runs the task again.
    t = time.time()
    out = os.path.join(work, "rdd-killed.parquet")
    yolo_spark.detections(spark, paths_file, os.path.join(here, "kill_once.py"), args.weights, yolo_args,
                          partitions=2).write.mode("overwrite").parquet(out)
    times["rdd_killed"] = round(time.time() - t, 1)
    compare("rdd_killed", out)
    killed = open(marker).read().strip() if os.path.exists(marker) else ""
    attempts = len(open(marker + ".log").read().split()) if os.path.exists(marker + ".log") else 0
    report["killed"], report["attempts"] = killed, attempts
    if "killed yolo" not in killed:
        problems.append(f"no yolo was killed: {killed!r}")
    if attempts != 3:
        problems.append(f"{attempts} yolo processes for 2 partitions with one killed: expected 3 (one task retried)")

    # 3. The mapInPandas variant.
    t = time.time()
    out = os.path.join(work, "pandas.parquet")
    yolo_spark.detections(spark, paths_file, args.yolo, args.weights, yolo_args, partitions=2,
                          api="pandas").write.mode("overwrite").parquet(out)
    times["pandas"] = round(time.time() - t, 1)
    compare("pandas", out)
except Exception as e:  # noqa: BLE001 (reported in the JSON line)
    problems.append(f"{type(e).__name__}: {str(e)[:2000]}")
finally:
    spark.stop()
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
report["seconds"] = times
report["problems"] = problems
print(json.dumps(report))
sys.exit(1 if problems else 0)
