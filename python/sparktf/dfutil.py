"""Spark DataFrames <-> TFRecord files of tf.train.Example, without Hadoop jars.

Executors write and read with the native codec: a partition arrives as Arrow
record batches (``DataFrame.mapInArrow``), its columns go to C++ as buffers,
and every row is encoded or decoded there.

Type mapping (what is lossy is marked):

=========================  ===================  ==========================
Spark column               Feature              read back as
=========================  ===================  ==========================
float, double              FloatList            float (*double -> float32*)
byte/short/int/long, bool  Int64List            long (*bool -> 0/1 long*)
string                     BytesList (UTF-8)    string
binary                     BytesList            binary if in binary_features,
                                                else string (*must be UTF-8*)
array of the above         list of the same     array of the same
null scalar / null array   feature left out     null
empty array                empty list           empty array
=========================  ===================  ==========================

With an inferred schema, a feature that has at most one value in every record
reads back as a scalar: an array column whose arrays all have one element
comes back as a scalar (pass ``schema`` to keep it an array). Elements that
are null inside an array cannot be stored and are an error.
"""

from __future__ import annotations

import os
import uuid
import weakref
from typing import Iterable, Iterator, Sequence

import numpy as np

from sparktf import _native, errors
from sparktf import records as _records

__all__ = ["saveAsTFRecords", "loadTFRecords", "infer_spark_schema", "toTFExample",
           "fromTFExample"]

# DataFrame -> the input_dir loadTFRecords read it from (TFEstimator trains on those files
# instead of writing the DataFrame out again; TFoS's isLoadedDF).
loaded_from = weakref.WeakKeyDictionary()

_SUFFIX = {"": ".tfrecord", "none": ".tfrecord", "gzip": ".tfrecord.gz",
           "zlib": ".tfrecord.zlib"}


def _qualify(path) -> str:
    """A URI every executor resolves the same way: URIs stay as they are, and
    local paths become absolute (they must name a shared mount)."""
    path = os.fspath(path)
    return path if "://" in path else os.path.abspath(path)


# ---- DataFrame -> TFRecords ---------------------------------------------------

def _arrow_flat(arr, where: str):
    """(kind, values, bytes_data, bytes_offsets) of a primitive Arrow array."""
    import pyarrow as pa

    t = arr.type
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        vals = arr.cast(pa.float32()) if not pa.types.is_float32(t) else arr
        return "float", vals.fill_null(0).to_numpy(zero_copy_only=False), None, None
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        if pa.types.is_uint64(t):
            mx = arr.fill_null(0).to_numpy(zero_copy_only=False).max(initial=0)
            if int(mx) > np.iinfo(np.int64).max:
                raise errors.InvalidArgument(f"{where}: {mx} does not fit int64")
        vals = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        return "int64", vals, None, None
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t):
        arr = arr.cast(pa.large_binary())
        _, offsets, data = arr.buffers()
        offs = np.frombuffer(offsets, dtype=np.int64)[arr.offset:arr.offset + len(arr) + 1]
        return "bytes", None, data if data is not None else b"", offs
    raise errors.InvalidArgument(
        f"{where}: Spark/Arrow type {t} is not supported; cast it to a number, string or "
        "binary (or an array of them) first")


def _arrow_columns(batch) -> list[tuple]:
    """Column tuples for RecordWriter.write_columns from an Arrow record batch."""
    import pyarrow as pa

    out = []
    for name, arr in zip(batch.schema.names, batch.columns):
        where = f"column '{name}'"
        valid = None
        if arr.null_count:
            valid = arr.is_valid().to_numpy(zero_copy_only=False).astype(np.uint8)
        row_offsets = None
        if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
            row_offsets = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
            child = arr.values
            if pa.types.is_list(child.type) or pa.types.is_large_list(child.type):
                raise errors.InvalidArgument(f"{where}: nested arrays are not supported")
            if child.null_count:
                raise errors.InvalidArgument(
                    f"{where}: arrays contain null elements, which a Feature cannot hold")
            arr = child
        kind, values, data, offsets = _arrow_flat(arr, where)
        out.append((name, kind, values, data, offsets, row_offsets, valid))
    return out


def saveAsTFRecords(df, output_dir: str, num_shards: int | None = None,
                    compression: str | None = None, mode: str = "error") -> int:
    """Writes ``df`` as TFRecord files of tf.train.Example under ``output_dir``
    (a shared local path, ``hdfs://...`` or ``s3://...``), from the executors:
    one file per partition, or ``num_shards`` files (repartitioning first).
    Files are named ``part-r-NNNNN.tfrecord`` (``.gz`` or ``.zlib`` with
    compression). Returns the number of records.

    The write is committed as a whole, like Spark's file output committers:
    each task attempt writes under ``output_dir/_temporary/``, and only when
    every task succeeded does the driver move the winning attempts' files into
    place and write ``_SUCCESS``. A failed or retried task never leaves a
    duplicate or partial shard visible; a failed job leaves no output and
    raises. ``mode="error"`` (the default, as in Spark) refuses a directory
    that already holds output; ``mode="overwrite"`` replaces it."""
    from pyspark import TaskContext

    out_dir = _qualify(output_dir)
    comp = (compression or "").lower()
    if comp not in _SUFFIX:
        raise errors.InvalidArgument(f"unknown compression {compression!r} "
                                     "(expected None, 'GZIP' or 'ZLIB')")
    if num_shards is not None:
        if int(num_shards) < 1:
            raise errors.InvalidArgument(f"num_shards must be >= 1, got {num_shards}")
        df = df.repartition(int(num_shards))
    suffix = _SUFFIX[comp]
    job_id = uuid.uuid4().hex[:12]
    committer = _native.OutputCommitter.make(out_dir, job_id, mode)
    committer.setup_job()

    def write_partition(batches: Iterator) -> Iterator:
        import pyarrow as pa

        ctx = TaskContext.get()
        part, attempt = ctx.partitionId(), ctx.attemptNumber()
        name = f"part-r-{part:05d}{suffix}"
        # Refused once the job is over: this worker may outlive its task and the job.
        writer = _native.RecordWriter.for_task_attempt(out_dir, job_id, part, attempt, name,
                                                       comp)
        n = 0
        try:
            for batch in batches:
                n += writer.write_columns(_arrow_columns(batch), batch.num_rows)
        except BaseException:
            writer.abort()
            raise
        writer.close()
        uri = _native.OutputCommitter.task_attempt_uri(out_dir, job_id, part, attempt, name)
        yield pa.RecordBatch.from_pydict({"file": [uri], "records": [n]})

    sc = df.sparkSession.sparkContext
    group = f"sparktf-save-{job_id}"
    previous_group = sc.getLocalProperty("spark.jobGroup.id")
    sc.setJobGroup(group, f"saveAsTFRecords to {out_dir}", interruptOnCancel=True)
    try:
        written = df.mapInArrow(write_partition, "file string, records long").collect()
        committer.commit_job([row["file"] for row in written])
    except BaseException as e:
        # Tasks of the failed job that are still running must stop before the clean-up,
        # or they would write after it.
        sc.cancelJobGroup(group)
        _wait_for_tasks(sc, group, _STRAGGLER_TIMEOUT)
        committer.abort_job()
        if isinstance(e, errors.SparktfError):
            raise
        raise errors.Aborted(f"saveAsTFRecords to {out_dir} failed; no output was left "
                             f"there: {e}") from e
    finally:
        sc.setLocalProperty("spark.jobGroup.id", previous_group)
    return int(sum(row["records"] for row in written))


_STRAGGLER_TIMEOUT = 30.0


def _wait_for_tasks(sc, group: str, timeout: float) -> None:
    """Waits until no task of the jobs of `group` is running (or `timeout` passes)."""
    import time

    tracker = sc.statusTracker()
    stages = set()
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        if info is not None:
            stages.update(info.stageIds)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        infos = [tracker.getStageInfo(s) for s in stages]
        if all(i is None or i.numActiveTasks == 0 for i in infos):
            return
        time.sleep(0.1)


def toTFExample(row: dict) -> bytes:
    """One row (a dict or Row) as a serialized tf.train.Example (for RDD code;
    DataFrames should use :func:`saveAsTFRecords`, which does not loop in Python)."""
    d = row.asDict() if hasattr(row, "asDict") else dict(row)
    return _native.encode_example(d)


def fromTFExample(data: bytes, binary_features: Sequence[str] = ()) -> dict:
    """A serialized Example as a dict of Python values (scalars unwrapped)."""
    out = {}
    for name, vals in _native.decode_example(data).items():
        if vals is None:
            out[name] = None
            continue
        if isinstance(vals, list) and name not in binary_features:
            vals = [v.decode("utf-8") for v in vals]
        items = vals.tolist() if hasattr(vals, "tolist") else vals
        out[name] = items[0] if len(items) == 1 else items
    return out


# ---- TFRecords -> DataFrame ---------------------------------------------------

def _spark_type(dtype: str, binary: bool):
    from pyspark.sql import types as T

    return {"int64": T.LongType(), "float32": T.FloatType()}.get(
        dtype, T.BinaryType() if binary else T.StringType())


def infer_spark_schema(paths, binary_features: Sequence[str] = (), compression=None,
                       max_records: int | None = 10000):
    """A Spark StructType for the Examples in ``paths`` (first ``max_records``):
    features with at most one value per record become nullable scalars, the
    rest arrays; BytesList is string unless named in ``binary_features``."""
    from pyspark.sql import types as T

    files = _records.list_files(paths)
    if not files:
        raise errors.NotFound(f"no TFRecord files in {paths!r}")
    limit = (1 << 63) if max_records is None else int(max_records)
    _, rows = _native.infer_schema(files, compression, limit)
    fields = []
    for name, dtype, _var_len, _shape, _present, _min_len, max_len in rows:
        t = _spark_type(dtype, name in binary_features)
        fields.append(T.StructField(name, t if max_len <= 1 else T.ArrayType(t, False), True))
    return T.StructType(fields)


def _plan(schema) -> list[tuple]:
    """(name, native dtype, is_array, arrow type) for each field of a StructType."""
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import to_arrow_type

    plan = []
    for f in schema.fields:
        t = f.dataType
        is_array = isinstance(t, T.ArrayType)
        elem = t.elementType if is_array else t
        if isinstance(elem, (T.FloatType, T.DoubleType, T.DecimalType)):
            dtype = "float32"
        elif isinstance(elem, (T.LongType, T.IntegerType, T.ShortType, T.ByteType,
                               T.BooleanType)):
            dtype = "int64"
        elif isinstance(elem, (T.StringType, T.BinaryType)):
            dtype = "bytes"
        else:
            raise errors.InvalidArgument(f"field '{f.name}': {t.simpleString()} cannot be "
                                         "read from a tf.train.Example")
        plan.append((f.name, dtype, is_array, to_arrow_type(t)))
    return plan


def _file_to_arrow(path: str, plan: list[tuple], arrow_schema, compression):
    import pyarrow as pa

    rows_schema = [(name, dtype, True, [], None) for name, dtype, _, _ in plan]
    rows, cols = _native.read_columns([path], rows_schema, compression)
    arrays = []
    for c, (name, dtype, is_array, arrow_type) in zip(cols, plan):
        splits, present = c["row_splits"], c["present"].astype(bool)
        values = c["values"]
        vals = pa.array(values, type=pa.binary()) if dtype == "bytes" else pa.array(values)
        if is_array:
            offsets = pa.array(splits.astype(np.int32))
            arr = pa.ListArray.from_arrays(offsets, vals, mask=pa.array(~present))
        else:
            lengths = np.diff(splits)
            if (lengths > 1).any():
                bad = int(np.argmax(lengths > 1))
                raise errors.InvalidArgument(
                    f"{path}: record {bad}: feature '{name}' has {int(lengths[bad])} values "
                    "but the schema says it is a scalar (use an ArrayType)")
            has = lengths == 1
            if not has.any():
                arr = pa.nulls(rows, type=vals.type)
            else:
                idx = pa.array(np.where(has, splits[:-1], 0), mask=~has)
                arr = vals.take(idx)
        try:
            arrays.append(arr.cast(arrow_type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise errors.InvalidArgument(f"{path}: feature '{name}': {e}") from e
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


def loadTFRecords(spark_or_sc, input_dir, schema=None, binary_features: Sequence[str] = (),
                  compression: str | None = None):
    """Reads TFRecord files of tf.train.Example as a DataFrame, one file per
    task. ``schema`` (a StructType or DDL string) defaults to
    :func:`infer_spark_schema`."""
    import pyarrow as pa
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType, _parse_datatype_string

    spark = spark_or_sc if isinstance(spark_or_sc, SparkSession) else \
        SparkSession.builder.getOrCreate()
    paths = [_qualify(p) for p in ([input_dir] if isinstance(input_dir, (str, os.PathLike))
                                   else list(input_dir))]
    files = _records.list_files(paths)
    if not files:
        raise errors.NotFound(f"no TFRecord files in {input_dir!r}")
    if schema is None:
        schema = infer_spark_schema(files, binary_features, compression)
    elif isinstance(schema, str):
        schema = _parse_datatype_string(schema)
    if not isinstance(schema, StructType):
        raise errors.InvalidArgument(f"schema must be a StructType or DDL string, got {schema!r}")
    plan = _plan(schema)
    arrow_schema = pa.schema([pa.field(name, t) for name, _, _, t in plan])

    def read(batches: Iterable) -> Iterator:
        for batch in batches:
            for file_id in batch.column(0).to_pylist():
                yield _file_to_arrow(files[file_id], plan, arrow_schema, compression)

    ids = spark.range(0, len(files), 1, numPartitions=len(files))
    df = ids.mapInArrow(read, schema)
    loaded_from[df] = input_dir
    return df
