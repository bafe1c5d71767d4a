"""TFoS's dfutil, with its signatures, over sparktf.dfutil (native codec, no Hadoop jar).

Differences from TFoS: loadTFRecords infers FloatList features as float (32-bit, what
they hold) where TFoS said double; saveAsTFRecords writes through sparktf's committer
(a failed or retried task leaves nothing). infer_schema, toTFExample and fromTFExample
keep TFoS's types and shapes."""

from __future__ import annotations

from sparktf import dfutil as _core
from sparktf.dfutil import infer_spark_schema  # noqa: F401 - sparktf's own, from files

loadedDF = _core.loaded_from  # TFoS's name: DataFrame -> the directory it was read from


def isLoadedDF(df) -> bool:
    """Whether `df` came from loadTFRecords (TFoS's pipeline used it to skip a re-export)."""
    return df in loadedDF


def saveAsTFRecords(df, output_dir: str, **options) -> None:
    """Writes `df` as TFRecord files of tf.train.Example under `output_dir`."""
    _core.saveAsTFRecords(df, output_dir, **options)


def loadTFRecords(sc, input_dir, binary_features=(), **options):
    """The TFRecords of tf.train.Example under `input_dir` as a DataFrame."""
    return _core.loadTFRecords(sc, input_dir, binary_features=binary_features, **options)


def toTFExample(dtypes):
    """A mapPartitions function: Rows (of a DataFrame with these `dtypes`) to
    (serialized tf.train.Example as bytearray, None) pairs, as TFoS's."""
    from sparktf import _native

    names = [name for name, _ in dtypes]
    supported = ("float", "double", "boolean", "tinyint", "smallint", "int", "bigint", "long",
                 "binary", "string", "array<float>", "array<double>", "array<boolean>",
                 "array<tinyint>", "array<smallint>", "array<int>", "array<bigint>",
                 "array<long>")
    bad = [f"{n}: {t}" for n, t in dtypes if t not in supported]
    if bad:
        raise TypeError(f"toTFExample cannot store columns {bad}")

    def to_examples(rows):
        for row in rows:
            d = {n: row[n] for n in names}
            yield (bytearray(_native.encode_example(d)), None)

    return to_examples


def _feature_values(feature):
    for kind in ("int64_list", "float_list", "bytes_list"):
        if feature.HasField(kind):
            return kind, list(getattr(feature, kind).value)
    return "bytes_list", []


def infer_schema(example, binary_features=()):
    """The StructType of a tf.train.Example, as TFoS infers it: Int64List -> long,
    FloatList -> double, BytesList -> string (binary if named in binary_features); a
    feature with more than one value -> an array of that type; columns sorted by name."""
    from pyspark.sql.types import (ArrayType, BinaryType, DoubleType, LongType, StringType,
                                   StructField, StructType)

    fields = []
    for name, feature in sorted(example.features.feature.items()):
        kind, values = _feature_values(feature)
        if name in binary_features:
            t = BinaryType()
        else:
            t = {"int64_list": LongType(), "float_list": DoubleType()}.get(kind, StringType())
            if len(values) > 1:
                t = ArrayType(t)
        fields.append(StructField(name, t, True))
    return StructType(fields)


def fromTFExample(iter, binary_features=()):  # noqa: A002 - TFoS's argument name
    """A mapPartitions function body: (serialized Example, _) pairs to Rows, as TFoS's:
    single values as scalars, several as lists, bytes as str unless in binary_features."""
    from pyspark.sql import Row

    from sparktf import _native

    out = []
    for record in iter:
        data = record[0] if isinstance(record, (tuple, list)) else record
        values = {}
        for name, vals in sorted(_native.decode_example(bytes(data)).items()):
            if vals is None:
                values[name] = None
                continue
            items = vals.tolist() if hasattr(vals, "tolist") else list(vals)
            if isinstance(vals, list):  # BytesList
                values[name] = bytearray(items[0]) if name in binary_features else \
                    items[0].decode("utf-8")
                continue
            values[name] = items[0] if len(items) == 1 else items
        out.append(Row(**values))
    return out
