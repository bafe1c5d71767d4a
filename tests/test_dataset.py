"""ctx.dataset on a real feed (a FeedReader and its ring in this process, no Spark): the
columns reach TensorFlow through the op SparktfFeedNext (libsparktf_tf_ops.so) value for
value, in order, in exact batches, as tensors over the feed's buffers where they are aligned; bytes columns through a Python generator; errors of
the feed surface as TensorFlow errors with the feed's message."""

import ctypes
import os
import time
import types

import numpy as np
import pytest
import tensorflow as tf

from sparktf import _native, node

pytestmark = pytest.mark.tensorflow


def ring_name(tag):
    return f"/sparktf-pytest-ds-{tag}-{os.getpid()}"


def make_feed(tag, batches, rows=1000, with_bytes=False, close=True, capacity=64 << 20):
    name = ring_name(tag)
    reader = _native.FeedReader(name, capacity)
    ring = _native.Ring.attach(name)
    for b in range(batches):
        ids = np.arange(b * rows, (b + 1) * rows, dtype=np.int64)
        columns = {"x": (ids[:, None] * 4 + np.arange(4)).astype(np.float32),
                   "label": ids, "flag": ids % 3 == 0,
                   "u": (ids[:, None, None] + np.arange(6).reshape(2, 3)).astype(np.uint8),
                   "d": ids.astype(np.float64) / 7}
        if with_bytes:
            columns["s"] = [str(i).encode() for i in ids]
        ring.push(_native.encode_batch(columns))
    if close:
        ring.close_input()
    ctx = types.SimpleNamespace(_feed=lambda q: reader, job_name="worker", task_index=0)
    return reader, ctx, ring


def graph_ops(ds):
    """The dataset's serialized graph (names every op in it)."""
    return tf.raw_ops.DatasetToGraphV2(input_dataset=ds._variant_tensor).numpy()


def check_values(batch, first):
    ids = np.arange(first, first + 256)
    np.testing.assert_array_equal(batch["y"].numpy(), ids)
    np.testing.assert_array_equal(batch["features"].numpy(),
                                  (ids[:, None] * 4 + np.arange(4)).astype(np.float32))
    np.testing.assert_array_equal(batch["flag"].numpy(), ids % 3 == 0)
    np.testing.assert_array_equal(batch["u"].numpy(),
                                  (ids[:, None, None] + np.arange(6).reshape(2, 3)).astype(np.uint8))
    np.testing.assert_array_equal(batch["d"].numpy(), ids.astype(np.float64) / 7)


MAPPING = {"x": "features", "label": "y", "flag": "flag", "u": "u", "d": "d"}


def test_the_feed_reaches_tensorflow_through_the_op_value_for_value():
    reader, ctx, _ = make_feed("op", 12)
    ds = node.NodeContext.dataset(ctx, 256, input_mapping=MAPPING)
    assert b"SparktfFeedNext" in graph_ops(ds) and b"PyFunc" not in graph_ops(ds)
    assert ds.element_spec["features"].shape == (256, 4)
    assert ds.element_spec["u"].shape == (256, 2, 3) and ds.element_spec["u"].dtype == tf.uint8
    got = list(ds)
    assert len(got) == 46  # 12,000 rows in batches of exactly 256
    for i, batch in enumerate(got):
        check_values(batch, i * 256)
    p = reader.progress()
    assert (p["consumed"], p["dropped"], p["finished"]) == (46 * 256, 12000 - 46 * 256, True)
    reader.close()


def tensor_address(t):
    """The address of a CPU tensor's buffer (through its DLPack capsule; numpy() copies)."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return ctypes.c_void_p.from_address(get(tf.experimental.dlpack.to_dlpack(t), b"dltensor")).value


def test_batches_of_one_message_are_tensors_over_its_buffer_that_keep_it_alive():
    reader, ctx, _ = make_feed("views", 12)
    it = iter(node.NodeContext.dataset(ctx, 256, input_mapping=MAPPING))
    first = [next(it) for _ in range(3)]  # rows 0-767, all in the first 1000-row message
    for name, row_bytes in [("features", 16), ("y", 8), ("flag", 1), ("u", 6), ("d", 8)]:
        at = [tensor_address(b[name]) for b in first]
        assert all(a % 64 == 0 for a in at), name
        assert np.diff(at).tolist() == [256 * row_bytes] * 2, name  # no copy: one buffer
    rest = 0
    for batch in it:  # the reader reuses its buffers meanwhile, but not the one held
        check_values(batch, (3 + rest) * 256)
        rest += 1
    assert rest == 43
    for i, batch in enumerate(first):
        check_values(batch, i * 256)
    reader.close()


def mappings_of(name):
    """[(start, end)] of this process's mappings of shared-memory segment `name`."""
    with open("/proc/self/maps") as f:
        return [tuple(int(a, 16) for a in line.split()[0].split("-"))
                for line in f if f"/dev/shm{name}" in line]


def test_tensors_lie_in_the_ring_itself_and_kept_ones_outlive_it():
    # A 1 MiB ring: past a quarter of it held, the reader moves what is kept out of the ring.
    reader, ctx, producer = make_feed("inplace", 12, capacity=1 << 20)
    del producer
    ring = mappings_of(ring_name("inplace"))
    assert len(ring) == 1
    got = list(node.NodeContext.dataset(ctx, 256, input_mapping=MAPPING))  # keeps them all
    lo, hi = ring[0]
    assert lo <= tensor_address(got[0]["features"]) < hi  # read where the producer wrote it
    p = reader.progress()
    assert (p["in_place"], p["copied"]) == (12, 0), p
    assert p["evictions"] > 0, p
    reader.close()
    for i, batch in enumerate(got):  # after the reader closed, the rows are all still there
        check_values(batch, i * 256)
    assert mappings_of(ring_name("inplace"))  # held by the tensors
    del batch, got
    assert mappings_of(ring_name("inplace")) == []  # gone with the last of them


def test_a_bytes_column_goes_through_a_python_generator_with_the_same_values():
    reader, ctx, _ = make_feed("bytes", 2, with_bytes=True)
    ds = node.NodeContext.dataset(ctx, 256, input_mapping=dict(MAPPING, s="s"))
    assert b"SparktfFeedNext" not in graph_ops(ds)
    got = list(ds)
    assert len(got) == 7
    for i, batch in enumerate(got):
        check_values(batch, i * 256)
        assert [v.decode() for v in batch["s"].numpy()] == [str(i * 256 + k) for k in range(256)]
    reader.close()


def test_no_data_for_the_timeout_is_an_error_naming_it():
    reader, ctx, ring = make_feed("timeout", 1, close=False)
    ds = node.NodeContext.dataset(ctx, 256, input_mapping=MAPPING, timeout=1.0)
    it = iter(ds)
    for i in range(3):
        check_values(next(it), i * 256)
    t = time.monotonic()
    with pytest.raises(tf.errors.DeadlineExceededError, match="no data in the feed for 1 s"):
        next(it)
    assert time.monotonic() - t < 10
    ring.close_input()
    reader.close()


def test_a_closed_feed_is_an_error_not_a_crash():
    reader, ctx, _ = make_feed("closed", 2)
    ds = node.NodeContext.dataset(ctx, 256, input_mapping=MAPPING)
    reader.close()
    with pytest.raises(tf.errors.InvalidArgumentError, match="the feed is closed"):
        list(ds)
