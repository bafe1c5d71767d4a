"""Cluster start: time from TFCluster.run() to every map_fun started.

sparktf vs TensorFlowOnSpark 2.2.5 (its own venv, .venv-tfos: see
bench/setup_tfos_venv.sh) on the same Spark (pyspark 4.3.0,
local-cluster[2,1,1024]), next to Spark's own launch of a 2-task barrier stage
(the floor). Each framework runs in a fresh driver process per round, rounds
interleaved; every process warms its executors, then starts (and shuts down)
a 2-node cluster `--per-process` times. map_fun only writes time.time().

With --yarn the drivers are submitted (spark-submit --master yarn, client mode, 2
executors of 1 core) to a mini YARN that the benchmark starts (scripts/minicluster.py: a
ResourceManager and 2 NodeManagers on this machine), sparktf next to Spark's barrier
stage only.

Usage: .venv/bin/python bench/startup_bench.py [--rounds 3] [--per-process 3] [--yarn]
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


def stamp(args, ctx):
    import time as _t

    with open(os.path.join(args, str(ctx.executor_id)), "w") as f:
        f.write(repr(_t.time()))


def spark_task(out_dir):
    def fn(it):
        from pyspark import BarrierTaskContext

        with open(os.path.join(out_dir, str(BarrierTaskContext.get().partitionId())), "w") as f:
            f.write(repr(time.time()))
        yield 0
    return fn


def worker(framework, repeats, yarn):
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = SparkSession.builder.config("spark.ui.enabled", "false")
    if not yarn:  # else spark-submit's master
        builder = builder.master("local-cluster[2,1,1024]")
    spark = builder.getOrCreate()
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    for _ in range(2):
        sc.parallelize(range(4), 4).map(lambda x: x).count()  # executors and workers warm
    results = []
    for _ in range(repeats):
        d = tempfile.mkdtemp()
        t0 = time.time()
        if framework == "spark":
            sc.parallelize(range(2), 2).barrier().mapPartitions(spark_task(d)).collect()
        elif framework == "sparktf":
            from sparktf import TFCluster
            TFCluster.run(sc, stamp, d, 2).shutdown()
        else:
            from tensorflowonspark import TFCluster
            TFCluster.run(sc, stamp, d, 2, num_ps=0,
                          input_mode=TFCluster.InputMode.TENSORFLOW).shutdown()
        starts = [float(open(os.path.join(d, f)).read()) for f in os.listdir(d)]
        assert len(starts) == 2, starts
        results.append(max(starts) - t0)
    spark.stop()
    print("RESULT " + json.dumps(results), flush=True)


def run_worker(python, framework, repeats, yarn_conf=None):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    cmd = [python, os.path.abspath(__file__), "--worker", framework,
           "--per-process", str(repeats)]
    if yarn_conf:
        bin_dir = os.path.dirname(python)
        env.update(HADOOP_CONF_DIR=str(yarn_conf), PATH=bin_dir + os.pathsep + env["PATH"])
        cmd = [os.path.join(bin_dir, "spark-submit"), "--master", "yarn", "--deploy-mode",
               "client", "--num-executors", "2", "--executor-cores", "1",
               "--executor-memory", "1g", "--conf", "spark.yarn.am.memory=512m",
               "--conf", f"spark.pyspark.python={python}",
               "--conf", f"spark.pyspark.driver.python={python}",
               os.path.abspath(__file__), "--worker", framework, "--per-process", str(repeats),
               "--yarn"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       cwd=tempfile.gettempdir(), timeout=900)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{framework} failed:\n{p.stderr[-3000:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--per-process", type=int, default=3)
    ap.add_argument("--tfos-python", default=os.path.join(ROOT, ".venv-tfos", "bin", "python"))
    ap.add_argument("--yarn", action="store_true",
                    help="on a mini YARN started here; sparktf and Spark only")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.per_process, args.yarn)
        return
    pythons = {"spark": sys.executable, "sparktf": sys.executable}
    if not args.yarn:
        pythons["tfos"] = args.tfos_python
    cluster = None
    if args.yarn:
        sys.path.insert(0, os.path.join(ROOT, "scripts"))
        from minicluster import HdfsMiniCluster

        base = os.path.join(ROOT, "build", "bench-yarn")
        cluster = HdfsMiniCluster(os.path.join(base, "conf"), datanodes=1,
                                  data_dir=os.path.join(base, "data"), nodemanagers=2).start()
    times = {k: [] for k in pythons}
    try:
        for r in range(args.rounds):
            for fw, py in pythons.items():
                times[fw] += run_worker(py, fw, args.per_process,
                                        cluster.conf_dir if cluster else None)
            print(f"round {r + 1}: " + ", ".join(f"{k} {statistics.median(v):.2f}s"
                                                  for k, v in times.items()), flush=True)
    finally:
        if cluster:
            cluster.stop()
    med = {k: statistics.median(v) for k, v in times.items()}
    n = len(times["spark"])
    if args.yarn:
        print(f"\n2 nodes on a mini YARN (2 NodeManagers, client mode, executors warm), "
              f"pyspark 4.3.0; medians of {n} starts each")
        print("| from run() to every map_fun started | median | min | max |")
        print("|---|---|---|---|")
        for k, name in (("spark", "Spark alone (2-task barrier stage)"), ("sparktf", "sparktf")):
            print(f"| {name} | {med[k]:.2f} s | {min(times[k]):.2f} s | {max(times[k]):.2f} s |")
        print(f"\nsparktf over Spark's own launch on YARN: **{med['sparktf'] - med['spark']:+.2f} s**"
              " (target: at most 1 s)")
        return
    print(f"\n2 nodes, local-cluster[2,1,1024], pyspark 4.3.0; medians of {n} starts each")
    print("| from run() to every map_fun started | median | min | max |")
    print("|---|---|---|---|")
    names = {"spark": "Spark alone (2-task barrier stage)", "sparktf": "sparktf",
             "tfos": "TensorFlowOnSpark 2.2.5"}
    for k in ("spark", "sparktf", "tfos"):
        print(f"| {names[k]} | {med[k]:.2f} s | {min(times[k]):.2f} s | {max(times[k]):.2f} s |")
    print(f"\nTFoS / sparktf: **{med['tfos'] / med['sparktf']:.1f}x**; sparktf over Spark's own "
          f"launch: **{med['sparktf'] - med['spark']:+.2f} s** (target: under 1 s); TFoS over "
          f"Spark: {med['tfos'] - med['spark']:+.2f} s")


if __name__ == "__main__":
    main()
