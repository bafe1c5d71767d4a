"""Feed rings and batches from Python, across real processes (the building
blocks of InputMode.SPARK)."""

import os
import pickle
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from sparktf import _native, errors


def ring_name(tag):
    return f"/sparktf-pytest-{tag}-{os.getpid()}"


def in_shm(name):
    return os.path.exists("/dev/shm" + name)


def test_batch_round_trip():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.array([7, 8, 9], dtype=np.int64)
    flags = np.array([True, False, True])
    data = _native.encode_batch({"x": x, "y": y, "ok": flags, "s": [b"a", b"", b"\xff"]})
    rows, cols = _native.decode_batch(data)
    assert rows == 3
    assert np.array_equal(cols["x"], x) and cols["x"].dtype == np.float32
    assert np.array_equal(cols["y"], y) and np.array_equal(cols["ok"], flags)
    assert cols["s"] == [b"a", b"", b"\xff"]
    with pytest.raises(errors.InvalidArgument, match="rows"):
        _native.encode_batch({"x": x, "y": y[:2]})
    with pytest.raises(errors.InvalidArgument, match="malformed"):
        _native.decode_batch(data[:-8])


PRODUCER = """
import sys, numpy as np
from sparktf import _native
ring = _native.Ring.attach(sys.argv[1])
for i in range(int(sys.argv[2])):
    ring.push(_native.encode_batch({"x": np.full((64, 10), i, np.float32)}), 30)
if sys.argv[3] == "close":
    ring.close_input()
    ring.close()
else:
    import time; time.sleep(60)
"""


def test_batches_flow_between_processes_and_nothing_is_left():
    name = ring_name("flow")
    ring = _native.Ring.create(name, 1 << 20)
    p = subprocess.Popen([sys.executable, "-c", PRODUCER, name, "200", "close"])
    total = 0
    while (msg := ring.pop(30)) is not None:
        rows, cols = _native.decode_batch(msg)
        total += int(cols["x"].sum())
    assert p.wait(30) == 0
    assert total == sum(i * 640 for i in range(200))
    assert ring.stats()["messages_popped"] == 200
    ring.close()
    assert not in_shm(name)


def test_killed_producer_is_an_error_not_a_hang():
    name = ring_name("deadprod")
    ring = _native.Ring.create(name, 1 << 20)
    p = subprocess.Popen([sys.executable, "-c", PRODUCER, name, "3", "hang"])
    for _ in range(3):
        assert ring.pop(30) is not None
    p.send_signal(signal.SIGKILL)
    p.wait()
    t0 = time.monotonic()
    with pytest.raises(errors.Aborted, match="died while feeding"):
        ring.pop(30)
    assert time.monotonic() - t0 < 2
    ring.close()
    assert not in_shm(name)


CONSUMER = """
import sys, time
from sparktf import _native
ring = _native.Ring.create(sys.argv[1], 1 << 16)
print("ready", flush=True)
time.sleep(60)
"""


def test_killed_consumer_is_noticed_and_its_segment_removed():
    name = ring_name("deadcons")
    p = subprocess.Popen([sys.executable, "-c", CONSUMER, name], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    ring = _native.Ring.attach(name)
    p.send_signal(signal.SIGKILL)
    p.wait()
    batch = _native.encode_batch({"x": np.zeros((100, 10), np.float32)})
    t0 = time.monotonic()
    with pytest.raises(errors.Aborted, match="consumer"):
        for _ in range(100):
            ring.push(batch, 30)
    assert time.monotonic() - t0 < 2
    ring.close()
    assert not in_shm(name)
    assert _native.sweep_stale_rings(f"/sparktf-pytest-") == []


def _expected_columns(rows, names=None):
    """What a batch of `rows` must decode to, built with numpy from the Python values
    (not by sparktf's batcher): a tuple or list is a row, anything else a row of one value;
    bool -> bool, int -> int64, float -> float32, str -> str (a column of str only; among
    bytes, its UTF-8 bytes), bytes -> bytes, a list or tuple -> a row of its items' type, a
    numpy array -> its dtype and shape."""
    rows = [r if isinstance(r, (tuple, list)) else (r,) for r in rows]
    names = names or [str(i) for i in range(len(rows[0]))]

    def kind(v):
        return (np.bool_ if isinstance(v, bool) else np.int64 if isinstance(v, int)
                else np.float32)

    out = {}
    for i, name in enumerate(names):
        values = [r[i] for r in rows]
        first = values[0]
        if isinstance(first, (str, bytes)):
            text = all(isinstance(v, str) for v in values)
            out[name] = values if text else [v.encode() if isinstance(v, str) else v
                                             for v in values]
        elif isinstance(first, np.ndarray):
            out[name] = np.stack(values)
        elif isinstance(first, (list, tuple)):
            out[name] = np.array(values, dtype=kind(first[0]))
        else:
            out[name] = np.array(values, dtype=kind(first))
    return out


def _assert_batch(batch, rows, names=None):
    n, cols = _native.decode_batch(batch)
    want = _expected_columns(rows, names)
    assert n == len(rows) and list(cols) == list(want)
    for name, expected in want.items():
        if isinstance(expected, list):
            assert cols[name] == expected, name
        else:
            assert cols[name].dtype == expected.dtype, (name, cols[name].dtype, expected.dtype)
            np.testing.assert_array_equal(cols[name], expected, err_msg=name)


def test_rows_to_batch_from_python_values():
    from pyspark.sql import Row

    rows = [(i, float(i) / 2, [1.0, 2.0, float(i)], np.full((2, 2), i, np.int32), f"r{i}", i % 2 == 0)
            for i in range(5)]
    n, cols = _native.decode_batch(_native.rows_to_batch(rows))
    assert n == 5 and list(cols) == ["0", "1", "2", "3", "4", "5"]
    assert cols["0"].dtype == np.int64 and cols["0"].tolist() == [0, 1, 2, 3, 4]
    assert cols["1"].dtype == np.float32 and cols["1"].tolist() == [0, 0.5, 1, 1.5, 2]
    assert cols["2"].shape == (5, 3) and cols["2"][4].tolist() == [1, 2, 4]
    assert cols["3"].shape == (5, 2, 2) and cols["3"].dtype == np.int32
    assert cols["4"] == ["r0", "r1", "r2", "r3", "r4"]  # str, as the rows held them
    assert cols["5"].tolist() == [True, False, True, False, True]
    # pyspark Rows name the columns; single values make one column.
    n, cols = _native.decode_batch(_native.rows_to_batch([Row(x=1.5, y=2), Row(x=2.5, y=3)]))
    assert cols["x"].tolist() == [1.5, 2.5] and cols["y"].tolist() == [2, 3]
    n, cols = _native.decode_batch(_native.rows_to_batch([np.float32(1), 2.0], names=["v"]))
    assert cols["v"].tolist() == [1.0, 2.0]


def test_rows_of_numpy_arrays_come_back_as_arrays_and_lists_as_lists():
    """What TFoS's next_batch gives: each row's value as the RDD held it."""
    from sparktf.node import _rows_of

    rows = [(i, [1.0, float(i)], np.full((2, 2), i, np.int32), np.arange(3.0) + i)
            for i in range(3)]
    pickled = _native.RowBatcher()
    assert pickled.append_pickled(pickle.dumps(rows, 5)) == 3  # the C++ pickle reader's path
    for batch in (_native.rows_to_batch(rows), pickled.take()):
        n, cols, row_arrays = _native.decode_batch(batch, row_arrays=True)
        assert n == 3 and row_arrays == ["2", "3"]
        back = _rows_of(cols, set(row_arrays))
        for got, want in zip(back, rows):
            assert type(got[0]) is int and got[0] == want[0]
            assert type(got[1]) is list and got[1] == want[1]
            assert isinstance(got[2], np.ndarray) and got[2].dtype == np.int32
            np.testing.assert_array_equal(got[2], want[2])
            assert got[3].dtype == np.float64 and got[3].tolist() == want[3].tolist()
    # encode_batch (the DataFrame path) has no per-row arrays: Spark's arrays are lists
    _, _, row_arrays = _native.decode_batch(
        _native.encode_batch({"x": np.zeros((2, 3), np.float32)}), row_arrays=True)
    assert row_arrays == []


@pytest.mark.parametrize("rows,match", [
    ([(1, 2.0), (1,)], "row 1 does not have 2 values"),
    ([([1.0, 2.0],), ([1.0],)], "row 1, column '0': has 1 values but the first row had 2"),
    ([(1,), ("a",)], "row 1, column '0': expected an int"),
    ([(np.zeros(3, np.float32),), (np.zeros(4, np.float32),)], "shape or dtype differs"),
    ([({"a": 1},)], "unsupported value"),
    ([], "no rows"),
])
def test_rows_to_batch_rejects_inconsistent_rows(rows, match):
    with pytest.raises(errors.InvalidArgument, match=match):
        _native.rows_to_batch(rows)


def test_row_batcher_appends_in_pieces_like_one_call():
    rows = [(float(i), [i, i + 1], f"s{i}".encode()) for i in range(1000)]
    b = _native.RowBatcher(["x", "v", "s"])
    for start in range(0, 1000, 256):
        b.append(rows[start:start + 256])
    assert b.rows == 1000 and b.nbytes > 1000 * (4 + 16)
    _assert_batch(b.take(), rows, ["x", "v", "s"])
    assert b.rows == 0
    with pytest.raises(errors.InvalidArgument, match="no rows"):
        b.take()
    b.append(rows[:3])  # a new batch after take()
    n, cols = _native.decode_batch(b.take())
    assert n == 3 and cols["v"].tolist() == [[0, 1], [1, 2], [2, 3]]
    with pytest.raises(errors.InvalidArgument, match="row 1 "):
        b.append([(1.0, [1, 2], b"a"), (2.0,)])


def test_row_batcher_pulls_rows_from_an_iterator_in_batches_of_about_max_bytes():
    rows = [(np.full(100, i, np.float32), i) for i in range(1000)]  # 408 bytes a row
    b = _native.RowBatcher()
    it = iter(rows)
    batches = []
    while True:
        ended = b.append_from(it, 40_000)
        if b.rows:
            batches.append(_native.decode_batch(b.take()))
        if ended:
            break
    assert [n for n, _ in batches[:-1]] == [112] * 8  # checked every 16 rows
    assert sum(n for n, _ in batches) == 1000
    x = np.concatenate([cols["0"] for _, cols in batches])
    assert x.shape == (1000, 100) and (x[:, 7] == np.arange(1000)).all()
    # The next batch may have other shapes: the kept buffers start afresh.
    b.append_from(iter([(np.ones((2, 2), np.int32), 5)]), 1 << 20)
    n, cols = _native.decode_batch(b.take())
    assert n == 1 and cols["0"].tolist() == [[[1, 1], [1, 1]]]

    def failing():
        yield (np.zeros(3, np.float32), 0)
        raise ValueError("upstream failed")

    with pytest.raises(ValueError, match="upstream failed"):
        _native.RowBatcher().append_from(failing(), 1 << 20)
    with pytest.raises(errors.InvalidArgument, match="iterator"):
        _native.RowBatcher().append_from([1, 2], 1 << 20)


PICKLED_ROWS = {
    "scalars": [(float(i), i - 5, i % 2 == 0, f"s{i}", b"b" * i) for i in range(50)],
    "lists": [([0.5 * i, 1.0, -2.5], [i, -i], (True, False)) for i in range(30)],
    "one value": [float(i) for i in range(20)],
    "a row is a list": [[float(i), 2.0, 3.0] for i in range(10)],
    **{f"numpy {t}": [(np.arange(6, dtype=t).reshape(2, 3) + i, i) for i in range(4)]
       for t in ("f4", "f8", "i4", "i8", "u1")},
    "numpy bool": [(np.array([True, False, i % 2 == 0]),) for i in range(5)],
    "repeated objects (memo)": [(np.ones(3, np.float32), "same")] * 7,
    "long lists (several APPENDS)": [([float(v) for v in range(2500)], 1)] * 3,
}


@pytest.mark.parametrize("name", list(PICKLED_ROWS))
@pytest.mark.parametrize("dumps", ["pickle", "cloudpickle"])
def test_append_pickled_reads_rows_as_python_would(name, dumps):
    import pickle

    from pyspark import cloudpickle

    rows = PICKLED_ROWS[name]
    blob = (pickle.dumps if dumps == "pickle" else cloudpickle.dumps)(rows, 5)
    b = _native.RowBatcher()
    assert b.append_pickled(blob) == len(rows)
    _assert_batch(b.take(), rows)
    # Half through Python, half read natively: one batch, as one call makes.
    half = len(rows) // 2
    b.append(rows[:half])
    assert b.append_pickled(pickle.dumps(rows[half:], 5)) == len(rows) - half
    _assert_batch(b.take(), rows)


@pytest.mark.parametrize("rows", [
    [({"a": 1},)],                                  # other types
    [(2 ** 70,)],                                   # beyond int64
    [(None,)],
    [(1.0,), (2,)],                                 # float then int: Python converts
    [([1, 2.5],)],                                  # mixed list
    [(np.float32(1.5),)],                           # numpy scalar
    [(np.zeros((2, 2), np.float32, order="F"),)],   # Fortran order
    [(np.zeros(3, ">f4"),)],                        # big-endian
    [(np.zeros(3, np.int16),)],                     # a dtype feeds do not carry
    [(1.0, 2.0), (1.0,)],                           # rows of different widths
    [([],)],
], ids=str)
def test_append_pickled_leaves_what_only_python_reads_to_python(rows):
    import pickle

    b = _native.RowBatcher()
    assert b.append_pickled(pickle.dumps(rows, 5)) == -1
    assert b.rows == 0  # nothing appended


def test_append_pickled_refuses_rows_unlike_the_batch_so_far():
    import pickle

    b = _native.RowBatcher()
    b.append([(1.0, [1.0, 2.0])])
    assert b.append_pickled(pickle.dumps([(1.0, [1.0, 2.0, 3.0])], 5)) == -1  # other shape
    assert b.append_pickled(pickle.dumps([(1, [1.0, 2.0])], 5)) == -1  # other type
    assert b.append_pickled(pickle.dumps([(2.0, [3.0, 4.0])], 5)) == 1
    assert b.rows == 2
    assert b.append_pickled(b"\x80\x05garbage") == -1


def test_arrow_columns_of_every_fed_type_and_clear_errors_for_the_rest():
    """The DataFrame path's Arrow -> feed columns (the core's ArrowFeeder, as feeding tasks
    use it): values checked against the Arrow data, sliced batches read from their
    offset, and each unfeedable column refused by name (nulls, ragged arrays, other types)."""
    import pyarrow as pa

    from sparktf.feeding import arrow_columns

    batch = pa.RecordBatch.from_pydict({
        "f": pa.array([9.0, 0.5, 1.5, -2.0], pa.float32()),
        "d": pa.array([0.0, 1.0, 2.0, 3.0], pa.float64()),
        "i": pa.array([0, 1, -2, 3], pa.int64()),
        "small": pa.array([0, -128, 127, 5], pa.int8()),
        "b": pa.array([False, True, False, True]),
        "s": pa.array(["x", "a", "", "ü"]),
        "raw": pa.array([b"", b"\x00", b"xy", b""], pa.binary()),
        "v": pa.array([[0.0, 0.0], [1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], pa.list_(pa.float32())),
        "fixed": pa.array([[0, 0, 0], [1, 2, 3], [4, 5, 6], [7, 8, 9]], pa.list_(pa.int32(), 3)),
    }).slice(1)
    cols = arrow_columns(batch)
    assert cols["f"].dtype == np.float32 and cols["f"].tolist() == [0.5, 1.5, -2.0]
    assert cols["d"].dtype == np.float64 and cols["i"].tolist() == [1, -2, 3]
    assert cols["small"].dtype == np.int32 and cols["small"].tolist() == [-128, 127, 5]
    assert cols["b"].dtype == np.bool_ and cols["b"].tolist() == [True, False, True]
    assert cols["s"] == ["a", "", "ü"] and cols["raw"] == [b"\x00", b"xy", b""]
    assert cols["v"].shape == (3, 2) and cols["v"].dtype == np.float32
    assert cols["v"].tolist() == [[1, 2], [3, 4], [5, 6]]
    assert cols["fixed"].shape == (3, 3) and cols["fixed"][2].tolist() == [7, 8, 9]

    def refused(column, match):
        with pytest.raises(errors.InvalidArgument, match=match):
            arrow_columns(pa.RecordBatch.from_pydict({"ok": [1, 2], "x": column}))

    refused(pa.array([1.0, None]), r"column 'x' has nulls; fill or drop them")
    refused(pa.array([[1.0], [None]], pa.list_(pa.float64())), "column 'x' has null elements")
    refused(pa.array([[1.0, 2.0], [3.0]], pa.list_(pa.float64())),
            r"column 'x' holds arrays of different lengths \(1..2\)")
    refused(pa.array([{"a": 1}, {"a": 2}]), r"column 'x' has type struct, which cannot be fed")
    refused(pa.array([0, 1], pa.timestamp("s")), r"column 'x' has type timestamp")
    refused(pa.array(["a", "b"]).dictionary_encode(), r"column 'x' is dictionary-encoded")
