"""A job for tests/test_yarn.py: two nodes that write "PID CONTAINER_ID" to
PID_FILE.<executor id> and idle, worker 1 after touching --gib GiB (past its container's
memory, YARN with physical-memory checks on must kill it); prints the driver's outcome as
a JSON line starting with RESULT."""

import argparse
import json
import time

from pyspark.sql import SparkSession

from sparktf import TFCluster


def hog(args, ctx):
    """worker 1 touches `gib` GiB, 256 MiB at a time; every node then idles."""
    import os
    import time

    import numpy as np

    held = []
    with open(args["pid_file"] + f".{ctx.executor_id}", "w") as f:
        f.write(f"{os.getpid()} {os.environ.get('CONTAINER_ID', '')}")
    if ctx.job_name == "worker" and ctx.task_index == 1:
        for _ in range(int(args["gib"] * 4)):
            held.append(np.ones(32 << 20, dtype=np.float64))  # 256 MiB, touched
            time.sleep(0.1)
    time.sleep(args["idle"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gib", type=float, default=3)
    p.add_argument("--idle", type=float, default=120)
    p.add_argument("--mode", choices=["tensorflow", "spark"], default="tensorflow")
    p.add_argument("--pid-file", default="/tmp/sparktf-hog")
    a = p.parse_args()
    spark = SparkSession.builder.appName("sparktf-memory-hog").getOrCreate()
    mode = TFCluster.InputMode.SPARK if a.mode == "spark" else TFCluster.InputMode.TENSORFLOW
    t0 = time.monotonic()
    result = {"error": None}
    try:
        cluster = TFCluster.run(spark.sparkContext, hog, vars(a), 2, input_mode=mode,
                                reservation_timeout=120)
        result["started"] = time.monotonic() - t0
        cluster.shutdown(timeout=600)
    except Exception as e:  # noqa: BLE001 - reported to the test
        result.update(error=str(e), type=type(e).__name__)
    result["seconds"] = time.monotonic() - t0
    print("RESULT " + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
