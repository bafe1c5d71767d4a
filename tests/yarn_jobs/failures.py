"""A job for tests/test_yarn.py: two failures that new users meet on YARN, as the driver
reports them. Submitted with one executor: a cluster of two nodes cannot reserve them; a
one-node cluster whose function imports a module that only the driver has fails with an
error naming it. Prints {case: {"type", "error", "seconds"}} as a JSON line after RESULT."""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql import SparkSession

from sparktf import TFCluster

MODULE = "sparktf_driver_only_module"


def idle(args, ctx):
    time.sleep(30)


def imports_a_driver_only_module(args, ctx):
    import sparktf_driver_only_module  # noqa: F401 - the driver has it, the executors not


def outcome(run) -> dict:
    t0 = time.monotonic()
    try:
        run()
        return {"type": None, "error": None, "seconds": time.monotonic() - t0}
    except Exception as e:  # noqa: BLE001 - reported to the test
        return {"type": type(e).__name__, "error": str(e), "seconds": time.monotonic() - t0}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reservation-timeout", type=float, default=15)
    a = p.parse_args()
    driver_only = Path(tempfile.mkdtemp())
    (driver_only / f"{MODULE}.py").write_text("VALUE = 1\n")
    sys.path.insert(0, str(driver_only))
    __import__(MODULE)

    spark = SparkSession.builder.appName("sparktf-yarn-failures").getOrCreate()
    sc = spark.sparkContext
    result = {
        "too_few_executors": outcome(lambda: TFCluster.run(
            sc, idle, None, 2, reservation_timeout=a.reservation_timeout)),
        "missing_module": outcome(lambda: TFCluster.run(
            sc, imports_a_driver_only_module, None, 1,
            reservation_timeout=120).shutdown(timeout=120)),
    }
    print("RESULT " + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
