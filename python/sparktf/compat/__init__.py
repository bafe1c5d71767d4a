"""TFoS's modules, so that a TensorFlowOnSpark program ports by changing its import:

    from tensorflowonspark import TFCluster, TFNode, compat    # before
    from sparktf.compat import TFCluster, TFNode, compat       # after

    from tensorflowonspark.pipeline import TFEstimator, TFModel
    from sparktf.compat.pipeline import TFEstimator, TFModel

Every public name of TFoS 2.2.5's modules is here, and works as TFoS documents it or
raises an error that says what to use instead (README: "Coming from TensorFlowOnSpark").
Programs that come through here get tf.keras as Keras 2 on the nodes (legacy_keras).
"""

import importlib

from sparktf.TFCluster import InputMode  # noqa: F401

_MODULES = ["TFCluster", "TFManager", "TFNode", "TFParallel", "TFSparkNode", "compat",
            "dfutil", "gpu_info", "marker", "pipeline", "reservation", "util"]
__all__ = _MODULES + ["InputMode"]
_HERE = {"TFCluster", "TFManager", "TFNode", "TFParallel", "TFSparkNode", "compat", "dfutil",
         "gpu_info", "marker", "reservation", "util", "pipeline"}


def __getattr__(name):
    if name in _HERE:
        return importlib.import_module(f"sparktf.compat.{name}")
    raise AttributeError(f"module 'sparktf.compat' has no attribute {name!r}")
