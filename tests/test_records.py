"""sparktf.records without TensorFlow: round trips, columns, schema, errors."""

import gzip
import os
import struct

import numpy as np
import pytest

from sparktf import errors
from sparktf import records as r


def write(path, recs, compression=None):
    with r.TFRecordWriter(path, compression) as w:
        for rec in recs:
            w.write(rec)
    return path


@pytest.mark.parametrize("compression,suffix", [(None, ".tfrecord"), ("GZIP", ".gz"),
                                                ("ZLIB", ".zlib")])
def test_round_trip_all_compressions(tmp_path, compression, suffix):
    recs = [b"", b"x", os.urandom(100_000), b"\x00\xff" * 10]
    path = write(str(tmp_path / ("f" + suffix)), recs, compression)
    assert list(r.iter_records(path, compression)) == recs
    assert list(r.iter_records(path)) == recs  # compression guessed from the name
    assert r.count_records(path) == 4


def test_iterates_a_directory_in_name_order(tmp_path):
    write(str(tmp_path / "part-1"), [b"c"])
    write(str(tmp_path / "part-0"), [b"a", b"b"])
    (tmp_path / "_SUCCESS").write_bytes(b"")
    assert list(r.iter_records(str(tmp_path))) == [b"a", b"b", b"c"]


def test_index_splits_file(tmp_path):
    recs = [f"rec{i}".encode() for i in range(50)]
    path = write(str(tmp_path / "f"), recs)
    index = r.record_index(path)
    assert len(index) == 50 and index[0] == 0
    from sparktf import _native
    reader = _native.RecordReader(path, None, False, index[10], index[20])
    assert reader.read_batch(100) == recs[10:20]


def test_encode_decode_values():
    ex = r.encode_example({
        "i": [1, -2, 2**63 - 1, -(2**63)],
        "f": np.array([0.5, np.inf, -np.inf], dtype=np.float64),
        "b": [b"", b"\xff\xfe", "text"],
        "s": 7,
        "empty": ("float", []),
        "bools": np.array([True, False]),
        "absent": None,
    })
    d = r.decode_example(ex)
    assert d["i"].dtype == np.int64 and d["i"].tolist() == [1, -2, 2**63 - 1, -(2**63)]
    assert d["f"].dtype == np.float32 and d["f"].tolist() == [0.5, np.inf, -np.inf]
    assert d["b"] == [b"", b"\xff\xfe", b"text"]
    assert d["s"].tolist() == [7]
    assert d["empty"].dtype == np.float32 and d["empty"].size == 0
    assert d["bools"].tolist() == [1, 0]
    assert "absent" not in d


@pytest.mark.parametrize("bad,match", [
    ({"x": []}, "empty list has no type"),
    ({"x": [1, b"a"]}, "mixes"),
    ({"x": 2**64}, "does not fit int64"),
    ({"x": {"nested": 1}}, "unsupported value"),
    ({"x": ("complex", [1])}, "unknown kind"),
    ({1: [1]}, "must be str"),
])
def test_encode_rejects_bad_values(bad, match):
    with pytest.raises(errors.InvalidArgument, match=match):
        r.encode_example(bad)


def test_sequence_example_round_trip():
    data = r.encode_sequence_example({"id": b"q1"}, {"tok": [[1, 2], [3]], "w": [[0.5]]})
    ctx, lists = r.decode_sequence_example(data)
    assert ctx["id"] == [b"q1"]
    assert [x.tolist() for x in lists["tok"]] == [[1, 2], [3]]
    assert lists["w"][0].tolist() == [0.5]


def test_read_columns_fixed_varlen_defaults(tmp_path):
    path = str(tmp_path / "d.tfrecord")
    with r.TFRecordWriter(path) as w:
        for i in range(5):
            feats = {"label": i, "vec": [i, i + 0.5], "tags": ("bytes", [b"t"] * i)}
            if i != 3:
                feats["opt"] = 10 * i
            w.write_example(feats)
    cols = r.read_columns(path, {
        "label": r.FixedLen("int64"),
        "vec": r.FixedLen("float32", (2,)),
        "tags": r.VarLen("bytes"),
        "opt": r.FixedLen("int64", default=-1),
    })
    assert cols["label"].tolist() == [0, 1, 2, 3, 4]
    assert cols["vec"].shape == (5, 2) and cols["vec"][4].tolist() == [4.0, 4.5]
    assert cols["tags"].row_splits.tolist() == [0, 0, 1, 3, 6, 10]
    assert list(cols["tags"].row(2)) == [b"t", b"t"]
    assert cols["opt"].tolist() == [0, 10, 20, -1, 40]

    with pytest.raises(errors.InvalidArgument, match="record 3.*'opt' is required"):
        r.read_columns(path, {"opt": r.FixedLen("int64")})
    with pytest.raises(errors.InvalidArgument, match="int64_list but the schema expects"):
        r.read_columns(path, {"label": r.FixedLen("float32")})
    with pytest.raises(ValueError, match="dtype must be one of"):
        r.read_columns(path, {"label": r.FixedLen("int32")})


def test_infer_schema(tmp_path):
    path = str(tmp_path / "d.tfrecord")
    with r.TFRecordWriter(path) as w:
        w.write_example({"a": 1, "v": [1.0, 2.0], "s": [b"x"], "rag": [1]})
        w.write_example({"a": 2, "v": [3.0, 4.0], "s": [b"y"], "rag": [1, 2]})
    assert r.infer_schema(path) == {
        "a": r.FixedLen("int64"), "v": r.FixedLen("float32", (2,)),
        "s": r.FixedLen("bytes"), "rag": r.VarLen("int64")}
    with r.TFRecordWriter(path) as w:
        w.write_example({"a": 1})
        w.write_example({"a": 1.0})
    with pytest.raises(errors.InvalidArgument, match="different types"):
        r.infer_schema(path)


# ---- bad input --------------------------------------------------------------

def test_not_a_tfrecord_file(tmp_path):
    path = tmp_path / "text.txt"
    path.write_text("hello, this is not a TFRecord file\n" * 10)
    with pytest.raises(errors.DataLoss, match=r"offset 0.*may be compressed"):
        list(r.iter_records(str(path)))
    with pytest.raises(IOError):  # DataLoss is an IOError
        r.count_records(str(path))


def test_truncated_last_record(tmp_path):
    path = write(str(tmp_path / "f"), [b"first", b"second"])
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-3])
    it = r.iter_records(path, batch=1)
    assert next(it) == b"first"
    with pytest.raises(errors.DataLoss, match=r"truncated record.*offset 21"):
        next(it)


@pytest.mark.parametrize("field,at", [("length", 0), ("length crc", 9), ("data", 12),
                                      ("data crc", 12 + 5)])
def test_flipped_byte_in_each_framing_field(tmp_path, field, at):
    path = write(str(tmp_path / "f"), [b"hello", b"world"])
    data = bytearray(open(path, "rb").read())
    data[at] ^= 0x01
    open(path, "wb").write(bytes(data))
    with pytest.raises(errors.DataLoss, match=f"{os.path.basename(path)}.*offset 0"):
        list(r.iter_records(path))
    # skip-corrupt mode resynchronises and still finds the second record.
    assert list(r.iter_records(path, skip_corrupt=True)) == [b"world"]


def test_wrong_compression_flag(tmp_path):
    gz = write(str(tmp_path / "f.gz"), [b"payload"])
    with pytest.raises(errors.DataLoss):
        list(r.iter_records(gz, compression=""))
    plain = write(str(tmp_path / "plain"), [b"payload"])
    with pytest.raises(errors.DataLoss, match="GZIP"):
        list(r.iter_records(plain, compression="GZIP"))
    with pytest.raises(errors.InvalidArgument, match="unknown compression"):
        list(r.iter_records(plain, compression="SNAPPY"))


def test_huge_declared_length_is_data_loss_not_oom(tmp_path):
    path = write(str(tmp_path / "f"), [b"x"])
    data = bytearray(open(path, "rb").read())
    # Declare 2**62 bytes; fix the length CRC so only the size is wrong.
    fake = struct.pack("<Q", 1 << 62)
    crc = _masked_crc(fake)
    data[0:12] = fake + struct.pack("<I", crc)
    open(path, "wb").write(bytes(data))
    with pytest.raises(errors.DataLoss, match="truncated record: declares 4611686018427387904"):
        list(r.iter_records(path))
    gz = str(tmp_path / "f.gz")
    with gzip.open(gz, "wb") as f:
        f.write(bytes(data))
    with pytest.raises(errors.DataLoss, match="truncated"):
        list(r.iter_records(gz))


def _masked_crc(b):
    poly, crc = 0x82F63B78, 0xFFFFFFFF
    for byte in b:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
    crc ^= 0xFFFFFFFF
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


@pytest.mark.parametrize("data", [b"\x0b", b"\x0f", b"\x00", b"\x0a\xff\xff\xff\xff\x0f",
                                  b"\x0a\x04\x0a\x03\x0a\x01"])
def test_malformed_example_bytes(data):
    with pytest.raises(errors.InvalidArgument, match="malformed"):
        r.decode_example(data)
    with pytest.raises(errors.InvalidArgument, match="record 0"):
        r.decode_columns([data], {"x": r.VarLen("int64")})


def test_empty_file_and_missing_path(tmp_path):
    empty = tmp_path / "empty.tfrecord"
    empty.write_bytes(b"")
    assert list(r.iter_records(str(empty))) == []
    assert r.count_records(str(empty)) == 0
    with pytest.raises(errors.NotFound, match="no/such/file"):
        list(r.iter_records(str(tmp_path / "no/such/file")))
    # Missing directories are made, as on HDFS and S3; a file in the way is an error.
    with r.TFRecordWriter(str(tmp_path / "new/dir/out")) as w:
        w.write(b"x")
    assert r.count_records(str(tmp_path / "new/dir/out")) == 1
    (tmp_path / "afile").write_text("x")
    with pytest.raises(OSError, match="afile"):
        r.TFRecordWriter(str(tmp_path / "afile/out"))


def test_writer_closed_twice_and_write_after_close(tmp_path):
    w = r.TFRecordWriter(str(tmp_path / "w"))
    w.write(b"a")
    w.close()
    w.close()
    with pytest.raises(errors.InvalidArgument, match="closed"):
        w.write(b"b")
