"""dfutil on a real multi-executor Spark (local-cluster: separate executor JVMs
and Python workers), round trips and what TensorFlow sees."""

import math
import os

import numpy as np
import pytest
from pyspark.sql import Row
from pyspark.sql import types as T

from sparktf import dfutil, errors, fs
from sparktf import records as r

pytestmark = pytest.mark.spark

SCHEMA = T.StructType([
    T.StructField("id", T.LongType()),
    T.StructField("x", T.DoubleType()),
    T.StructField("f", T.FloatType()),
    T.StructField("flag", T.BooleanType()),
    T.StructField("small", T.IntegerType()),
    T.StructField("name", T.StringType()),
    T.StructField("raw", T.BinaryType()),
    T.StructField("vec", T.ArrayType(T.DoubleType())),
    T.StructField("tags", T.ArrayType(T.StringType())),
    T.StructField("ints", T.ArrayType(T.LongType())),
])


def make_rows(n):
    rows = []
    for i in range(n):
        rows.append(Row(
            id=i, x=i / 3.0 if i % 7 else None, f=float(i) * 0.5, flag=bool(i % 2),
            small=-i, name=f"name-{i}é" if i % 5 else None,
            raw=bytes([i % 256, 0, 255]) if i % 3 else None,
            vec=[float(i), -1.0] if i % 4 else ([] if i % 8 else None),
            tags=["a"] * (i % 3), ints=list(range(i % 5))))
    return rows


@pytest.fixture(scope="module")
def df(spark):
    return spark.createDataFrame(make_rows(200), SCHEMA).repartition(3)


def test_executors_are_separate_processes(spark):
    pids = spark.sparkContext.parallelize(range(8), 8).map(lambda _: os.getpid()).distinct()
    assert len(pids.collect()) >= 2
    assert spark.sparkContext.master.startswith("local-cluster")


def names(uri):
    return [os.path.basename(i.uri) for i in fs.listdir(uri)]


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_round_trip_with_inferred_schema(spark, df, store, compression):
    out = f"{store}/tfr"
    n = dfutil.saveAsTFRecords(df, out, compression=compression)
    assert n == 200
    files = names(out)
    suffix = ".tfrecord.gz" if compression else ".tfrecord"
    assert files == ["_SUCCESS"] + [f"part-r-0000{i}{suffix}" for i in range(3)]
    back = dfutil.loadTFRecords(spark, out, binary_features=["raw"])
    types = {f.name: f.dataType for f in back.schema.fields}
    assert types["id"] == T.LongType() and types["x"] == T.FloatType()
    assert types["flag"] == T.LongType() and types["small"] == T.LongType()
    assert types["name"] == T.StringType() and types["raw"] == T.BinaryType()
    assert types["vec"] == T.ArrayType(T.FloatType(), False)
    assert types["tags"] == T.ArrayType(T.StringType(), False)
    got = {row["id"]: row for row in back.collect()}
    assert len(got) == 200
    for want in make_rows(200):
        g = got[want.id]
        assert (g["x"] is None) == (want.x is None)
        if want.x is not None:
            assert math.isclose(g["x"], want.x, rel_tol=1e-6)
        assert g["f"] == want.f and g["flag"] == int(want.flag) and g["small"] == want.small
        assert g["name"] == want.name and g["raw"] == (bytearray(want.raw) if want.raw else None)
        assert g["vec"] == want.vec  # None stays None, [] stays []
        assert g["tags"] == want.tags and g["ints"] == want.ints


def test_num_shards_and_explicit_schema(spark, df, tmp_path):
    out = str(tmp_path / "sharded")
    dfutil.saveAsTFRecords(df, out, num_shards=5, compression="ZLIB")
    files = [f for f in os.listdir(out) if f.startswith("part-")]
    assert len(files) == 5
    assert r.count_records(out) == 200
    back = dfutil.loadTFRecords(spark, out, schema="id long, ints array<long>, name string")
    assert back.count() == 200
    row = back.where("id = 7").collect()[0]
    assert row["ints"] == [0, 1] and row["name"] == "name-7é"


def test_tensorflow_reads_what_spark_wrote(df, tmp_path):
    import tensorflow as tf

    out = str(tmp_path / "tfread")
    dfutil.saveAsTFRecords(df, out, num_shards=2)
    ds = tf.data.TFRecordDataset(r.list_files(out)).batch(500)
    parsed = tf.io.parse_example(next(iter(ds)), {
        "id": tf.io.FixedLenFeature([], tf.int64),
        "f": tf.io.FixedLenFeature([], tf.float32),
        "ints": tf.io.RaggedFeature(tf.int64)})
    ids = parsed["id"].numpy()
    assert sorted(ids.tolist()) == list(range(200))
    assert np.allclose(parsed["f"].numpy(), ids * 0.5)
    assert [len(x) for x in parsed["ints"].to_list()] == [i % 5 for i in ids]


def test_unsupported_and_bad_input(spark, tmp_path):
    nested = spark.createDataFrame([([[1, 2]],)], "a array<array<long>>")
    with pytest.raises(Exception, match="nested arrays are not supported"):
        dfutil.saveAsTFRecords(nested, str(tmp_path / "n"))
    null_elems = spark.createDataFrame([([1.0, None],)], "a array<double>")
    with pytest.raises(Exception, match="null elements"):
        dfutil.saveAsTFRecords(null_elems, str(tmp_path / "e"))
    with pytest.raises(errors.NotFound):
        dfutil.loadTFRecords(spark, str(tmp_path / "missing"))
    with pytest.raises(errors.InvalidArgument, match="compression"):
        dfutil.saveAsTFRecords(nested, str(tmp_path / "c"), compression="LZO")


def _flaky(fail_attempts):
    """A mapInArrow function that passes rows through, but in partition 1 raises after
    the first batch on attempts < fail_attempts (so a writer has begun its shard)."""
    def fn(batches):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        for i, batch in enumerate(batches):
            if i == 1 and ctx.partitionId() == 1 and ctx.attemptNumber() < fail_attempts:
                raise RuntimeError(f"deliberate failure of attempt {ctx.attemptNumber()}")
            yield batch
    return fn


def _batched(spark, n=3000):
    # Several Arrow batches per partition, so a failure comes mid-shard.
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "200")
    return spark.range(0, n, 1, numPartitions=3).selectExpr("id", "id * 0.5 as x")


def test_retried_task_leaves_no_duplicate_or_partial_shard(spark, store):
    src = _batched(spark)
    out = f"{store}/retried"
    flaky = src.mapInArrow(_flaky(fail_attempts=1), src.schema)
    assert dfutil.saveAsTFRecords(flaky, out) == 3000
    assert names(out) == ["_SUCCESS", "part-r-00000.tfrecord", "part-r-00001.tfrecord",
                          "part-r-00002.tfrecord"]
    ids = r.read_columns(out, {"id": r.FixedLen("int64")})["id"]
    assert sorted(ids.tolist()) == list(range(3000))


def test_failed_job_leaves_no_output_and_says_so(spark, store):
    src = _batched(spark)
    out = f"{store}/failed"
    always = src.mapInArrow(_flaky(fail_attempts=99), src.schema)
    with pytest.raises(errors.Aborted, match="no output was left") as e:
        dfutil.saveAsTFRecords(always, out)
    assert "deliberate failure" in str(e.value)
    assert not fs.exists(out) or names(out) == []
    # The directory is usable afterwards; an existing output is refused unless overwritten.
    assert dfutil.saveAsTFRecords(src, out) == 3000
    with pytest.raises(errors.AlreadyExists, match="overwrite"):
        dfutil.saveAsTFRecords(src, out)
    assert dfutil.saveAsTFRecords(src.limit(10).repartition(1), out, mode="overwrite") == 10
    assert names(out) == ["_SUCCESS", "part-r-00000.tfrecord"]
    assert r.count_records(out) == 10


def test_an_attempt_that_outlives_its_aborted_job_leaves_nothing(store):
    """What a Python worker that Spark has not yet killed does after the driver aborted the
    job, on each store: a writer that was open finishes (or dies), one that begins is
    refused; neither leaves anything below the output directory."""
    from sparktf import _native

    out = f"{store}/straggler"
    committer = _native.OutputCommitter.make(out, "job1", "error")
    committer.setup_job()
    open_one = _native.RecordWriter.for_task_attempt(out, "job1", 0, 0, "part-r-00000.tfrecord")
    open_one.write(b"written before the abort")
    committer.abort_job()
    with pytest.raises(errors.SparktfError):
        open_one.write(b"after")
        open_one.close()
    with pytest.raises(errors.Aborted, match="job1 .* is over"):
        _native.RecordWriter.for_task_attempt(out, "job1", 1, 3, "part-r-00001.tfrecord")
    assert not fs.exists(out) or names(out) == []


def test_load_from_remote_stores(spark, df, store):
    out = f"{store}/load"
    dfutil.saveAsTFRecords(df, out, num_shards=2, compression="GZIP")
    back = dfutil.loadTFRecords(spark, out, schema="id long, ints array<long>")
    assert sorted(row["id"] for row in back.collect()) == list(range(200))
