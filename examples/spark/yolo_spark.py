#!/usr/bin/env python3
"""Object detection over many images with Apache Spark and yolo-swift's `yolo detect`.

Each partition of a list of image paths goes to one long-lived process,
`yolo detect --files-from - --json`: the model loads once per partition (not per image), the
paths stream in on its stdin and one JSON line per image streams back, in input order. The
lines become rows (image, width, height, class, class_index, confidence, left, top, right,
bottom, error) written to Parquet: one row per detection, one row with a null class for an image
without detections, one row with `error` set for an image that could not be read.

A partition's process that dies (killed, out of memory) fails its task with the images it did
not answer; Spark runs the task again, and its rows replace the failed attempt's (Spark commits
a task's output once), so no image is lost or written twice.

    spark-submit examples/spark/yolo_spark.py --paths paths.txt --out detections.parquet
    spark-submit --archives yolo-bundle.tar.gz#yolo examples/spark/yolo_spark.py \\
        --yolo yolo/bin/yolo --weights yolo/weights --paths hdfs:///photos/paths.txt --out hdfs:///photos/detections

`--api pandas` runs the same through `DataFrame.mapInPandas` (needs pandas and pyarrow on the
executors). See the README's "Batch jobs" section.
"""
import argparse
import json
import os
import queue
import shlex
import subprocess
import tempfile
import threading

# The rows' columns, as a Spark DDL schema (also mapInPandas' schema).
SCHEMA = ("image string, width int, height int, class string, class_index int, confidence double, "
          "left double, top double, right double, bottom double, error string")
COLUMNS = [c.split()[0] for c in SCHEMA.split(", ")]


def resolve(path):
    """A path given to the job as it is on an executor: as given when it exists (absolute, or
    relative to the working directory, where YARN and Kubernetes unpack --archives and --files),
    else under SparkFiles' directory (where local mode and standalone clusters unpack them)."""
    if path is None or os.path.isabs(path) or os.path.exists(path):
        return path
    try:
        from pyspark import SparkFiles
        candidate = os.path.join(SparkFiles.getRootDirectory(), path)
        return candidate if os.path.exists(candidate) else path
    except Exception:
        return path


def rows_of_line(line):
    """The rows of one `yolo detect --json` line (a dict), as tuples in COLUMNS' order."""
    image = line["image"]
    if "error" in line:
        return [(image, None, None, None, None, None, None, None, None, None, line["error"])]
    w, h = line["width"], line["height"]
    if not line["detections"]:
        return [(image, w, h, None, None, None, None, None, None, None, None)]
    return [(image, w, h, d["class"], d["class_index"], float(d["confidence"]),
             float(d["box"]["left"]), float(d["box"]["top"]), float(d["box"]["right"]), float(d["box"]["bottom"]), None)
            for d in line["detections"]]


def yolo_lines(paths, yolo="yolo", weights=None, yolo_args=(), sessions=1):
    """Runs one `yolo detect --files-from - --json` over `paths` (any iterable of strings, read
    as the process takes them) and yields its JSON lines as dicts, in input order. Raises when
    the process ends before answering every path (it was killed, or could not start), naming how
    far it got and its last error: the caller's Spark task then fails and is retried."""
    env = dict(os.environ)
    if weights:
        env["YOLO_WEIGHTS"] = resolve(weights)
    command = [resolve(yolo), "detect", "--files-from", "-", "--json",
               "--sessions", str(sessions), "--threads", "1"] + list(yolo_args)
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env)
        sent = queue.Queue()  # paths written and not yet answered, in order
        problem = []

        def feed():
            try:
                for path in paths:
                    if "\n" in path or "\r" in path or not path:
                        raise ValueError(f"not a path yolo can take from a list (one per line): {path!r}")
                    sent.put(path)
                    proc.stdin.write(path.encode() + b"\n")
                    proc.stdin.flush()
            except BrokenPipeError:
                pass  # yolo is gone; the reader says why
            except BaseException as e:  # noqa: BLE001 (handed to the reader's thread)
                problem.append(e)
            finally:
                try:
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
                sent.put(None)

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        answered = 0
        try:
            for raw in proc.stdout:
                line = json.loads(raw)
                expected = sent.get()
                if line.get("image") != expected:
                    raise RuntimeError(f"yolo answered {line.get('image')!r} where {expected!r} was next")
                answered += 1
                yield line
            status = proc.wait()
            writer.join()
            if problem:
                raise problem[0]
            missing = sent.qsize() - 1  # less the end mark
            if missing > 0:
                stderr.seek(0)
                tail = stderr.read().decode(errors="replace").strip().splitlines()[-3:]
                raise RuntimeError(f"yolo ended ({'signal ' + str(-status) if status < 0 else 'exit ' + str(status)}) "
                                   f"after {answered} images with {missing} unanswered: {' | '.join(tail)}")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def task_cpus():
    """The cores Spark gives each task (spark.task.cpus): yolo's sessions."""
    from pyspark import TaskContext
    context = TaskContext.get()
    try:
        return max(1, int(context.cpus())) if context else 1
    except Exception:
        return 1


def detect_partition(paths, yolo="yolo", weights=None, yolo_args=()):
    """For RDD.mapPartitions: a partition's paths in, its rows out (tuples in COLUMNS' order)."""
    for line in yolo_lines(paths, yolo, weights, yolo_args, sessions=task_cpus()):
        yield from rows_of_line(line)


def detect_pandas(batches, yolo="yolo", weights=None, yolo_args=(), rows_per_batch=2048):
    """For DataFrame.mapInPandas: batches of a `path` column in, batches of rows out; one yolo
    process for all of the partition's batches."""
    import pandas as pd
    paths = (p for batch in batches for p in batch["path"])
    rows = []
    for line in yolo_lines(paths, yolo, weights, yolo_args, sessions=task_cpus()):
        rows += rows_of_line(line)
        if len(rows) >= rows_per_batch:
            yield pd.DataFrame(rows, columns=COLUMNS)
            rows = []
    if rows:
        yield pd.DataFrame(rows, columns=COLUMNS)


def detections(spark, paths_file, yolo="yolo", weights=None, yolo_args=(), partitions=None, api="rdd"):
    """The detections of the images listed in `paths_file` (one path per line, any file system
    Spark reads), as a DataFrame with SCHEMA's columns."""
    if api == "pandas":
        paths = spark.read.text(paths_file).withColumnRenamed("value", "path").where("path != ''")
        if partitions:
            paths = paths.repartition(partitions)
        return paths.mapInPandas(lambda batches: detect_pandas(batches, yolo, weights, yolo_args), SCHEMA)
    lines = spark.sparkContext.textFile(paths_file, minPartitions=partitions or 2).filter(lambda p: p != "")
    rows = lines.mapPartitions(lambda it: detect_partition(it, yolo, weights, yolo_args))
    return spark.createDataFrame(rows, SCHEMA)


def main(argv=None):
    parser = argparse.ArgumentParser(description="yolo detect over a list of image paths, with Spark, to Parquet")
    parser.add_argument("--paths", required=True, help="a text file of image paths, one per line (as the executors see them)")
    parser.add_argument("--out", required=True, help="the Parquet directory to write (replaced)")
    parser.add_argument("--yolo", default="yolo", help="the yolo binary on the executors (default: yolo in PATH)")
    parser.add_argument("--weights", help="the directory with yolov3-tiny.cfg, .weights and coco.names on the executors")
    parser.add_argument("--yolo-args", default="", help="more 'yolo detect' options, e.g. '--thresh 0.3 --classes person'")
    parser.add_argument("--partitions", type=int, help="partitions of the path list (default: Spark's)")
    parser.add_argument("--api", choices=["rdd", "pandas"], default="rdd", help="RDD.mapPartitions (default) or mapInPandas")
    args = parser.parse_args(argv)
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.appName("yolo-detect").getOrCreate()
    df = detections(spark, args.paths, args.yolo, args.weights, shlex.split(args.yolo_args), args.partitions, args.api)
    df.write.mode("overwrite").parquet(args.out)
    spark.stop()


if __name__ == "__main__":
    main()
