"""A job for tests/test_yarn.py: a 2-node cluster on executors that asked YARN for one GPU
each (spark.executor.resource.gpu.amount, which Spark requests as yarn.io/gpu) and found
them with a discovery script. Prints, after RESULT, each node's CUDA_VISIBLE_DEVICES and
container, and the application id."""

import json
import os
import sys

from pyspark.sql import SparkSession

from sparktf import TFCluster, fs


def record(out, ctx):
    info = {"cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "container": os.environ.get("CONTAINER_ID", "")}
    fs.write_bytes(f"{out}/{ctx.executor_id}.json", json.dumps(info).encode())


def main():
    out = sys.argv[1]
    spark = SparkSession.builder.appName("sparktf-yarn-gpus").getOrCreate()
    sc = spark.sparkContext
    TFCluster.run(sc, record, out, 2, reservation_timeout=120).shutdown(timeout=120)
    nodes = [json.loads(fs.read_bytes(u)) for u in sorted(fs.glob(f"{out}/*.json"))]
    print("RESULT " + json.dumps({"nodes": nodes, "application": sc.applicationId}),
          flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
