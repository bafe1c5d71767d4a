"""The JVM feeder (jvm/): cluster.train(df, feeder="jvm") without a Python worker.

Its tasks write a DataFrame partition's rows into Arrow vectors in the executor JVM and
hand the buffers to the native core (libsparktf_jni, packed into the jar), which pushes
them to the partition's node as the Python feeding tasks do (same placement, formats,
null rule and errors; docs/architecture.md). The jar must be on the driver's and the
executors' classpath: ``spark.jars`` (or ``spark-submit --jars``) set to
:func:`jar_path` when the session starts.
"""

from __future__ import annotations

import json
import os

from sparktf import errors

JAR_NAME = "sparktf-feeder.jar"
FEEDER_CLASS = "io.sparktf.JvmFeeder"


def jar_path() -> str:
    """The feeder's jar, as scripts/build_jvm.sh installed it next to this package."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), JAR_NAME)
    if not os.path.isfile(path):
        raise errors.NotFound(f"{path} is missing: scripts/build_jvm.sh builds it "
                              "(scripts/bootstrap.sh runs it)")
    return path


def available(sc) -> bool:
    """The driver's JVM can load the feeder (its jar is in spark.jars)."""
    from py4j.java_gateway import JavaClass

    return isinstance(getattr(sc._jvm, FEEDER_CLASS), JavaClass)


def check_available(sc) -> None:
    if not available(sc):
        raise errors.InvalidArgument(
            f"feeder='jvm' needs {FEEDER_CLASS} on Spark's classpath: start the session "
            f"with spark.jars={JAR_NAME} (sparktf.jvm.jar_path(), or spark-submit --jars)")


def feed(df, meta: dict) -> list[tuple]:
    """Runs the feeding job of `df` (a DataFrame, vectors already arrays) for `meta`
    (TFCluster._feed_meta, with "partitions"); one (partition, pushed, skipped, local,
    node, 0, 0, cached, stored, yielded) per partition: the fields of
    feeding.feed_arrow_partition, no pickles, then whether the rows were read straight from
    Spark's in-memory cache of `df` (df.cache(); io.sparktf.CachedColumns), whether from
    the block storing them (a task without the cache's lineage; else the block was gone and
    the lineage made it), and whether the task's thread fed at SCHED_BATCH (meta's
    feeder_sched, docs/architecture.md)."""
    spark = df.sparkSession
    conf = spark.conf
    max_rows = int(conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000"))
    if max_rows <= 0:
        max_rows = 10000
    time_zone = conf.get("spark.sql.session.timeZone")
    jvm = spark.sparkContext._jvm
    feeder = getattr(jvm, FEEDER_CLASS)
    lines = feeder.feed(df._jdf, json.dumps(meta), max_rows, time_zone)
    out = []
    for line in lines.splitlines():
        partition, pushed, skipped, local, node, cached, stored, yielded = (
            int(v) for v in line.split())
        out.append((partition, pushed, skipped, bool(local), node, 0, 0, bool(cached),
                    bool(stored), bool(yielded)))
    return out
