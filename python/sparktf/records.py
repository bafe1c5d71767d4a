"""TFRecord files and tf.train.Example, on the native core.

Every path may be a local path or a URI: ``hdfs:///data/part-*``,
``s3://bucket/train``, ``file:///x`` (see :mod:`sparktf.fs`).

Compression arguments take ``None`` (guess from the file name: ``.gz`` is
GZIP, ``.zlib`` is ZLIB, anything else uncompressed), ``""``/``"none"``,
``"GZIP"`` or ``"ZLIB"``.

Feature values for :func:`encode_example`: an int, float, bytes or str, a
list or tuple of them, a numpy array, or ``(kind, values)`` with kind
``"int64"``, ``"float"`` or ``"bytes"`` (needed for an empty list). ``None``
leaves the feature out. ints and bools become Int64List, floats FloatList
(float32), bytes and str BytesList (str as UTF-8).
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Iterator, NamedTuple, Sequence, Union

import numpy as np

from sparktf import _native

__all__ = [
    "FixedLen", "VarLen", "Ragged", "TFRecordWriter", "iter_records", "count_records",
    "record_index", "encode_example", "decode_example", "encode_sequence_example",
    "decode_sequence_example", "read_columns", "decode_columns", "infer_schema",
    "list_files",
]

_DTYPES = ("float32", "int64", "bytes")


class FixedLen(NamedTuple):
    """A feature with the same number of values in every record.

    ``shape=()`` is a scalar per record. ``default`` (one value, or one per
    element) fills records that lack the feature; without it they are an error.
    """

    dtype: str
    shape: tuple = ()
    default: Any = None


class VarLen(NamedTuple):
    """A feature whose length varies; read as :class:`Ragged`."""

    dtype: str


class Ragged(NamedTuple):
    """Variable-length column: row ``i`` is ``values[row_splits[i]:row_splits[i+1]]``."""

    values: Any
    row_splits: np.ndarray

    def row(self, i: int):
        return self.values[self.row_splits[i]:self.row_splits[i + 1]]


Schema = dict  # name -> FixedLen | VarLen
Paths = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]


def list_files(paths: Paths) -> list[str]:
    """Expands directories to their files in name order, skipping hidden and
    bookkeeping entries (``.*``, ``_SUCCESS``, ``_temporary``), and patterns
    (``part-*``) to their matches; keeps files as given. Paths may be local or
    URIs (``hdfs://``, ``s3://``; see :mod:`sparktf.fs`). A missing path raises
    :class:`sparktf.errors.NotFound`."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return _native.list_files([os.fspath(p) for p in paths])


class TFRecordWriter:
    """Writes records to one file (a local path or a URI such as ``hdfs://`` or
    ``s3://``); a context manager. Nothing is visible at the path until ``close()``
    (``with`` does it) commits the file; ``abort()``, or leaving the ``with`` block
    by an exception, discards it."""

    def __init__(self, path: Union[str, os.PathLike], compression: str | None = None,
                 level: int = -1):
        self._w = _native.RecordWriter(os.fspath(path), compression, level)

    def write(self, record: bytes) -> None:
        self._w.write(record)

    def write_example(self, features: dict) -> None:
        self._w.write(_native.encode_example(features))

    def write_many(self, records: Iterable[bytes]) -> None:
        self._w.write_many(records if isinstance(records, (list, tuple)) else list(records))

    def flush(self) -> None:
        self._w.flush()

    def close(self) -> None:
        self._w.close()

    def abort(self) -> None:
        self._w.abort()

    @property
    def records_written(self) -> int:
        return self._w.records_written

    def __enter__(self) -> "TFRecordWriter":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def iter_records(paths: Paths, compression: str | None = None, skip_corrupt: bool = False,
                 batch: int = 1024) -> Iterator[bytes]:
    """Yields the records of every file in order. A corrupt file raises
    :class:`sparktf.errors.DataLoss` naming file and offset, unless
    ``skip_corrupt``."""
    for path in list_files(paths):
        reader = _native.RecordReader(path, compression, skip_corrupt)
        while True:
            chunk = reader.read_batch(batch)
            if not chunk:
                break
            yield from chunk


def count_records(paths: Paths, compression: str | None = None, verify: bool = True) -> int:
    return _native.count_records(list_files(paths), compression, verify)


def record_index(path: Union[str, os.PathLike], compression: str | None = None) -> list[int]:
    """Byte offsets (in the decompressed stream) of every record in a file."""
    return _native.record_index(os.fspath(path), compression)


def encode_example(features: dict) -> bytes:
    """Serializes a tf.train.Example, byte-identical to TensorFlow's
    ``SerializeToString(deterministic=True)`` (features sorted by name)."""
    return _native.encode_example(features)


def decode_example(data: bytes) -> dict:
    """name -> int64 ndarray | float32 ndarray | list of bytes | None (no kind)."""
    return _native.decode_example(data)


def encode_sequence_example(context: dict, feature_lists: dict) -> bytes:
    """``feature_lists`` maps a name to a list of per-step feature values."""
    return _native.encode_sequence_example(context, feature_lists)


def decode_sequence_example(data: bytes) -> tuple[dict, dict]:
    return _native.decode_sequence_example(data)


def _schema_rows(schema: Schema) -> list[tuple]:
    if not isinstance(schema, dict) or not schema:
        raise ValueError("schema must be a non-empty dict of name -> FixedLen | VarLen")
    rows = []
    for name, spec in schema.items():
        if not isinstance(spec, (FixedLen, VarLen)):
            raise ValueError(f"schema[{name!r}] must be FixedLen or VarLen, got {spec!r}")
        if spec.dtype not in _DTYPES:
            raise ValueError(f"schema[{name!r}]: dtype must be one of {_DTYPES}, "
                             f"got {spec.dtype!r}")
        if isinstance(spec, VarLen):
            rows.append((name, spec.dtype, True, [], None))
        else:
            default = spec.default
            if default is not None and not isinstance(default, (list, tuple, np.ndarray)):
                default = [default]
            rows.append((name, spec.dtype, False, [int(d) for d in spec.shape], default))
    return rows


def _to_columns(cols: list) -> dict:
    out = {}
    for c in cols:
        values = c["values"]
        if c["dtype"] == "bytes":
            arr = np.empty(len(values), dtype=object)
            arr[:] = values
            values = arr if c["var_len"] else arr.reshape(c["shape"])
        if c["var_len"]:
            out[c["name"]] = Ragged(values, c["row_splits"])
        else:
            out[c["name"]] = values
    return out


def read_columns(paths: Paths, schema: Schema, compression: str | None = None) -> dict:
    """Reads and decodes every Example of ``paths`` into columns, in C++ with
    the GIL released: ``FixedLen`` -> ndarray of shape ``(rows, *shape)``;
    ``VarLen`` -> :class:`Ragged`. Bytes columns are object arrays of bytes."""
    _, cols = _native.read_columns(list_files(paths), _schema_rows(schema), compression)
    return _to_columns(cols)


def decode_columns(records: Sequence[bytes], schema: Schema) -> dict:
    """Like :func:`read_columns` for serialized Examples already in memory."""
    if not isinstance(records, (list, tuple)):
        records = list(records)
    _, cols = _native.decode_columns(records, _schema_rows(schema))
    return _to_columns(cols)


def infer_schema(paths: Paths, compression: str | None = None,
                 max_records: int | None = None) -> dict:
    """Scans records (all, or the first ``max_records``) and returns a schema:
    a feature present in every record with one constant length is
    ``FixedLen`` (shape ``()`` for length 1), anything else ``VarLen``.
    Raises InvalidArgument when records disagree on a feature's type."""
    files = list_files(paths)
    if not files:
        raise FileNotFoundError(f"no files in {paths!r}")
    limit = (1 << 63) if max_records is None else int(max_records)
    _, rows = _native.infer_schema(files, compression, limit)
    schema = {}
    for name, dtype, var_len, shape, *_stats in rows:
        schema[name] = VarLen(dtype) if var_len else FixedLen(dtype, tuple(shape))
    return schema
