"""InputMode.SPARK end to end: feeding jobs on a real multi-executor Spark
(local-cluster, 4 executors) into real TensorFlow processes."""

import glob
import json
import os
import re
import time

import feed_funs
import numpy as np
import pytest
from leftovers import shm_segments
from test_cluster_spark import wait_no_node_processes

from sparktf import TFCluster, errors

pytestmark = pytest.mark.spark
SPARK = TFCluster.InputMode.SPARK


def node_results(out):
    return {int(os.path.basename(p)[5:-5]): json.load(open(p))
            for p in glob.glob(os.path.join(out, "node-*.json"))}


@pytest.fixture
def clean_after():
    before = set(shm_segments())  # /dev/shm is the machine's: only this test's count
    yield
    assert wait_no_node_processes() == []
    assert sorted(set(shm_segments()) - before) == []


@pytest.fixture(params=["auto", "tcp"])
def transport(request, monkeypatch):
    """auto: every node is on this machine, so tasks use shared memory;
    tcp: every task streams to the node's agent over TCP."""
    monkeypatch.setenv("SPARKTF_FEED_TRANSPORT", request.param)
    return request.param


@pytest.mark.parametrize("source", ["pipelined", "cached"])
def test_train_feeds_every_row_once(spark, tmp_path, transport, source, clean_after):
    from sparktf import feeding

    sc = spark.sparkContext
    cluster = TFCluster.run(sc, feed_funs.count_rows, {"out": str(tmp_path), "batch": 100}, 2,
                            input_mode=SPARK)
    rdd = sc.parallelize(range(8), 8).flatMap(
        lambda p: [(float(p * 1000 + i), np.arange(3, dtype=np.float32), [1.0, 2.0], f"r{i}")
                   for i in range(1000)])
    if source == "cached":  # fed from the stored pickles, read in C++
        rdd = rdd.cache()
    assert (feeding.pickled_batches(rdd) is not None) == (source == "cached")
    stats = cluster.train(rdd, num_epochs=2)
    cluster.shutdown(timeout=120)
    assert stats["rows"] == 16000 and stats["skipped"] == 0
    assert stats["local_partitions"] == (16 if transport == "auto" else 0)
    # A cached RDD's stored pickles are all read in C++; a pipelined one has none.
    if source == "cached":
        assert stats["pickles_native"] >= 16 and stats["pickles_python"] == 0, stats
    else:
        assert stats["pickles_native"] == stats["pickles_python"] == 0, stats
    seen = node_results(tmp_path)
    # one host: each epoch's 8 partitions are shared 4 and 4, and each node got the rows
    # of the partitions train() says it sent there
    assert len(stats["placement"]) == 2
    for epoch in stats["placement"]:
        assert sorted(epoch) == [0, 0, 0, 0, 1, 1, 1, 1], stats["placement"]
    expected = {w: sum(p * 1000 * 1000 + 499500 for epoch in stats["placement"]
                       for p, node in enumerate(epoch) if node == w) for w in (0, 1)}
    by_worker = {r["worker"]: r for r in seen.values()}
    assert sorted(by_worker) == [0, 1], seen
    for w, r in by_worker.items():
        assert r["rows"] == 8000 and r["sum"] == expected[w], (w, r)
        assert r["progress"]["dropped"] == 0, (w, r["progress"])
        # each row's values arrive whole and as the RDD held them (as TFoS gives them): the
        # numpy array as a float32 array of 3 (0 + 1 + 2 a row), the list as a list of 2,
        # the text as str
        assert r["columns"] == {"1": {"sum": 3.0 * 8000, "kinds": ["float32[3]"]},
                                "2": {"sum": 3.0 * 8000, "kinds": ["list[2]"]},
                                "3": {"sum": 0.0, "kinds": ["str"]}}, r
    assert cluster.dropped_records == 0


def _rows_failing_once(p, _):
    """3000 rows of about 1 KiB (so the feeding task pushes batches of about 1000 rows);
    the first attempt of partition 1 fails after it pushed two batches."""
    from pyspark import TaskContext

    attempt = TaskContext.get().attemptNumber()
    for i in range(3000):
        if p == 1 and i == 2500 and attempt == 0:
            raise RuntimeError("feeding task dies mid-partition on purpose")
        yield (float(p * 10000 + i), np.zeros(256, dtype=np.float32))


def test_a_retried_feeding_task_delivers_each_row_once(spark, tmp_path, transport,
                                                       clean_after):
    """Spark retries a feeding task that failed after it pushed part of its partition; the
    retry pushes the partition from its first row, and the node drops what it already had."""
    sc = spark.sparkContext
    cluster = TFCluster.run(sc, feed_funs.count_rows, {"out": str(tmp_path), "batch": 100}, 2,
                            input_mode=SPARK)
    rdd = sc.parallelize(range(4), 4).mapPartitionsWithIndex(_rows_failing_once)
    stats = cluster.train(rdd, num_epochs=2)
    cluster.shutdown(timeout=120)
    assert stats["rows"] == 24000 and stats["skipped"] == 0
    seen = node_results(tmp_path)
    placement = stats["placement"]
    assert [sorted(epoch) for epoch in placement] == [[0, 0, 1, 1]] * 2, placement
    per_worker = {w: sum(p * 10000 * 3000 + 2999 * 3000 // 2 for epoch in placement
                         for p, node in enumerate(epoch) if node == w) for w in (0, 1)}
    by_worker = {r["worker"]: r for r in seen.values()}
    assert sorted(by_worker) == [0, 1], seen
    for w, r in by_worker.items():
        assert r["rows"] == 12000 and r["sum"] == per_worker[w], (w, r)
    # the retried partition 1 came twice from its first row (to the node it went to the
    # first time), and that node dropped what it already had
    retried = {epoch[1] for epoch in placement}
    for w, r in by_worker.items():
        assert (r["progress"]["duplicates"] > 0) == (w in retried), (w, placement, r)
    assert sum(r["progress"]["duplicates"] for r in seen.values()) >= 1000


def test_a_validation_queue_next_to_the_training_feed_has_its_own_end(spark, tmp_path,
                                                                      clean_after):
    sc = spark.sparkContext
    cluster = TFCluster.run(sc, feed_funs.two_queues, {"out": str(tmp_path)}, 2,
                            input_mode=SPARK, queues=["input", "validation"])
    cluster.train(sc.parallelize([float(i) for i in range(100)], 4), qname="validation")
    cluster.end_feed("validation")  # the nodes finish reading it; "input" is still open
    with pytest.raises(errors.InvalidArgument, match="was ended"):
        cluster.train(sc.parallelize([1.0], 1), qname="validation")
    with pytest.raises(errors.InvalidArgument, match="unknown queue 'other'"):
        cluster.end_feed("other")
    cluster.train(sc.parallelize([float(i) for i in range(1000)], 4), num_epochs=2)
    cluster.shutdown(timeout=120)
    seen = list(node_results(tmp_path).values())
    assert sum(r["validation"][0] for r in seen) == 100
    assert sum(r["validation"][1] for r in seen) == sum(range(100))
    assert sum(r["input"][0] for r in seen) == 2000
    assert sum(r["input"][1] for r in seen) == 2 * sum(range(1000))


@pytest.mark.parametrize("feeder", ["python", "jvm"])
def test_train_from_dataframe_with_arrow(spark, tmp_path, feeder, clean_after):
    """With either feeder, a DataFrame's columns of every fed type reach the nodes with their values: numbers
    (a tinyint widened to int32), booleans, strings, arrays, pyspark.ml vectors (dense and
    sparse, as arrays of their size); a column with a null fails the feed naming it."""
    from pyspark.ml.linalg import SparseVector, Vectors, VectorUDT
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    sc = spark.sparkContext
    cluster = TFCluster.run(sc, feed_funs.count_rows, {"out": str(tmp_path), "batch": 64}, 2,
                            input_mode=SPARK)
    base = spark.range(0, 3000, numPartitions=3).select(
        F.col("id").cast("double").alias("value"),
        F.array(F.lit(1.0), F.col("id").cast("double")).alias("arr"),
        (F.col("id") % 100).cast("tinyint").alias("small"),
        (F.col("id") % 2 == 0).alias("even"),
        F.concat(F.lit("r"), F.col("id").cast("string")).alias("name"),
        F.col("id").alias("id"))
    vectors = base.rdd.map(lambda r: (r.id, Vectors.dense([r.id, 1.0, 2.0]) if r.id % 2
                                      else SparseVector(3, {0: float(r.id)})))
    vectors = spark.createDataFrame(vectors, StructType([
        StructField("id", base.schema["id"].dataType), StructField("vec", VectorUDT())]))
    df = base.join(vectors, "id").drop("id").repartition(3)
    # One partition: the null is in the first batch, so none of its rows is fed.
    with_null = spark.createDataFrame([(1.0, 2.0), (None, 3.0)], "label double, x double")
    with pytest.raises(Exception, match="column 'label' has nulls; fill or drop them"):
        cluster.train(with_null.coalesce(1), feed_timeout=60, feeder=feeder)
    stats = cluster.train(df, feeder=feeder)
    cluster.shutdown(timeout=120)
    assert stats["rows"] == 3000 and stats["partitions"] == 3 and stats["feeder"] == feeder
    # the JVM feeder's tasks yield to training by default (docs/architecture.md)
    assert stats["yielded_partitions"] == (3 if feeder == "jvm" else 0)
    ids = range(3000)
    seen = node_results(tmp_path)
    assert sum(r["rows"] for r in seen.values()) == 3000
    assert sum(r["sum"] for r in seen.values()) == sum(ids)
    columns = {}
    for r in seen.values():
        for i, c in r["columns"].items():
            columns.setdefault(int(i), {"sum": 0.0, "kinds": set()})
            columns[int(i)]["sum"] += c["sum"]
            columns[int(i)]["kinds"].update(c["kinds"])
    assert columns[1] == {"sum": 3000 + sum(ids), "kinds": {"list[2]"}}
    assert columns[2] == {"sum": sum(i % 100 for i in ids), "kinds": {"int"}}
    assert columns[3] == {"sum": 1500, "kinds": {"bool"}}
    assert columns[4]["kinds"] == {"str"}
    assert columns[5] == {"sum": sum(ids) + 3.0 * 1500, "kinds": {"list[3]"}}



@pytest.mark.parametrize("feeder, source", [("python", "pipelined"), ("jvm", "pipelined"),
                                            ("jvm", "cached")])
def test_dataframe_of_numbers_arrives_value_for_value(spark, tmp_path, feeder, source,
                                                      clean_after, monkeypatch):
    """Numbers, booleans and arrays of numbers (the JVM feeder writes these itself, with
    one copy per array) reach the nodes row for row, compared with values numpy computes
    from the ids; a null scalar, array or array element fails the feed naming its column.
    cached: the JVM feeder reads the DataFrame's cache (several cached batches per
    partition, a column the feed does not read, its scalars compressed) from Spark's
    column buffers, each partition from its stored block by the block's id, but one that
    was never stored (a job over the other partitions filled the cache), which goes
    through the cache's lineage, with the feeding tasks not yielding to training
    (SPARKTF_FEEDER_SCHED=normal)."""
    from pyspark.sql import functions as F

    if source == "cached":
        monkeypatch.setenv("SPARKTF_FEEDER_SCHED", "normal")

    sc = spark.sparkContext
    cluster = TFCluster.run(sc, feed_funs.dump_rows, {"out": str(tmp_path), "batch": 128}, 2,
                            input_mode=SPARK)
    i = F.col("id")
    df = spark.range(0, 5000, numPartitions=4).select(
        i, (i * 0.5).cast("float").alias("f"), (i % 3 == 0).alias("b"),
        (i % 100).cast("tinyint").alias("t"), (i % 1000).cast("smallint").alias("s"),
        (i * 7).cast("int").alias("n"),
        F.array(i * 0.25, i + 1.0).cast("array<float>").alias("af"),
        F.array(i * 1.5, -i, i + 0.5).alias("ad"),
        F.array(i, i * 2).cast("array<int>").alias("ai"),
        F.array(i * 3).alias("al"),
        (i % 4).cast("int").alias("k"))
    element_null = spark.createDataFrame([(1, [1.0, 2.0]), (2, [None, 3.0])],
                                         "id long, a array<float>")
    row_null = spark.createDataFrame([(1, [1.0, 2.0]), (2, None)], "id long, a array<float>")
    scalar_null = spark.createDataFrame([(1, 2.0), (2, None)], "id long, x double")
    cached = []

    def source_of(frame, stored=None):
        """The frame, or (cached) a cache of it with more columns, stored in full or only
        for the partitions `stored`."""
        if source == "pipelined":
            return frame
        frame = frame.select(F.array(F.lit(9.0)).alias("unread"), "*").cache()
        if stored is None:
            frame.count()
        else:
            sc.runJob(frame.rdd, lambda rows: [sum(1 for _ in rows)], partitions=stored)
        cached.append(frame)
        return frame.drop("unread")

    batch_size = spark.conf.get("spark.sql.inMemoryColumnarStorage.batchSize")
    spark.conf.set("spark.sql.inMemoryColumnarStorage.batchSize", "700")
    try:
        df = source_of(df, stored=[0, 1, 3])
        element_null, row_null, scalar_null = (
            source_of(d) for d in (element_null.coalesce(1), row_null.coalesce(1),
                                   scalar_null.coalesce(1)))
    finally:
        spark.conf.set("spark.sql.inMemoryColumnarStorage.batchSize", batch_size)
    with pytest.raises(Exception, match="column 'a' has null elements; fill or drop them"):
        cluster.train(element_null, feed_timeout=60, feeder=feeder)
    with pytest.raises(Exception, match="column 'a' has nulls; fill or drop them"):
        cluster.train(row_null, feed_timeout=60, feeder=feeder)
    with pytest.raises(Exception, match="column 'x' has nulls; fill or drop them"):
        cluster.train(scalar_null, feed_timeout=60, feeder=feeder)
    stats = cluster.train(df, feeder=feeder)
    cluster.shutdown(timeout=120)
    for frame in cached:
        frame.unpersist()
    assert stats["rows"] == 5000 and stats["feeder"] == feeder
    assert stats["cache_partitions"] == (4 if source == "cached" else 0)
    assert stats["cache_blocks"] == (3 if source == "cached" else 0)
    yielding = (feeder, source) == ("jvm", "pipelined")
    assert stats["yielded_partitions"] == (stats["partitions"] if yielding else 0)
    got = sorted((r for p in glob.glob(str(tmp_path / "rows-*.json")) for r in json.load(open(p))),
                 key=lambda r: r[0])
    ids = np.arange(5000)
    assert [r[0] for r in got] == ids.tolist()  # every row once
    f32 = np.float32
    expected = {
        1: (ids * 0.5).astype(f32).tolist(),
        2: (ids % 3 == 0).tolist(),
        3: (ids % 100).tolist(),
        4: (ids % 1000).tolist(),
        5: (ids * 7).tolist(),
        6: np.stack([ids * 0.25, ids + 1.0], axis=1).astype(f32).tolist(),
        7: np.stack([ids * 1.5, -ids, ids + 0.5], axis=1).tolist(),
        8: np.stack([ids, ids * 2], axis=1).tolist(),
        9: (ids * 3)[:, None].tolist(),
        10: (ids % 4).tolist(),
    }
    for column, values in expected.items():
        assert [r[column] for r in got] == values, column


def test_inference_results_align_with_partitions(spark, transport, clean_after):
    sc = spark.sparkContext
    cluster = TFCluster.run(sc, feed_funs.squares, {"batch": 37}, 2, input_mode=SPARK)
    rdd = sc.parallelize(range(1000), 7)
    results = cluster.inference(rdd).glom().collect()
    cluster.shutdown(timeout=120)
    assert results == [[x * x for x in part] for part in rdd.glom().collect()]


def test_wrong_result_count_is_a_clear_error(spark, clean_after):
    sc = spark.sparkContext
    cluster = TFCluster.run(sc, feed_funs.wrong_result_count, {}, 2, input_mode=SPARK)
    t0 = time.monotonic()
    with pytest.raises(Exception, match="exactly one result per input row"):
        cluster.inference(sc.parallelize(range(100), 2), feed_timeout=60).collect()
    assert time.monotonic() - t0 < 30
    with pytest.raises(errors.Aborted):
        cluster.shutdown(timeout=60)


def _listed_names() -> str:
    """What every local user can list: shm segment names and Unix socket paths."""
    with open("/proc/net/unix") as f:
        sockets = [fields[7] for fields in map(str.split, f.readlines()[1:])
                   if len(fields) > 7]
    return "\n".join(os.listdir("/dev/shm") + sockets)


def test_no_part_of_the_token_names_what_others_can_list(spark, tmp_path, clean_after):
    """The rings in /dev/shm and the agents' abstract sockets in /proc/net/unix are named by
    a random cluster id: no 8 consecutive hex digits of the cluster's secret token appear
    there (they once were the token's first 16)."""
    sc = spark.sparkContext
    cluster = TFCluster.run(sc, feed_funs.count_rows, {"out": str(tmp_path)}, 2,
                            input_mode=SPARK)
    try:
        cluster_id, token = cluster._feed_cluster_id, cluster._token
        deadline = time.monotonic() + 30
        while _listed_names().count(f"sparktf-{cluster_id}-") < 4:  # 2 rings, 2 sockets
            assert time.monotonic() < deadline, _listed_names()
            time.sleep(0.2)
        listed = _listed_names()
        assert not [token[i:i + 8] for i in range(len(token) - 7) if token[i:i + 8] in listed]
    finally:
        cluster.train(sc.parallelize([(1.0, 2.0)], 1))
        cluster.shutdown(timeout=120)


def test_consumer_exception_fails_feeding_fast(spark, tmp_path, clean_after):
    sc = spark.sparkContext
    cluster = TFCluster.run(sc, feed_funs.fail_after, {"batches": 2, "out": str(tmp_path)}, 2,
                            input_mode=SPARK)
    # 100 MB for each node: more than its ring holds, so the feed cannot end before the
    # consumer fails (with rows that all fit, it once finished first).
    rdd = sc.parallelize(range(4), 4).flatMap(
        lambda p: [(np.full(512, i, np.float32),) for i in range(25000)])
    with pytest.raises(errors.Aborted, match="consumer exploded on purpose"):
        cluster.train(rdd, feed_timeout=600)
    raised = time.time()
    failed = min(float(p.read_text()) for p in tmp_path.glob("failed-*"))
    # README: the feeding tasks fail "within a second" of the consumer's exception; the
    # stated margin of 2 s is for Spark failing the job and the driver hearing of it.
    print(f"consumer exception to train() raising: {raised - failed:.2f} s")
    assert raised - failed < 1 + 2
    with pytest.raises(errors.Aborted, match="consumer exploded on purpose"):
        cluster.shutdown(timeout=60)


def test_terminate_mid_feed_skips_the_rest(spark, tmp_path, clean_after):
    sc = spark.sparkContext
    cluster = TFCluster.run(sc, feed_funs.terminate_after, {"out": str(tmp_path), "batches": 3},
                            2, input_mode=SPARK)
    # 100 MB for each node: more than its ring holds, so some rows must wait
    # for the consumer, which terminates instead.
    rdd = sc.parallelize(range(4), 4).flatMap(
        lambda p: [(np.full(512, i, np.float32),) for i in range(25000)])
    stats = cluster.train(rdd)
    cluster.shutdown(timeout=60)
    seen = node_results(tmp_path)
    assert [r["rows"] for r in seen.values()] == [30, 30]
    assert stats["skipped"] > 0 and stats["rows"] + stats["skipped"] == 100000


def test_skewed_feed_ends_mwms_in_lockstep(spark, tmp_path, clean_after):
    """Worker 0 gets 10x the rows of worker 1; both run the same number of
    steps, and the rows dropped to keep them in step are reported."""
    sc = spark.sparkContext
    args = {"out": str(tmp_path), "batch": 10, "features": 4, "classes": 2}
    cluster = TFCluster.run(sc, feed_funs.mwms_keras, args, 2, input_mode=SPARK)
    sizes = [1000, 100]
    rdd = sc.parallelize(range(2), 2).flatMap(
        lambda p: [(np.full(4, i % 2, np.float32), i % 2) for i in range(sizes[p])])
    cluster.train(rdd)
    cluster.shutdown(timeout=300)
    seen = node_results(tmp_path)
    assert [r["steps"] for r in seen.values()] == [10, 10]
    assert cluster.dropped_records == 900
    stats = cluster.feed_stats()["input"]
    assert stats["delivered"] == 1100 and stats["consumed"] == 200 and stats["dropped"] == 900


@pytest.fixture(scope="module")
def digits_split():
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    return (x[:1500], d.target[:1500]), (x[1500:], d.target[1500:])


def test_mwms_digits_from_rdd(spark, tmp_path, digits_split, clean_after):
    (x, y), (tx, ty) = digits_split
    sc = spark.sparkContext
    args = {"out": str(tmp_path), "batch": 32, "features": 64, "classes": 10, "hidden": 64,
            "test": [tx.tolist(), ty.tolist()]}
    cluster = TFCluster.run(sc, feed_funs.mwms_keras, args, 2, input_mode=SPARK)
    rdd = sc.parallelize(list(zip(x, y.tolist())), 4)
    cluster.train(rdd, num_epochs=8)
    cluster.shutdown(timeout=300)
    seen = node_results(tmp_path)
    steps = [r["steps"] for r in seen.values()]
    assert steps[0] == steps[1] >= 150  # 12000 rows, 2 workers, batches of 32
    assert min(r["accuracy"] for r in seen.values()) > 0.85  # held-out digits; chance is 0.1


def test_mwms_digits_from_dataframe_with_input_mapping(spark, tmp_path, digits_split,
                                                       clean_after):
    (x, y), (tx, ty) = digits_split
    sc = spark.sparkContext
    args = {"out": str(tmp_path), "batch": 32, "features": 64, "classes": 10, "hidden": 64,
            "input_mapping": {"pixels": "x", "label": "y"}, "test": [tx.tolist(), ty.tolist()]}
    cluster = TFCluster.run(sc, feed_funs.mwms_keras, args, 2, input_mode=SPARK)
    df = spark.createDataFrame([(row.tolist(), int(label)) for row, label in zip(x, y)],
                               "pixels array<float>, label int").repartition(4)
    cluster.train(df, num_epochs=8)
    cluster.shutdown(timeout=300)
    seen = node_results(tmp_path)
    steps = [r["steps"] for r in seen.values()]
    assert steps[0] == steps[1] >= 150  # 12000 rows, 2 workers, batches of 32
    assert min(r["accuracy"] for r in seen.values()) > 0.85  # held-out digits; chance is 0.1


def test_consumer_killed_mid_feed_fails_fast_and_leaves_nothing(spark, tmp_path, clean_after):
    import signal
    import threading

    sc = spark.sparkContext
    cluster = TFCluster.run(sc, feed_funs.slow_reader, {"out": str(tmp_path)}, 2,
                            input_mode=SPARK)

    killed = []

    def kill_worker_0():
        pid_file = tmp_path / "pid-0"
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # let the feed fill its ring and block
        killed.append(time.time())
        os.kill(int(pid_file.read_text()), signal.SIGKILL)

    killer = threading.Thread(target=kill_worker_0)
    killer.start()
    # 4 KiB rows, 320 MB in all: more than the 64 MiB ring holds, so feeding blocks
    rdd = sc.parallelize(range(4), 4).flatMap(
        lambda p: ((np.zeros(1024, np.float32),) for i in range(20000)))
    with pytest.raises(errors.Aborted, match="signal 9|killed"):
        cluster.train(rdd, feed_timeout=600)
    raised = time.time()
    killer.join()
    # The coordinator aborts the cluster once the agent reports the kill, and the driver
    # cancels the feeding job within 100 ms of that (docs/reliability.md), whatever
    # spark.task.maxFailures is (before, the job waited for 4 retries of each task: 2-4 s
    # on a loaded machine). The README's promise is within a second; tested at under 3 s,
    # as for an exception in the consumer (test_consumer_exception_fails_feeding_fast).
    print(f"consumer killed to train() raising: {raised - killed[0]:.2f} s")
    assert raised - killed[0] < 1 + 2
    with pytest.raises(errors.Aborted):
        cluster.shutdown(timeout=60)


@pytest.mark.timeout(600)
def test_train_carries_on_through_a_restart_feeding_the_epoch_again(spark, tmp_path,
                                                                   clean_after):
    """restarts=1, InputMode.SPARK: worker 1 is killed during epoch 1 of 2; train() does
    not raise: the cluster restarts and generation 1 is fed epoch 1 again from its first
    partition, then epoch 2 — each row exactly once per epoch (the rings are fresh, so
    nothing of generation 0 reaches it)."""
    sc = spark.sparkContext
    cluster = TFCluster.run(sc, feed_funs.count_rows_dies_once,
                            {"out": str(tmp_path), "die_after": 50}, 2,
                            input_mode=SPARK, restarts=1, restart_backoff=0.2)
    rdd = sc.parallelize(range(3000), 4).map(lambda i: (float(i), 1.0))
    fed = cluster.train(rdd, num_epochs=2)
    cluster.shutdown(timeout=300)
    assert cluster.generation == 1
    gen1 = [json.load(open(p)) for p in sorted(tmp_path.glob("node-1-*.json"))]
    assert len(gen1) == 2
    assert sum(r["rows"] for r in gen1) == 6000
    assert sum(r["sum"] for r in gen1) == 2 * sum(range(3000))
    assert fed["rows"] == 6000 and fed["skipped"] == 0, fed


@pytest.mark.timeout(300)
def test_inference_after_a_restart_returns_one_result_per_row_in_order(spark, clean_after):
    """A node dies before any feed; the next inference() restarts the cluster first, and
    its results are exactly one per input row, in order."""
    sc = spark.sparkContext
    cluster = TFCluster.run(sc, feed_funs.squares_dies_once, {"batch": 37}, 2,
                            input_mode=SPARK, restarts=1, restart_backoff=0.2)
    deadline = time.monotonic() + 60
    while not cluster.status()["aborted"]:
        assert time.monotonic() < deadline, cluster.status()
        time.sleep(0.2)
    rdd = sc.parallelize(range(1000), 7)
    results = cluster.inference(rdd).glom().collect()
    assert cluster.generation == 1
    cluster.shutdown(timeout=120)
    assert results == [[x * x for x in part] for part in rdd.glom().collect()]


@pytest.mark.timeout(600)
def test_a_restart_does_not_feed_again_the_epochs_the_nodes_had_taken(spark, tmp_path,
                                                                     clean_after):
    """3 epochs of 1500 rows per worker; worker 1 dies in epoch 3 (after 3150 rows, its
    progress reported): epochs 1 and 2 were taken in full by both workers, so generation 1
    is fed epoch 3 only — 3000 rows, each once."""
    sc = spark.sparkContext
    cluster = TFCluster.run(sc, feed_funs.count_rows_dies_once,
                            {"out": str(tmp_path), "die_after": 3100, "pause": 1.5}, 2,
                            input_mode=SPARK, restarts=1, restart_backoff=0.2)
    rdd = sc.parallelize(range(3000), 4).map(lambda i: (float(i), 1.0))
    cluster.train(rdd, num_epochs=3)
    cluster.shutdown(timeout=300)
    assert cluster.generation == 1
    gen1 = [json.load(open(p)) for p in sorted(tmp_path.glob("node-1-*.json"))]
    assert sorted(r["rows"] for r in gen1) == [1500, 1500], gen1
    assert sum(r["sum"] for r in gen1) == sum(range(3000))


def test_train_prints_progress_lines_with_the_chiefs_reports(spark, tmp_path, clean_after,
                                                             capfd):
    """progress=0.3: while train() feeds, lines name the epoch, the rows the workers have
    taken (of the total once the first epoch is known; train() returns once the rows are
    in the nodes' rings, before they are all taken) and the chief's step and loss from
    ctx.report; the status holds each worker's last (forced) report."""
    sc = spark.sparkContext
    cluster = TFCluster.run(sc, feed_funs.reports_steps, {"out": str(tmp_path)}, 2,
                            input_mode=SPARK, progress=0.3, node_output=False)
    # 1 ms per row to make: feeding takes about 4 s, while the workers keep up
    rdd = sc.parallelize(range(4000), 4).map(lambda i: (time.sleep(0.001), float(i))[1:])
    fed = cluster.train(rdd, num_epochs=2)
    cluster.shutdown(timeout=120)
    assert fed["rows"] == 8000
    lines = [x for x in capfd.readouterr().err.splitlines() if x.startswith("sparktf: epoch")]
    assert len(lines) >= 3, lines
    taken = [int(re.search(r": ([\d,]+)(?: of [\d,]+)? rows taken", x).group(1).replace(",", ""))
             for x in lines]
    assert taken == sorted(taken) and taken[-1] <= 8000, lines
    assert re.match(r"sparktf: epoch 2/2: [\d,]+ of 8,000 rows taken; worker:0 at step [\d,]+",
                    lines[-1]), lines
    assert sum(cluster._taken().values()) == 8000  # in the end, by the workers' reports
    assert any(re.search(r"worker:0 at step [\d,]+ \([\d.]+ steps/s\), loss [\d.e-]+$", x)
               for x in lines), lines
    for node in cluster.status()["nodes"]:
        steps = int((tmp_path / f"steps-{node['executor_id']}").read_text())
        training = node["training"]
        assert training["step"] == steps > 0, training
        assert training["metrics"] == {"loss": pytest.approx(1.0 / steps)}, training
        assert training["steps_per_sec"] > 0, training
