"""TFoS's pipeline module (sparktf.pipeline), with tf.keras as Keras 2 on the nodes, and
its other public names (the Has* param mixins, TFTypeConverters, Namespace, TFParams and
helpers)."""

from __future__ import annotations

from pyspark.ml.param import Params

from sparktf import errors
from sparktf import pipeline as _core
from sparktf.compat import util as _util
from sparktf.pipeline import Namespace, _PARAMS, _with_params  # noqa: F401

TFParams = _core._TFParams


class TFTypeConverters:
    """TFoS's converter for dict-valued params."""

    @staticmethod
    def toDict(value):
        return _core._to_dict(value)


class TFModel(_core.TFModel):
    _legacy_keras = True


class TFEstimator(_core.TFEstimator):
    _legacy_keras = True

    @staticmethod
    def _model_class():
        return TFModel


def _mixin(name: str):
    suffix = _PARAMS[name][0]
    return _with_params(name)(type("Has" + suffix, (Params,), {}))


# TFoS's names for its param mixins (HasNumPS carries driver_ps_nodes too, as in TFoS).
HasBatchSize = _mixin("batch_size")
HasClusterSize = _mixin("cluster_size")
HasEpochs = _mixin("epochs")
HasGraceSecs = _mixin("grace_secs")
HasInputMapping = _mixin("input_mapping")
HasInputMode = _mixin("input_mode")
HasMasterNode = _mixin("master_node")
HasModelDir = _mixin("model_dir")
HasNumPS = _with_params("driver_ps_nodes")(_mixin("num_ps"))
HasOutputMapping = _mixin("output_mapping")
HasProtocol = _mixin("protocol")
HasReaders = _mixin("readers")
HasSteps = _mixin("steps")
HasTensorboard = _mixin("tensorboard")
HasTFRecordDir = _mixin("tfrecord_dir")
HasExportDir = _mixin("export_dir")
HasSignatureDefKey = _mixin("signature_def_key")
HasTagSet = _mixin("tag_set")


def single_node_env(args) -> None:
    """TFoS: sys.argv from an argv list, and this machine's GPUs for a single-node run."""
    import sys

    argv = args if isinstance(args, list) else getattr(args, "argv", None)
    if argv:
        sys.argv = argv
    _util.single_node_env(getattr(args, "num_gpus", 1) if not isinstance(args, list) else 1)


def get_meta_graph_def(saved_model_dir, tag_set):
    del saved_model_dir, tag_set
    raise errors.Unimplemented("get_meta_graph_def reads a TensorFlow 1 MetaGraphDef; use "
                               "sparktf.pipeline.read_signature(export_dir, key, tag_set) or "
                               "tf.saved_model.load(export_dir).signatures")


def yield_batch(iterable, batch_size: int, num_tensors: int = 1):
    """TFoS's helper: batches of `batch_size` rows as `num_tensors` lists, list i holding
    item[i] of each row (a bytearray as str); stops at a None item."""
    tensors = [[] for _ in range(num_tensors)]
    for item in iterable:
        if item is None:
            break
        for i in range(num_tensors):
            tensors[i].append(str(item[i]) if type(item[i]) is bytearray else item[i])
        if len(tensors[0]) >= batch_size:
            yield tensors
            tensors = [[] for _ in range(num_tensors)]
    if tensors[0]:
        yield tensors


# TFoS's per-worker model cache (sparktf.pipeline._predictors holds sparktf's).
pred_fn = None
global_sess = None
global_args = None
global_model = None
