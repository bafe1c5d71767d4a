"""The cross-host feed (TCP to the node's agent) next to the shared-memory feed, on two
simulated hosts.

A Spark standalone cluster with a worker (one executor, one core) on 127.0.0.2 and one
on 127.0.0.3 (tests/chaos/standalone.py), and a 2-node InputMode.SPARK cluster, a node
per host. The same cached data as bench/feed_bench.py (8 partitions), fed with
cluster.train() for one untimed and one timed epoch, to consumers that read
DataFeed.next_batch(1000): once with partitions fed where they live (shared memory, the
default), once with SPARKTF_FEED_TRANSPORT=tcp (every partition over TCP, as if each
crossed hosts). Both hosts share this machine's kernel and its 2 cores, so TCP here is
loopback: it measures the protocol's and the agent's cost, not a network's. Each run is
a fresh driver process, transports interleaved; medians. DataFrames go through the JVM
feeder (its jar is on the executors' classpath), RDDs through the Python feeding tasks.

Usage: .venv/bin/python bench/transport_bench.py [--rounds 3]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(ROOT, "tests", "chaos"))

import feed_bench  # noqa: E402

SHAPES = {name: feed_bench.SHAPES[name] for name in
          ("DataFrame, array<float> of 784", "784 float32 (numpy array)",
           "DataFrame, 10 float columns")}
TRANSPORTS = ("shm", "tcp")


def worker(master, shape):
    from standalone import driver_session

    from sparktf import TFCluster

    width, rows, kind = SHAPES[shape]
    spark = driver_session(master, "transport-bench", executor_memory="2g")
    sc = spark.sparkContext
    if kind.startswith("df-"):
        data, n = feed_bench.make_df(spark, width, rows, kind)
        mapping = {"label": "y"}
    else:
        data, n = feed_bench.make_rdd(sc, width, rows, kind)
        mapping = {"0": "x", "1": "y"}
    out = tempfile.mkdtemp()
    cluster = TFCluster.run(sc, feed_bench.sparktf_consumer,
                            {"out": out, "expect": n, "mapping": mapping}, 2,
                            input_mode=TFCluster.InputMode.SPARK)
    cluster.train(data, num_epochs=1)
    t0 = time.time()
    stats = cluster.train(data, num_epochs=1)
    cluster.shutdown()
    got = [json.load(open(os.path.join(out, f))) for f in os.listdir(out)]
    assert sum(g["rows"] for g in got) == 2 * n, got
    spark.stop()
    print("RESULT " + json.dumps({"seconds": max(g["end"] for g in got) - t0, "rows": n,
                                  "tcp_partitions": stats["partitions"] -
                                  stats["local_partitions"],
                                  "partitions": stats["partitions"],
                                  "feeder": stats.get("feeder", "python"),
                                  "peak_kb": max(g["peak_kb"] for g in got)}), flush=True)


def run_worker(master, shape, transport):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", SPARK_LOCAL_IP="127.0.0.1")
    env.pop("SPARKTF_FEED_TRANSPORT", None)
    if transport == "tcp":
        env["SPARKTF_FEED_TRANSPORT"] = "tcp"
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", master,
                        "--shape", shape], capture_output=True, text=True, env=env,
                       cwd=tempfile.gettempdir(), timeout=1800)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{transport} failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", choices=list(SHAPES), default=None)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--shape", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.shape)
        return
    from standalone import StandaloneCluster

    hosts = StandaloneCluster(tempfile.mkdtemp(prefix="transport-bench-"), cores=1,
                              memory="3g").start()
    tables = []
    try:
        for shape in SHAPES:
            if args.only and shape != args.only:
                continue
            rates = {t: [] for t in TRANSPORTS}
            peaks = {t: [] for t in TRANSPORTS}
            feeders = set()
            for r in range(args.rounds):
                for t in TRANSPORTS:
                    res = run_worker(hosts.master_url, shape, t)
                    # each run must have fed as it says: all local, or all over TCP
                    want = res["partitions"] if t == "tcp" else 0
                    if res["tcp_partitions"] != want:
                        print(f"{shape} round {r + 1} {t}: {res['tcp_partitions']} of "
                              f"{res['partitions']} partitions over TCP", flush=True)
                    feeders.add(res["feeder"])
                    rates[t].append(res["rows"] / res["seconds"])
                    peaks[t].append(res["peak_kb"] / 1024)
                print(f"{shape} round {r + 1}: " + ", ".join(
                    f"{t} {v[-1]:,.0f} rows/s" for t, v in rates.items()), flush=True)
            width, rows, _ = SHAPES[shape]
            med = {t: statistics.median(v) for t, v in rates.items()}
            lines = [f"\n{shape} and a label per row, {rows:,} rows in "
                     f"{feed_bench.PARTITIONS} partitions, 2 nodes on 2 simulated hosts, "
                     f"feeder {'/'.join(sorted(feeders))}; medians of {args.rounds} runs",
                     "| feed | rows/s (median) | min | max | peak node memory |",
                     "|---|---|---|---|---|"]
            for t, name in (("shm", "shared memory (fed where they live)"),
                            ("tcp", "TCP to the agent (SPARKTF_FEED_TRANSPORT=tcp)")):
                lines.append(f"| {name} | {med[t]:,.0f} | {min(rates[t]):,.0f} | "
                             f"{max(rates[t]):,.0f} | {statistics.median(peaks[t]):,.0f} MiB |")
            lines.append(f"\nTCP / shared memory: **{med['tcp'] / med['shm']:.2f}** "
                         f"(target 0.7); per run: " + ", ".join(
                             f"{a / b:.2f}" for a, b in zip(rates["tcp"], rates["shm"])))
            tables.append("\n".join(lines))
            print(tables[-1], flush=True)
    finally:
        hosts.stop()
    print("\n".join(tables))


if __name__ == "__main__":
    main()
