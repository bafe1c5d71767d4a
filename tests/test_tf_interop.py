"""Interop with real TensorFlow: files and Examples in both directions."""

import math

import numpy as np
import pytest

from sparktf import records as r

import tensorflow as tf

COMPRESSIONS = ["", "GZIP", "ZLIB"]

# Feature values covering the edge cases TensorFlow must agree on.
EDGE = {
    "empty_int": ("int64", []),
    "empty_float": ("float", []),
    "empty_bytes": ("bytes", []),
    "ints": [0, -1, 1, -(2**63), 2**63 - 1, 2**40, -300],
    "floats": [0.0, -0.0, 1.5, float("nan"), float("inf"), float("-inf"), 3.4e38, 1e-45],
    "bytes": [b"", b"\x00", b"\xff\xfe\xfd", "unicodé".encode(), b"x" * 1000],
    "scalar": 42,
}


def tf_feature(value):
    kind, vals = value if isinstance(value, tuple) else (None, value)
    vals = vals if isinstance(vals, list) else [vals]
    if kind == "int64" or (kind is None and all(isinstance(v, int) for v in vals)):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=vals))
    if kind == "float" or (kind is None and all(isinstance(v, float) for v in vals)):
        return tf.train.Feature(float_list=tf.train.FloatList(value=vals))
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=vals))


def tf_example(features):
    return tf.train.Example(features=tf.train.Features(
        feature={k: tf_feature(v) for k, v in features.items()}))


@pytest.mark.parametrize("name,value", list(EDGE.items()))
def test_single_feature_bytes_equal_tensorflow(name, value):
    ours = r.encode_example({name: value})
    assert ours == tf_example({name: value}).SerializeToString()


def test_many_features_equal_tensorflow_deterministic_serialization():
    ours = r.encode_example(EDGE)
    ex = tf_example(EDGE)
    # Protobuf orders map entries by hash unless asked to be deterministic
    # (sorted by key), which is what sparktf always writes.
    assert ours == ex.SerializeToString(deterministic=True)
    assert tf.train.Example.FromString(ours) == tf.train.Example.FromString(
        ex.SerializeToString())


def test_decode_what_tensorflow_writes():
    data = tf_example(EDGE).SerializeToString()
    d = r.decode_example(data)
    assert d["ints"].tolist() == EDGE["ints"]
    got, want = d["floats"], np.array(EDGE["floats"], dtype=np.float32)
    assert np.array_equal(got, want, equal_nan=True)
    assert d["bytes"] == EDGE["bytes"]
    assert d["empty_bytes"] == [] and d["empty_int"].size == 0


def test_sequence_example_bytes_equal_tensorflow():
    se = tf.train.SequenceExample(
        context=tf.train.Features(feature={"id": tf_feature([b"q"])}),
        feature_lists=tf.train.FeatureLists(feature_list={
            "tok": tf.train.FeatureList(feature=[tf_feature([1, 2]), tf_feature([3])]),
        }))
    ours = r.encode_sequence_example({"id": [b"q"]}, {"tok": [[1, 2], [3]]})
    assert ours == se.SerializeToString(deterministic=True)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_read_files_tensorflow_wrote(tmp_path, compression):
    path = str(tmp_path / "tf.tfrecord")
    recs = [tf_example({"i": [i], "v": [float(i)] * 3}).SerializeToString()
            for i in range(300)] + [b"", b"\xff" * 70000]
    with tf.io.TFRecordWriter(path, options=compression) as w:
        for rec in recs:
            w.write(rec)
    assert list(r.iter_records(path, compression)) == recs
    cols = r.decode_columns(recs[:300], {"i": r.FixedLen("int64")})
    assert cols["i"].tolist() == list(range(300))
    # The last record is not an Example: columnar reading names it.
    with pytest.raises(ValueError, match="record 301: malformed"):
        r.read_columns(path, {"i": r.VarLen("int64")}, compression)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_tensorflow_reads_files_sparktf_wrote(tmp_path, compression):
    path = str(tmp_path / "ours.tfrecord")
    rng = np.random.default_rng(0)
    rows = [{"label": int(i % 10), "x": rng.standard_normal(8).astype(np.float32),
             "name": f"row-{i}".encode(), "tags": ("int64", list(range(i % 4)))}
            for i in range(200)]
    with r.TFRecordWriter(path, compression) as w:
        for row in rows:
            w.write_example(row)
    ds = tf.data.TFRecordDataset(path, compression_type=compression).batch(64)
    spec = {"label": tf.io.FixedLenFeature([], tf.int64),
            "x": tf.io.FixedLenFeature([8], tf.float32),
            "name": tf.io.FixedLenFeature([], tf.string),
            "tags": tf.io.VarLenFeature(tf.int64)}
    labels, xs, names, tag_lens = [], [], [], []
    for batch in ds:
        p = tf.io.parse_example(batch, spec)
        labels += p["label"].numpy().tolist()
        xs.append(p["x"].numpy())
        names += p["name"].numpy().tolist()
        rows_of_values = p["tags"].indices.numpy()[:, 0]
        tag_lens += np.bincount(rows_of_values, minlength=len(p["label"])).tolist()
    assert labels == [row["label"] for row in rows]
    assert np.array_equal(np.concatenate(xs), np.stack([row["x"] for row in rows]))
    assert names == [row["name"] for row in rows]
    assert tag_lens == [i % 4 for i in range(200)]


def test_columns_match_tensorflow_parse_example(tmp_path):
    path = str(tmp_path / "d.tfrecord")
    with r.TFRecordWriter(path) as w:
        for i in range(100):
            w.write_example({"a": i * 3, "f": [i / 7.0, -i / 3.0],
                             "v": ("float", [0.25] * (i % 5))})
    schema = {"a": r.FixedLen("int64"), "f": r.FixedLen("float32", (2,)),
              "v": r.VarLen("float32")}
    ours = r.read_columns(path, schema)
    spec = {"a": tf.io.FixedLenFeature([], tf.int64),
            "f": tf.io.FixedLenFeature([2], tf.float32),
            "v": tf.io.RaggedFeature(tf.float32)}
    theirs = tf.io.parse_example(
        next(iter(tf.data.TFRecordDataset(path).batch(1000))), spec)
    assert np.array_equal(ours["a"], theirs["a"].numpy())
    assert np.array_equal(ours["f"], theirs["f"].numpy())
    assert np.array_equal(ours["v"].values, theirs["v"].flat_values.numpy())
    assert np.array_equal(ours["v"].row_splits, theirs["v"].row_splits.numpy())
    assert not math.isnan(float(ours["f"].sum()))
