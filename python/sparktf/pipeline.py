"""Spark ML stages (TFoS's pipeline module): TFEstimator trains on a cluster, TFModel
runs batched inference from the exported SavedModel on the executors.

    model = TFEstimator(train_fn, args).setInputMapping({"image": "image", "label": "label"}) \\
        .setClusterSize(2).setEpochs(3).setExportDir("hdfs:///m/export").fit(df)
    preds = model.setInputMapping({"image": "conv2d_input"}) \\
        .setOutputMapping({"dense_1": "prediction"}).transform(df)

Both have TFoS's parameters (with its defaults and setX/getX methods), are MLWritable /
MLReadable, work as stages of a pyspark.ml.Pipeline, and take param maps (fit(df,
paramMaps)), so CrossValidator and TrainValidationSplit can tune them.

Differences from TFoS, on purpose: TFModel.transform keeps the input DataFrame's columns
and appends the outputs (Spark ML's convention: evaluators need the label next to the
prediction; TFoS returned the outputs alone); only the input columns go to Python, as
Arrow batches (an Arrow UDF), and the SavedModel is loaded once per Python worker; float32 outputs are float
columns (TFoS's Python rows made them double); outputs of more than one dimension per row
are flattened into one array. `protocol` (always gRPC here) and `readers` (a TF1 queue
setting) are accepted and ignored with a warning.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import logging
import os
import threading
import warnings

from pyspark.ml.base import Estimator, Model
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.util import (DefaultParamsReader, DefaultParamsWriter, MLReadable, MLReader,
                             MLWritable, MLWriter)

from sparktf import errors

logger = logging.getLogger(__name__)


def _to_dict(value):
    if isinstance(value, dict):
        return dict(value)
    raise TypeError(f"expected a dict, got {value!r}")


# name -> (setter/getter suffix, doc, type converter): TFoS's parameters.
_PARAMS = {
    "batch_size": ("BatchSize", "Number of records per batch", TypeConverters.toInt),
    "cluster_size": ("ClusterSize", "Number of nodes in the cluster", TypeConverters.toInt),
    "epochs": ("Epochs", "Number of epochs to train", TypeConverters.toInt),
    "grace_secs": ("GraceSecs",
                   "Seconds to wait after feeding (TFoS; not needed: fit waits for the export)",
                   TypeConverters.toInt),
    "input_mapping": ("InputMapping", "Mapping of input DataFrame column to input tensor",
                      _to_dict),
    "input_mode": ("InputMode", "Input data feeding mode (0=TENSORFLOW, 1=SPARK)",
                   TypeConverters.toInt),
    "master_node": ("MasterNode", "Job name of the master/chief worker node",
                    TypeConverters.toString),
    "model_dir": ("ModelDir", "Path to save/load model checkpoints", TypeConverters.toString),
    "num_ps": ("NumPS", "Number of PS nodes in the cluster", TypeConverters.toInt),
    "driver_ps_nodes": ("DriverPSNodes", "Run PS nodes on the driver", TypeConverters.toBoolean),
    "output_mapping": ("OutputMapping", "Mapping of output tensor to output DataFrame column",
                       _to_dict),
    "protocol": ("Protocol", "Network protocol for TensorFlow (grpc|rdma)",
                 TypeConverters.toString),
    "readers": ("Readers", "Number of reader/enqueue threads (TF1; ignored)",
                TypeConverters.toInt),
    "steps": ("Steps", "Maximum number of steps to train", TypeConverters.toInt),
    "tensorboard": ("Tensorboard", "Launch a TensorBoard process", TypeConverters.toBoolean),
    "tfrecord_dir": ("TFRecordDir", "Path to export a DataFrame as TFRecords to "
                     "(InputMode.TENSORFLOW)", TypeConverters.toString),
    "export_dir": ("ExportDir", "Directory of the exported SavedModel", TypeConverters.toString),
    "signature_def_key": ("SignatureDefKey", "SavedModel signature to run",
                          TypeConverters.toString),
    "tag_set": ("TagSet", "Comma-separated tags of the SavedModel's MetaGraph",
                TypeConverters.toString),
}


def _with_params(*names):
    """Adds TFoS's Params `names` to a class, with their setX/getX methods."""

    def decorate(cls):
        for name in names:
            suffix, doc, converter = _PARAMS[name]
            setattr(cls, name, Param(Params._dummy(), name, doc, typeConverter=converter))
            setattr(cls, "set" + suffix, lambda self, value, _n=name: self._set(**{_n: value}))
            setattr(cls, "get" + suffix, lambda self, _n=name: self.getOrDefault(_n))
        return cls

    return decorate


class Namespace:
    """TFoS's args holder: a dict, argparse.Namespace or Namespace as attributes, or an
    argv list (kept as ``argv``)."""

    argv = None

    def __init__(self, d):
        if isinstance(d, list):
            self.argv = d
        elif isinstance(d, dict):
            self.__dict__.update(d)
        elif isinstance(d, (argparse.Namespace, Namespace)):
            self.__dict__.update(vars(d))
        elif d is None:
            pass
        else:
            raise errors.InvalidArgument(f"tf_args must be a dict, an argparse.Namespace or "
                                         f"an argv list, got {type(d).__name__}")

    def __iter__(self):
        return iter(self.argv if self.argv else self.__dict__)

    def __contains__(self, key):
        return key in self.__dict__

    def __repr__(self):
        if self.argv:
            return repr(self.argv)
        items = ", ".join(f"{k}={v!r}" for k, v in sorted(self.__dict__.items()))
        return f"Namespace({items})"

    def __eq__(self, other):
        return isinstance(other, Namespace) and vars(self) == vars(other)


class _TFParams(Params):
    """The args given to the constructor, merged with the Params for the user's code."""

    args: Namespace = None
    _legacy_keras = None  # TFCluster.run's legacy_keras (sparktf.compat: True)

    def merge_args_params(self) -> Namespace:
        merged = copy.copy(self.args)
        merged.__dict__ = dict(vars(self.args))
        for p in self.params:
            if self.isDefined(p):
                setattr(merged, p.name, self.getOrDefault(p))
        return merged

    def _warn_ignored(self) -> None:
        for name, meaningful in (("protocol", "grpc"), ("readers", 1)):
            if self.hasParam(name) and self.isDefined(name) and \
                    self.getOrDefault(name) != meaningful:
                msg = (f"sparktf: {name}={self.getOrDefault(name)!r} is ignored "
                       f"({'TensorFlow talks gRPC here' if name == 'protocol' else 'a TF1 queue-runner setting'})")
                warnings.warn(msg, stacklevel=3)
                logger.warning(msg)


class _Writer(MLWriter):
    """Params as Spark ML metadata (JSON), and the constructor's arguments (the training
    function, tf_args) pickled beside them, both written with Spark (any filesystem)."""

    def __init__(self, instance):
        super().__init__()
        self.instance = instance

    def saveImpl(self, path: str) -> None:
        try:
            import cloudpickle
        except ImportError:
            from pyspark import cloudpickle

        DefaultParamsWriter.saveMetadata(self.instance, path, self.sparkSession)
        blob = cloudpickle.dumps(self.instance._constructor_state())
        self.sparkSession.sparkContext.parallelize([blob], 1).saveAsPickleFile(
            os.path.join(path, "sparktf_state"))


class _Reader(MLReader):
    def __init__(self, cls):
        super().__init__()
        self.cls = cls

    def load(self, path: str):
        import pickle

        metadata = DefaultParamsReader.loadMetadata(path, self.sparkSession)
        blob = self.sparkSession.sparkContext.pickleFile(
            os.path.join(path, "sparktf_state")).collect()[0]
        module, _, name = metadata["class"].rpartition(".")
        cls = getattr(__import__(module, fromlist=[name]), name)
        instance = cls._from_constructor_state(pickle.loads(blob))
        instance._resetUid(metadata["uid"])
        DefaultParamsReader.getAndSetParams(instance, metadata)
        return instance


class _ReadWrite(MLWritable, MLReadable):
    def write(self) -> MLWriter:
        return _Writer(self)

    @classmethod
    def read(cls) -> MLReader:
        return _Reader(cls)


@_with_params("input_mapping", "cluster_size", "num_ps", "driver_ps_nodes", "input_mode",
              "master_node", "protocol", "grace_secs", "tensorboard", "model_dir",
              "export_dir", "tfrecord_dir", "batch_size", "epochs", "readers", "steps",
              "output_mapping", "signature_def_key", "tag_set")
class TFEstimator(Estimator, _TFParams, _ReadWrite):
    """Trains with ``train_fn(args, ctx)`` on a sparktf cluster of `cluster_size` nodes
    and returns a TFModel with the same args and params (TFoS's TFEstimator; beyond
    TFoS, output_mapping, signature_def_key and tag_set pass on to the model, so that a
    fitted model transforms without more setup, e.g. inside CrossValidator).

    InputMode.SPARK (the default): the DataFrame's input_mapping columns (sorted by name)
    are fed `epochs` times; train_fn reads them with ``ctx.get_data_feed()`` /
    ``TFNode.DataFeed(ctx.mgr, ...)`` or ``ctx.dataset(...)``. InputMode.TENSORFLOW: the
    columns are written as TFRecords to `tfrecord_dir` (unless the DataFrame was read
    with dfutil.loadTFRecords: then its own files), which train_fn reads (args.tfrecord_dir).
    train_fn should export a SavedModel to args.export_dir for TFModel."""

    def __init__(self, train_fn, tf_args=None, export_fn=None):
        super().__init__()
        if export_fn is not None:
            raise errors.Unimplemented("TFEstimator's export_fn is TensorFlow 1 (TFoS refused "
                                       "it on TF 2 too): export in train_fn with "
                                       "ctx.export_model(model, args.export_dir)")
        self.train_fn = train_fn
        self.args = Namespace(tf_args)
        self._setDefault(input_mapping={}, cluster_size=1, num_ps=0, driver_ps_nodes=False,
                         input_mode=1, master_node="chief", protocol="grpc",
                         tensorboard=False, model_dir=None, export_dir=None,
                         tfrecord_dir=None, batch_size=100, epochs=1, readers=1, steps=1000,
                         grace_secs=30, output_mapping={}, signature_def_key="serving_default",
                         tag_set=None)

    def _constructor_state(self):
        return (self.train_fn, self.args)

    @classmethod
    def _from_constructor_state(cls, state):
        return cls(state[0], state[1])

    def _fit(self, dataset):
        from sparktf import TFCluster, dfutil

        self._warn_ignored()
        args = self.merge_args_params()
        mapping = self.getInputMapping()
        if not mapping:
            raise errors.InvalidArgument("TFEstimator needs setInputMapping({column: tensor})")
        missing = [c for c in mapping if c not in dataset.columns]
        if missing:
            raise errors.InvalidArgument(f"input_mapping names columns {missing} that the "
                                         f"DataFrame does not have ({dataset.columns})")
        input_cols = sorted(mapping)
        mode = self.getInputMode()
        if mode not in (TFCluster.InputMode.SPARK, TFCluster.InputMode.TENSORFLOW):
            raise errors.InvalidArgument(f"input_mode must be 0 (TENSORFLOW) or 1 (SPARK), "
                                         f"got {mode}")
        if mode == TFCluster.InputMode.TENSORFLOW:
            if dataset in dfutil.loaded_from:
                args.tfrecord_dir = dfutil.loaded_from[dataset]
            elif not args.tfrecord_dir:
                raise errors.InvalidArgument("InputMode.TENSORFLOW needs setTFRecordDir(path): "
                                             "the DataFrame is written there as TFRecords")
            else:
                dfutil.saveAsTFRecords(dataset.select(input_cols), args.tfrecord_dir)
        tf_args = self.args.argv if self.args.argv else args
        sc = dataset.sparkSession.sparkContext
        cluster = TFCluster.run(sc, self.train_fn, tf_args, self.getClusterSize(),
                                num_ps=self.getNumPS(), tensorboard=self.getTensorboard(),
                                input_mode=mode, master_node=self.getMasterNode(),
                                driver_ps_nodes=self.getDriverPSNodes(),
                                legacy_keras=self._legacy_keras)
        if mode == TFCluster.InputMode.SPARK:
            cluster.train(dataset.select(input_cols), self.getEpochs())
        cluster.shutdown(grace_secs=self.getGraceSecs())
        return self._copyValues(self._model_class()(self.args))

    @staticmethod
    def _model_class():
        return TFModel


@_with_params("input_mapping", "output_mapping", "batch_size", "model_dir", "export_dir",
              "signature_def_key", "tag_set")
class TFModel(Model, _TFParams, _ReadWrite):
    """Runs the SavedModel in `export_dir` on the executors (TFoS's TFModel): each
    Python worker loads it once; the DataFrame comes as Arrow batches; `input_mapping`
    {column: signature input} feeds it, in batches of `batch_size`; `output_mapping`
    {signature output: column} names the columns appended."""

    def __init__(self, tf_args=None):
        super().__init__()
        self.args = Namespace(tf_args)
        self._setDefault(input_mapping={}, output_mapping={}, batch_size=100, model_dir=None,
                         export_dir=None, signature_def_key="serving_default", tag_set=None)

    def _constructor_state(self):
        return self.args

    @classmethod
    def _from_constructor_state(cls, state):
        return cls(state)

    def _transform(self, dataset):
        self._warn_ignored()
        export_dir = self.getExportDir()
        if not export_dir:
            raise errors.InvalidArgument("TFModel needs setExportDir(path of a SavedModel)")
        inputs, outputs = dict(self.getInputMapping()), dict(self.getOutputMapping())
        if not inputs or not outputs:
            raise errors.InvalidArgument("TFModel needs setInputMapping({column: input}) and "
                                         "setOutputMapping({output: column})")
        missing = [c for c in inputs if c not in dataset.columns]
        if missing:
            raise errors.InvalidArgument(f"input_mapping names columns {missing} that the "
                                         f"DataFrame does not have ({dataset.columns})")
        key = self.getSignatureDefKey() or "serving_default"
        tags = self.getTagSet()
        signature = read_signature(export_dir, key, tags)
        # Columns mapped to tensors the signature does not take (the label a TFEstimator
        # was fed) are not inputs; every input of the signature needs a column.
        inputs = {c: t for c, t in inputs.items() if t in signature["inputs"]}
        unfed = sorted(set(signature["inputs"]) - set(inputs.values()))
        unknown = [t for t in outputs if t not in signature["outputs"]]
        if unfed or unknown:
            raise errors.InvalidArgument(
                f"signature {key!r} of {export_dir} takes inputs {sorted(signature['inputs'])}"
                f" and has outputs {sorted(signature['outputs'])}: "
                + (f"input_mapping feeds none of {unfed}; " if unfed else "")
                + (f"output_mapping names {unknown}" if unknown else ""))
        taken = [c for c in outputs.values() if c in dataset.columns]
        if taken:
            raise errors.InvalidArgument(f"output columns {taken} exist in the DataFrame")
        from pyspark.sql import functions as F
        from pyspark.sql.functions import ArrowUDFType, arrow_udf
        from pyspark.sql.types import StructField, StructType

        outputs = dict(sorted(outputs.items()))
        result = StructType([StructField(col, _spark_type(*signature["outputs"][t]), False)
                             for t, col in outputs.items()])
        plan = {"export_dir": export_dir, "key": key, "tags": tags,
                "fingerprint": signature["fingerprint"], "inputs": inputs,
                "outputs": outputs, "input_specs": signature["inputs"],
                "batch_size": self.getBatchSize()}
        # Only the input columns go to Python and only the outputs come back (an Arrow
        # UDF over batches); the other columns stay in the JVM.
        predict = arrow_udf(_infer_arrays(plan), returnType=result,
                            functionType=ArrowUDFType.SCALAR_ITER)
        packed = f"__sparktf_{self.uid}"
        with_outputs = dataset.withColumn(packed, predict(*[F.col(c) for c in inputs]))
        return with_outputs.select(*[F.col(c) for c in dataset.columns],
                                   *[F.col(packed)[col].alias(col) for col in outputs.values()])


def read_signature(export_dir: str, key: str, tags: str | None) -> dict:
    """{"inputs"|"outputs": {name: (numpy dtype name, shape with -1 for unknown)},
    "fingerprint": of the graph and the variables' checksums} of signature `key` of the
    SavedModel in `export_dir` (its saved_model.pb and variables index; the variables are
    not loaded). NotFound / InvalidArgument with what the model has."""
    from sparktf import fs

    try:
        from tensorflow.core.protobuf import saved_model_pb2
        from tensorflow.python.framework import dtypes
    except ImportError as e:
        raise errors.NotFound(f"TFModel needs TensorFlow on the driver: {e}") from e
    path = export_dir.rstrip("/") + "/saved_model.pb"
    try:
        data = fs.read_bytes(path)
    except errors.NotFound as e:
        raise errors.NotFound(f"no SavedModel in {export_dir} ({path} is missing)") from e
    sm = saved_model_pb2.SavedModel()
    sm.ParseFromString(data)
    try:  # its tensors' checksums: a model retrained into the same directory differs
        index = fs.read_bytes(export_dir.rstrip("/") + "/variables/variables.index")
    except errors.NotFound:
        index = b""
    wanted = set(tags.split(",")) if tags else {"serve"}
    graphs = [g for g in sm.meta_graphs if set(g.meta_info_def.tags) == wanted]
    if not graphs:
        raise errors.InvalidArgument(
            f"{export_dir} has no MetaGraph tagged {sorted(wanted)} (it has "
            f"{[sorted(g.meta_info_def.tags) for g in sm.meta_graphs]})")
    sigs = graphs[0].signature_def
    if key not in sigs:
        raise errors.InvalidArgument(f"{export_dir} has no signature {key!r} (it has "
                                     f"{sorted(sigs)})")

    def specs(infos):
        return {name: (dtypes.as_dtype(i.dtype).as_numpy_dtype.__name__,
                       tuple(d.size for d in i.tensor_shape.dim))
                for name, i in infos.items()}

    return {"inputs": specs(sigs[key].inputs), "outputs": specs(sigs[key].outputs),
            "fingerprint": hashlib.sha256(data + index).hexdigest()}


def _spark_type(dtype: str, shape: tuple):
    from pyspark.sql import types as T

    base = {"float32": T.FloatType(), "float64": T.DoubleType(), "int32": T.IntegerType(),
            "int64": T.LongType(), "bool": T.BooleanType(), "bytes_": T.BinaryType(),
            "object_": T.BinaryType(), "int8": T.ByteType(), "int16": T.ShortType(),
            "uint8": T.ShortType()}.get(dtype)
    if base is None:
        raise errors.InvalidArgument(f"TFModel cannot store outputs of dtype {dtype}")
    return base if len(shape) <= 1 else T.ArrayType(base, False)


# Per Python worker: (export_dir, tags, key) -> (fingerprint, model, signature function);
# a model saved again into the same directory (another fit) has another fingerprint.
_predictors: dict = {}
_predictors_lock = threading.Lock()


def _predictor(export_dir: str, tags: str | None, key: str, fingerprint: str):
    with _predictors_lock:
        cached = _predictors.get((export_dir, tags, key))
        if cached is None or cached[0] != fingerprint:
            import tensorflow as tf

            _use_task_cpus(tf)
            if "://" in export_dir and not export_dir.startswith("file:"):
                import sparktf.tf  # noqa: F401 - hdfs:// and s3:// for TensorFlow
            model = tf.saved_model.load(export_dir, tags=tags.split(",") if tags else None)
            cached = (fingerprint, model, model.signatures[key])
            _predictors[(export_dir, tags, key)] = cached
        return cached[2]


def _use_task_cpus(tf) -> None:
    """TensorFlow in a Python worker uses the task's cores (spark.task.cpus), not every
    core of the machine: its idle threads would spin on the cores the executor's JVM needs
    to feed it. Only possible before TensorFlow's runtime starts in this process."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    cpus = ctx.cpus() if ctx is not None else 0
    if cpus <= 0:
        return
    try:
        tf.config.threading.set_intra_op_parallelism_threads(cpus)
        tf.config.threading.set_inter_op_parallelism_threads(cpus)
    except RuntimeError:  # the runtime already runs (this worker used TensorFlow before)
        pass


def _infer_arrays(plan: dict):
    """The Arrow UDF's function: batches of the input columns (one pa.Array, or a tuple of
    them in plan["inputs"] order) -> a StructArray of the outputs, row for row."""

    def infer(batches):
        import numpy as np
        import pyarrow as pa

        from sparktf.feeding import arrow_columns

        fn = _predictor(plan["export_dir"], plan["tags"], plan["key"], plan["fingerprint"])
        n_batch = max(int(plan["batch_size"]), 1)
        names = list(plan["inputs"])
        for arrays in batches:
            arrays = [arrays] if isinstance(arrays, (pa.Array, pa.ChunkedArray)) else arrays
            arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
                      for a in arrays]
            cols = arrow_columns(pa.RecordBatch.from_arrays(arrays, names=names))
            rows = len(arrays[0])
            outs = {t: [] for t in plan["outputs"]}
            for start in range(0, rows, n_batch):
                feed = {}
                for col, tensor in plan["inputs"].items():
                    dtype, shape = plan["input_specs"][tensor]
                    value = cols[col][start:start + n_batch]
                    feed[tensor] = _as_input(np.asarray(value), dtype, shape, tensor)
                result = fn(**feed)
                n_in = min(n_batch, rows - start)
                for t in outs:
                    out = result[t].numpy()
                    if len(out) != n_in:
                        raise errors.InvalidArgument(
                            f"output {t!r} has {len(out)} rows for {n_in} inputs")
                    outs[t].append(out)
            yield pa.StructArray.from_arrays(
                [_to_arrow(outs[t], rows, pa, np) for t in plan["outputs"]],
                names=list(plan["outputs"].values()))

    return infer


def _as_input(value, dtype: str, shape: tuple, tensor: str):
    """A column's values as the signature input wants them: its dtype, and its shape when
    the values per row agree (Spark holds flat arrays: 784 values -> (28, 28, 1))."""
    import numpy as np

    value = value.astype(np.dtype(dtype), copy=False) if dtype not in ("bytes_", "object_") \
        else value
    want = shape[1:]
    if want and all(d > 0 for d in want) and value.shape[1:] != want:
        per_row = int(np.prod(want))
        if value.size != len(value) * per_row:
            raise errors.InvalidArgument(f"input {tensor!r} wants {list(want)} per row; the "
                                         f"column has {list(value.shape[1:])}")
        value = value.reshape((len(value),) + want)
    return value


def _to_arrow(parts: list, rows: int, pa, np):
    values = np.concatenate(parts) if parts else np.zeros((0,))
    if values.ndim <= 1:
        return pa.array(values)
    flat = values.reshape(rows, -1)
    offsets = np.arange(0, flat.size + 1, flat.shape[1], dtype=np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat.reshape(-1)))
