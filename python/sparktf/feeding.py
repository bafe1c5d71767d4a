"""The feeding tasks of InputMode.SPARK (they run on executors).

A partition goes to a training worker on its task's host while that worker has fewer
than its share of the job's partitions (the coordinator decides: _open_session). The native
RowBatcher reads a
partition's rows as PySpark stores them, pickled, without making Python
objects of them (pickled_batches); else it pulls rows from the partition's
iterator. DataFrames come as Arrow record batches, which the core reads
through the Arrow C data interface (no Python object per batch or value). The
task pushes batches of about 1 MiB through a native FeedSession: into the
node's shared-memory ring when the node runs on this host, over TCP to its
agent otherwise. Nothing here loops over values in Python. On the driver,
``SPARKTF_FEED_TRANSPORT=tcp`` forces TCP and ``SPARKTF_FEED_PLACEMENT=modulo``
sends partition i to worker i mod W (tests, benchmarks).
"""

from __future__ import annotations

import gc
import json
import pickle

from sparktf import errors

TARGET_BATCH_BYTES = 1 << 20  # batches of about 1 MiB
# Pickled row batches larger than this are unpickled and cut in Python, so
# that no pushed batch comes near a ring's message limit (3/8 of its 64 MiB).
MAX_PICKLED_BYTES = 8 << 20


def _open_session(job: str, index: int, inference: bool):
    """The FeedSession of partition `index` (`job`: the feeding job's meta as JSON). The
    core chooses the node (sparktf/node/feed_task.h, OpenPartitionSession): one on this
    task's host while it has fewer than its share of meta["partitions"] (FEED_ASSIGN,
    docs/protocol.md; a retried task where its partition went before), else node index
    mod W with placement "modulo"; shared memory to a node on this host, TCP otherwise.
    session.stopped: that node has finished reading (its map_fun returned), so the rows
    are skipped. Its errors name the partition and node."""
    from sparktf import _native

    return _native.FeedSession(job, index, inference)


def _with_node(session, e: Exception) -> Exception:
    return type(e)(f"{session.context}: {e}")


def pickled_batches(rdd):
    """The RDD of `rdd`'s stored row batches, each a pickled list of rows
    (bytes), when PySpark keeps its rows so and reading them needs nothing to
    run first (a source RDD, or a cached one); None otherwise. Feeding tasks
    read these pickles in C++ (RowBatcher.append_pickled): no Python object
    per value."""
    from pyspark import RDD
    from pyspark.rdd import PipelinedRDD
    from pyspark.serializers import (BatchedSerializer, CloudPickleSerializer,
                                     NoOpSerializer, PickleSerializer)

    ser = getattr(rdd, "_jrdd_deserializer", None)
    if not isinstance(ser, BatchedSerializer) or \
            type(ser.serializer) not in (PickleSerializer, CloudPickleSerializer):
        return None
    if isinstance(rdd, PipelinedRDD) and not rdd.is_cached:
        return None  # its functions run in the feeding task itself instead
    return RDD(rdd._jrdd, rdd.ctx, NoOpSerializer())


def _unpickle(blob: bytes) -> list:
    return pickle.loads(blob, encoding="bytes")  # as PySpark's pickle serializers


def _count_rows(items, pickled: bool) -> int:
    if pickled:
        return sum(len(_unpickle(blob)) for blob in items)
    return sum(1 for _ in items)


def _push_rows(session, items, pickled: bool = False,
               pickles: dict | None = None) -> tuple[int, int]:
    """Pushes a partition; returns (rows pushed, rows skipped because the
    consumer stopped reading). `items`: the rows, or with `pickled` the
    partition's pickled row batches (see pickled_batches). The native batcher
    reads the pickles itself (unpickling in Python only those that hold other
    values, or are huge) or pulls rows from the iterator, releasing each once
    appended; rows leave as batches of about TARGET_BATCH_BYTES. `pickles` counts
    the pickles read in C++ ("native") and those unpickled in Python ("python")."""
    from sparktf import _native

    batcher = _native.RowBatcher()
    it = iter(items)
    # The cyclic GC would scan the live objects again and again while Spark
    # unpickles the rows; rows hold no reference cycles.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for blob in (it if pickled else [None]):
            rows = it if not pickled else None
            if pickled and (len(blob) > MAX_PICKLED_BYTES or batcher.append_pickled(blob) < 0):
                rows = iter(_unpickle(blob))
            if pickled and pickles is not None:
                pickles["python" if rows is not None else "native"] += 1
            while True:
                ended = rows is None or batcher.append_from(rows, TARGET_BATCH_BYTES)
                if batcher.rows and (not ended or batcher.nbytes >= TARGET_BATCH_BYTES):
                    pending = batcher.rows
                    if not session.push_rows(batcher):
                        skipped = pending + (_count_rows(rows, False) if rows else 0)
                        return session.rows_pushed, skipped + (_count_rows(it, True) if pickled else 0)
                if ended:
                    break
        if batcher.rows:
            pending = batcher.rows
            if not session.push_rows(batcher):
                return session.rows_pushed, pending
        return session.rows_pushed, 0
    finally:
        if gc_was_enabled:
            gc.enable()


def feed_rdd_partition(meta: dict, pickled: bool = False):
    """mapPartitionsWithIndex function of cluster.train on an RDD (with
    `pickled`, on its pickled_batches): yields one (partition, rows pushed,
    rows skipped, local, the node's feed index, pickles read in C++, pickles unpickled
    in Python) tuple."""

    job = json.dumps(meta)

    def feed(index, items):
        pickles = {"native": 0, "python": 0}
        session = _open_session(job, index, False)
        if session.stopped:
            yield (index, 0, _count_rows(items, pickled), False, session.feed_index, 0, 0)
            return
        try:
            pushed, skipped = _push_rows(session, items, pickled, pickles)
            session.finish()
        except errors.SparktfError as e:
            raise _with_node(session, e) from None
        yield (index, pushed, skipped, session.local, session.feed_index, pickles["native"],
               pickles["python"])

    return feed


def arrow_columns(batch) -> dict:
    """pyarrow RecordBatch -> {name: numpy array, or list of str/bytes}, converted by the
    core as a DataFrame's feeding task converts it (cpp/src/sparktf/feed/arrow_feed.h:
    which types, the null rule, the errors); the arrays view one copy of the values."""
    from sparktf import _native

    if batch.num_rows == 0:
        return {name: [] for name in batch.schema.names}
    return _native.arrow_columns(batch)


def vectors_as_arrays(df):
    """`df` with each pyspark.ml.linalg vector column (dense or sparse) as an
    array<double> of the vector's size, converted in the JVM (vector_to_array):
    Arrow has no vector type. Other columns are left as they are."""
    from pyspark.ml.linalg import VectorUDT

    vectors = [f.name for f in df.schema.fields if isinstance(f.dataType, VectorUDT)]
    if not vectors:
        return df
    from pyspark.ml.functions import vector_to_array
    from pyspark.sql import functions as F

    return df.withColumns({name: vector_to_array(F.col(name)) for name in vectors})


def feed_arrow_partition(meta: dict):
    """mapInArrow function of cluster.train on a DataFrame: yields one record
    batch (partition, pushed, skipped, local, node: the node's feed index)."""

    job = json.dumps(meta)

    def feed(batches):
        import pyarrow as pa
        from pyspark import TaskContext

        index = TaskContext.get().partitionId()
        pushed = skipped = 0
        session = _open_session(job, index, False)
        stopped = session.stopped
        try:
            for rb in batches:  # converted and cut into batches in C++, the GIL released
                if not stopped:
                    n = session.push_arrow(rb)
                    pushed += n
                    stopped = n < rb.num_rows
                    skipped += rb.num_rows - n
                else:
                    skipped += rb.num_rows
            if not session.stopped:
                session.finish()
        except errors.SparktfError as e:
            raise _with_node(session, e) from None
        yield pa.RecordBatch.from_pydict({"partition": [index], "pushed": [pushed],
                                          "skipped": [skipped], "local": [session.local],
                                          "node": [session.feed_index]})

    return feed


def infer_rdd_partition(meta: dict, pickled: bool = False):
    """mapPartitionsWithIndex function of cluster.inference (with `pickled`,
    on the RDD's pickled_batches): yields the results of the partition, in the
    order of its rows (a result that is an array comes as a numpy array, as in TFoS)."""

    job = json.dumps(meta)

    def infer(index, items):
        from sparktf import _native
        from sparktf.node import _rows_of

        session = _open_session(job, index, True)  # never stopped: it raises instead
        try:
            pushed, skipped = _push_rows(session, items, pickled)
            if skipped:
                raise errors.Cancelled(f"the consumer stopped reading after {pushed} rows; "
                                       f"{skipped} rows of this partition have no result")
            session.finish()
            results = session.results()
        except errors.SparktfError as e:
            raise _with_node(session, e) from None
        count = 0
        for raw in results:
            _, columns = _native.decode_batch(raw)
            rows_out = _rows_of(columns, arrays_as_numpy=True)
            count += len(rows_out)
            yield from rows_out
        if count != pushed:
            raise errors.DataLoss(f"partition {index}: {count} results for {pushed} rows")

    return infer
