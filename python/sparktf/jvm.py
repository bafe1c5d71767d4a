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


NICE_CONF = "spark.sparktf.feeder.nice"


def feed_nice(spark) -> int:
    """The nice value of the JVM feeder's threads (NICE_CONF, default 10; 0 leaves them at
    the executor's): a feeding task that shares cores with training yields them to it."""
    text = spark.conf.get(NICE_CONF, "10")
    try:
        nice = int(text)
    except ValueError:
        nice = -1
    if not 0 <= nice <= 19:
        raise errors.InvalidArgument(f"{NICE_CONF} must be a nice value from 0 to 19, "
                                     f"got {text!r}")
    return nice


def feed(df, meta: dict, nice: int) -> list[tuple]:
    """Runs the feeding job of `df` (a DataFrame, vectors already arrays) for `meta`
    (TFCluster._feed_meta, with "partitions"), its threads at nice `nice` (feed_nice);
    one (partition, pushed, skipped, local, node, 0, 0, cached, nice) per partition: the
    fields of feeding.feed_arrow_partition, no pickles, then whether the rows were read
    straight from Spark's in-memory cache of `df` (df.cache(); io.sparktf.CachedColumns)
    and the feeding thread's nice value."""
    spark = df.sparkSession
    conf = spark.conf
    max_rows = int(conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000"))
    if max_rows <= 0:
        max_rows = 10000
    time_zone = conf.get("spark.sql.session.timeZone")
    jvm = spark.sparkContext._jvm
    feeder = getattr(jvm, FEEDER_CLASS)
    lines = feeder.feed(df._jdf, json.dumps(meta), max_rows, time_zone, nice)
    out = []
    for line in lines.splitlines():
        partition, pushed, skipped, local, node, cached, nice = (int(v) for v in line.split())
        out.append((partition, pushed, skipped, bool(local), node, 0, 0, bool(cached), nice))
    return out
