"""Feeding Spark partitions into TensorFlow processes (InputMode.SPARK).

Records per second into the TF process for sparktf and TensorFlowOnSpark
2.2.5 (its own venv, .venv-tfos: see bench/setup_tfos_venv.sh), next to the
rate at which Spark alone iterates the same partitions. Same Spark (pyspark
4.3.0, local-cluster[2,1,2048]), same cached RDD of (list of N floats, label)
rows: TFoS's own MNIST examples feed rows of this shape. DataFrames (float
columns, or an array<float> column, and an int label, made and cached in the
JVM): sparktf's cluster.train(df), TFoS's cluster.train(df.rdd), and Spark
alone counting the rows of the Arrow batches that mapInArrow hands Python, and
Petastorm 0.13.1 (its own venv, .venv-petastorm: bench/setup_petastorm_venv.sh):
make_spark_converter(df) materializes the DataFrame as Parquet, then one reader
process per node (shard i of 2, started and importing TensorFlow before the clock
starts) iterates make_tf_dataset(batch_size=1000); its rate is quoted with the
materialization and without it.
Each framework runs in a fresh driver process per round, rounds interleaved.

The consumer in the TF process takes batches of 1000 rows and counts them:
sparktf with DataFeed.next_batch and input_mapping (numpy columns), TFoS with
its DataFeed.next_batch (a list of rows). Each framework makes an untimed pass
over the RDD first, then a timed one: from the start of cluster.train() (or
foreachPartition) until every row has reached a consumer. Peak memory of a
node: VmHWM of its TF process plus its helper process (sparktf: the node
agent; TFoS: the multiprocessing manager that holds its queues; Petastorm: a
reader process). For sparktf also that peak less the node's resident memory when its
consumer starts: what the feed holds.

Usage: .venv/bin/python bench/feed_bench.py [--rounds 3]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# name: (values per row, rows, how a row holds them)
SHAPES = {"10 floats (list)": (10, 600_000, "list"),
          "784 floats (list)": (784, 60_000, "list"),
          "784 float32 (numpy array)": (784, 150_000, "numpy"),
          "DataFrame, 10 float columns": (10, 600_000, "df-columns"),
          "DataFrame, array<float> of 784": (784, 150_000, "df-array")}
PARTITIONS = 8
BATCH = 1000
RING_MIB = 64  # a node's input ring: sparktf.node.FEED_RING_CAPACITY


def make_rdd(sc, width, rows, kind):
    per = rows // PARTITIONS

    def gen(p):
        import random

        import numpy as np

        r = random.Random(p)
        if kind == "numpy":
            g = np.random.default_rng(p)
            return [(g.random(width, dtype=np.float32), p) for _ in range(per)]
        return [([r.random() for _ in range(width)], p) for _ in range(per)]

    rdd = sc.parallelize(range(PARTITIONS), PARTITIONS).flatMap(gen).cache()
    assert rdd.count() == per * PARTITIONS
    return rdd, per * PARTITIONS


def make_df(spark, width, rows, kind):
    """A cached DataFrame of float32 values and an int label, made in the JVM:
    `width` columns x0.. (df-columns) or one array<float> column x (df-array)."""
    from pyspark.sql import functions as F

    base = spark.range(rows, numPartitions=PARTITIONS)
    values = [F.rand(i).cast("float") for i in range(width)]
    if kind == "df-columns":
        df = base.select(*[v.alias(f"x{i}") for i, v in enumerate(values)],
                         (F.col("id") % 10).cast("int").alias("label"))
    else:
        df = base.select(F.array(*values).alias("x"),
                         (F.col("id") % 10).cast("int").alias("label"))
    df = df.cache()
    assert df.count() == rows
    return df, rows


def count_arrow(batches):
    import pyarrow as pa

    yield pa.RecordBatch.from_pydict({"rows": [sum(b.num_rows for b in batches)]})


def vm_status_kb(pid, field="VmHWM"):
    """A kB figure of /proc/<pid>/status (VmHWM: peak resident; VmRSS: resident now)."""
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def report(out_dir, executor_id, rows, last, helpers, base_kb=0):
    peak = vm_status_kb(os.getpid()) + sum(vm_status_kb(p) for p in helpers)
    with open(os.path.join(out_dir, str(executor_id)), "w") as f:
        json.dump({"rows": rows, "end": last, "peak_kb": peak, "base_kb": base_kb}, f)


def sparktf_consumer(args, ctx):
    # the node's memory before any row arrives: its growth is what the feed holds
    base = vm_status_kb(os.getpid(), "VmRSS") + vm_status_kb(os.getppid(), "VmRSS")
    feed = ctx.get_data_feed(input_mapping=args["mapping"])
    rows, last = 0, 0.0
    while not feed.should_stop():
        b = feed.next_batch(BATCH)
        if b:
            rows += len(b["y"])
            last = time.time()
            if rows >= args["expect"]:
                break
    report(args["out"], ctx.executor_id, rows, last, [os.getppid()], base)


def tfos_consumer(args, ctx):
    from tensorflowonspark import TFNode

    feed = TFNode.DataFeed(ctx.mgr, train_mode=True)
    rows, last = 0, 0.0
    while not feed.should_stop():
        b = feed.next_batch(BATCH)
        if b:
            rows += len(b)
            last = time.time()
        if rows >= args["expect"]:
            break
    siblings = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                if open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1] == \
                        str(os.getppid()):
                    siblings.append(int(d))
            except OSError:
                pass
    report(args["out"], ctx.executor_id, rows, last, siblings)


def petastorm_reader(shard, shards):
    """A Petastorm node: says READY once TensorFlow and Petastorm are imported, reads
    the converter's files from a line of stdin, iterates shard `shard` of `shards` of
    make_tf_dataset(batch_size=BATCH) once and prints its rows and end time."""
    import tensorflow as tf  # noqa: F401  (imported before the clock starts)
    from petastorm.spark.spark_dataset_converter import SparkDatasetConverter

    print("READY", flush=True)
    job = json.loads(sys.stdin.readline())
    conv = SparkDatasetConverter(job["url"], job["files"], job["size"])
    rows = 0
    with conv.make_tf_dataset(batch_size=BATCH, num_epochs=1, cur_shard=shard,
                              shard_count=shards) as ds:
        for b in ds:
            rows += int(b.label.shape[0])
    print("RESULT " + json.dumps({"rows": rows, "end": time.time(),
                                  "peak_kb": vm_status_kb(os.getpid())}), flush=True)


def petastorm_pass(df):
    """One Petastorm epoch over `df` into 2 readers: (materialize s, read s, rows, peak kB)."""
    from petastorm.spark import make_spark_converter

    readers = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker",
                                 "petastorm-reader", "--shard", str(i)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
               for i in range(2)]
    for r in readers:
        while r.stdout.readline().strip() != "READY":
            if r.poll() is not None:
                raise RuntimeError("a Petastorm reader died before it was ready")
    t0 = time.time()
    conv = make_spark_converter(df)
    t1 = time.time()
    job = {"url": conv.cache_dir_url, "files": conv.file_urls, "size": len(conv)}
    for r in readers:
        r.stdin.write(json.dumps(job) + "\n")
        r.stdin.flush()
    got = []
    for r in readers:
        out, _ = r.communicate(timeout=1800)
        got += [json.loads(line[7:]) for line in out.splitlines() if line.startswith("RESULT ")]
    conv.delete()
    assert len(got) == 2, got
    return (t1 - t0, max(g["end"] for g in got) - t1, sum(g["rows"] for g in got),
            max(g["peak_kb"] for g in got))


def worker(framework, width, rows_wanted, kind):
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = (SparkSession.builder.master("local-cluster[2,1,2048]")
               .config("spark.ui.enabled", "false").config("spark.driver.memory", "2g"))
    if framework.startswith("sparktf"):  # with the JVM feeder's jar, as README's session
        from sparktf import jvm
        builder = builder.config("spark.jars", jvm.jar_path())
    spark = builder.getOrCreate()
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    frame = kind.startswith("df-")
    if frame:
        data, n = make_df(spark, width, rows_wanted, kind)
        mapping = {"label": "y"}
    else:
        data, n = make_rdd(sc, width, rows_wanted, kind)
        mapping = {"0": "x", "1": "y"}
    out = tempfile.mkdtemp()
    # Every framework first makes one untimed pass over the RDD, so that the
    # timed pass measures the steady rate: consumers running, and the JVMs'
    # code for reading the cached blocks compiled (startup_bench measures
    # starting).
    if framework == "jvm-arrow":
        # What a JVM-side feeder could reach at best: the executors turn the cached
        # partitions into Arrow batches (Spark's own toArrowBatchRdd) and count them,
        # with no Python worker and nothing pushed anywhere.
        def iterate():
            data._jdf.toArrowBatchRdd().count()
        iterate()
        t0 = time.time()
        iterate()
        result = {"seconds": time.time() - t0, "rows": n, "peak_kb": 0}
    elif framework == "petastorm":
        from petastorm.spark import SparkDatasetConverter

        spark.conf.set(SparkDatasetConverter.PARENT_CACHE_DIR_URL_CONF,
                       "file://" + tempfile.mkdtemp(prefix="petastorm-"))
        petastorm_pass(data)  # untimed, as for the others; delete() drops its cache
        materialize, read, got, peak = petastorm_pass(data)
        assert got == n, (got, n)
        result = {"seconds": materialize + read, "read_seconds": read, "rows": n,
                  "peak_kb": peak}
    elif framework == "spark":
        def iterate():  # a DataFrame as Arrow batches (mapInArrow), an RDD as rows
            if frame:
                got = sum(r.rows for r in data.mapInArrow(count_arrow, "rows long").collect())
                assert got == n, got
            else:
                data.foreachPartition(lambda it: sum(1 for _ in it))
        iterate()
        t0 = time.time()
        iterate()
        result = {"seconds": time.time() - t0, "rows": n, "peak_kb": 0}
    else:
        per_node = n  # half of each pass, twice (sparktf: 4 of the 8 partitions each); TFoS
        # feeds where its tasks run
        feeder = {}
        if framework.startswith("sparktf"):
            from sparktf import TFCluster
            # "sparktf": the default (DataFrames: the JVM feeder); "sparktf-python": the
            # DataFrame through mapInArrow and PySpark's Python workers
            feeder = {"feeder": "python"} if framework == "sparktf-python" else {}
            cluster = TFCluster.run(sc, sparktf_consumer,
                                    {"out": out, "expect": per_node, "mapping": mapping}, 2,
                                    input_mode=TFCluster.InputMode.SPARK)
        else:  # TFoS takes RDDs only: a DataFrame goes in as df.rdd, as its users do
            from tensorflowonspark import TFCluster
            cluster = TFCluster.run(sc, tfos_consumer, {"out": out, "expect": 2 * n + 1}, 2,
                                    num_ps=0, input_mode=TFCluster.InputMode.SPARK)
            data = data.rdd if frame else data
        cluster.train(data, num_epochs=1, **feeder)
        t0 = time.time()
        stats = cluster.train(data, num_epochs=1, **feeder)
        if frame and framework == "sparktf":  # the JVM feeder, from the cache's columns
            assert stats["feeder"] == "jvm" and stats["cache_partitions"] == PARTITIONS, stats
        t_train = time.time() - t0
        cluster.shutdown()
        got = [json.load(open(os.path.join(out, f))) for f in os.listdir(out)]
        assert sum(g["rows"] for g in got) == 2 * n, got
        result = {"seconds": max(g["end"] for g in got) - t0, "rows": n,
                  "peak_kb": max(g["peak_kb"] for g in got), "train_call": t_train,
                  "growth_kb": max(g["peak_kb"] - g["base_kb"] for g in got),
                  "feeder": stats.get("feeder") if framework != "tfos" else None}
    spark.stop()
    print("RESULT " + json.dumps(result), flush=True)


def run_worker(python, framework, width, rows, kind):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    p = subprocess.run([python, os.path.abspath(__file__), "--worker", framework,
                        "--width", str(width), "--rows", str(rows), "--kind", kind],
                       capture_output=True,
                       text=True, env=env, cwd=tempfile.gettempdir(), timeout=1800)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{framework} failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tfos-python", default=os.path.join(ROOT, ".venv-tfos", "bin", "python"))
    ap.add_argument("--petastorm-python",
                    default=os.path.join(ROOT, ".venv-petastorm", "bin", "python"))
    ap.add_argument("--only", choices=list(SHAPES), default=None)
    ap.add_argument("--sides", default=None,
                    help="comma-separated subset of spark,sparktf,sparktf-python,tfos,"
                         "jvm-arrow,petastorm")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--width", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--rows", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--kind", help=argparse.SUPPRESS)
    ap.add_argument("--shard", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker == "petastorm-reader":
        petastorm_reader(args.shard, 2)
        return
    if args.worker:
        worker(args.worker, args.width, args.rows, args.kind)
        return
    pythons = {"spark": sys.executable, "sparktf": sys.executable, "tfos": args.tfos_python}
    frame_only = {"sparktf-python": sys.executable, "jvm-arrow": sys.executable,
                  "petastorm": args.petastorm_python}
    names = {"spark": "Spark alone iterating the partitions (DataFrames: mapInArrow)",
             "sparktf": "sparktf (DataFrames: the JVM feeder, the default with its jar)",
             "sparktf-python": "sparktf, feeder=\"python\" (mapInArrow, Python workers)",
             "tfos": "TensorFlowOnSpark 2.2.5",
             "jvm-arrow": "bound of a JVM feeder: the executors making Arrow batches "
                          "(toArrowBatchRdd), no Python",
             "petastorm": "Petastorm 0.13.1, materializing included",
             "petastorm-read": "Petastorm 0.13.1, reading the Parquet only"}
    tables = []
    for shape, (width, rows, kind) in SHAPES.items():
        if args.only and shape != args.only:
            continue
        sides = dict(pythons, **(frame_only if kind.startswith("df-") else {}))
        if args.sides:
            sides = {k: v for k, v in sides.items() if k in args.sides.split(",")}
        rates = {k: [] for k in sides}
        peaks = {k: [] for k in sides}
        growth = []  # sparktf: a node's peak over its memory before the feed
        for r in range(args.rounds):
            for fw, py in sides.items():
                res = run_worker(py, fw, width, rows, kind)
                rates[fw].append(res["rows"] / res["seconds"])
                peaks[fw].append(res["peak_kb"] / 1024)
                if fw == "sparktf":
                    growth.append(res["growth_kb"] / 1024)
                if "read_seconds" in res:
                    rates.setdefault(fw + "-read", []).append(res["rows"] / res["read_seconds"])
                    peaks.setdefault(fw + "-read", []).append(res["peak_kb"] / 1024)
            print(f"{shape} round {r + 1}: " + ", ".join(
                f"{k} {statistics.median(v):,.0f} rows/s" for k, v in rates.items()), flush=True)
        med = {k: statistics.median(v) for k, v in rates.items()}
        lines = [f"\n{shape} and a label per row, {rows:,} rows in {PARTITIONS} partitions, "
                 f"2 nodes; "
                 f"medians of {args.rounds} runs",
                 "| | rows/s (median) | min | max | peak node memory |", "|---|---|---|---|---|"]
        for k in rates:
            mem = (f"{statistics.median(peaks[k]):,.0f} MiB" if k in ("sparktf", "sparktf-python", "tfos", "petastorm", "petastorm-read")
                   else "")
            lines.append(f"| {names[k]} | {med[k]:,.0f} | {min(rates[k]):,.0f} | "
                         f"{max(rates[k]):,.0f} | {mem} |")
        x_tfos, x_spark = (30, 0.9) if kind.startswith("df-") else (20, 0.8)
        if "tfos" in med:
            lines.append(f"\nsparktf / TFoS: **{med['sparktf'] / med['tfos']:.1f}x** "
                         f"(target {x_tfos}x)")
        lines.append(f"sparktf / Spark alone: **{med['sparktf'] / med['spark']:.2f}** "
                     f"(target {x_spark}); per run: " + ", ".join(
                         f"{a / b:.2f}" for a, b in zip(rates["sparktf"], rates["spark"])))
        lines.append(f"sparktf node's peak over its memory before the feed: "
                     f"{statistics.median(growth):,.0f} MiB (max {max(growth):,.0f}; its ring: "
                     f"{RING_MIB} MiB)")
        if "petastorm" in med:
            lines.append(f"sparktf / Petastorm: **{med['sparktf'] / med['petastorm']:.1f}x** end to "
                         f"end (target 3x), **{med['sparktf'] / med['petastorm-read']:.1f}x** "
                         f"against its reading alone; per run: " + ", ".join(
                             f"{a / b:.1f}x" for a, b in zip(rates["sparktf"], rates["petastorm"])))
        if "sparktf-python" in med:
            lines.append(f"JVM feeder / Python feeder: "
                         f"**{med['sparktf'] / med['sparktf-python']:.2f}**; per run: " + ", ".join(
                             f"{a / b:.2f}" for a, b in zip(rates["sparktf"],
                                                             rates["sparktf-python"])))
        if "jvm-arrow" in med:
            lines.append(f"toArrowBatchRdd().count() / sparktf: "
                         f"**{med['jvm-arrow'] / med['sparktf']:.2f}** (the JVM side's bound)")
        tables.append("\n".join(lines))
        print(tables[-1], flush=True)
    print("\n".join(tables))


if __name__ == "__main__":
    main()
