"""Driver of tests/test_feed_hosts.py: on a standalone cluster whose workers are two
simulated hosts, feeds 8 partitions for 2 epochs to a 2-node InputMode.SPARK cluster
(one node per host), once per placement given ("local-jvm": placement "local" of the same
rows as a DataFrame, through the JVM feeder), and prints one JSON line per placement:
train()'s stats (a partition fed over TCP crossed hosts), the hosts of the nodes (by feed
index) and what each node read."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "chaos"))

import feed_funs  # noqa: E402


def main():
    master, out_dir, placements = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    from standalone import driver_session

    from sparktf import TFCluster

    spark = driver_session(master, "feed-hosts")  # both executors: the cache on both hosts
    sc = spark.sparkContext
    rdd = sc.parallelize(range(8), 8).flatMap(
        lambda p: [(float(p * 1000 + i), [float(i), 1.0]) for i in range(1000)]).cache()
    rdd.count()
    df = spark.createDataFrame(rdd, "v double, a array<double>").cache()
    df.count()
    for placement in placements:
        os.environ["SPARKTF_FEED_PLACEMENT"] = placement.removesuffix("-jvm")
        data, feeder = (df, "jvm") if placement.endswith("-jvm") else (rdd, "auto")
        out = os.path.join(out_dir, placement)
        os.makedirs(out, exist_ok=True)
        cluster = TFCluster.run(sc, feed_funs.count_rows, {"out": out, "batch": 100}, 2,
                                input_mode=TFCluster.InputMode.SPARK)
        nodes = sorted((n for n in cluster.status()["nodes"] if n["fed"]),
                       key=lambda n: n["feed_index"])
        stats = cluster.train(data, num_epochs=2, feeder=feeder)
        cluster.shutdown(timeout=120)
        read = {}
        for name in os.listdir(out):
            r = json.load(open(os.path.join(out, name)))
            read[r["worker"]] = {"rows": r["rows"], "sum": r["sum"]}
        print("RESULT " + json.dumps({"placement": placement, "stats": stats,
                                      "node_hosts": [n["host"] for n in nodes],
                                      "read": read}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
