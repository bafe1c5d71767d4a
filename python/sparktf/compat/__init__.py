"""TFoS module names, so a TensorFlowOnSpark program ports by changing its import:

    from tensorflowonspark import TFCluster, dfutil   # before
    from sparktf.compat import TFCluster, dfutil      # after
"""

from sparktf import TFCluster, TFNode, dfutil  # noqa: F401
from sparktf.TFCluster import InputMode  # noqa: F401

__all__ = ["TFCluster", "TFNode", "dfutil", "InputMode"]
