"""sparktf: distributed TensorFlow training and inference on Apache Spark.

The native core (``sparktf._native``) does the work; these modules adapt it to
Python, PySpark and TensorFlow: :mod:`sparktf.records`, :mod:`sparktf.dfutil`,
:mod:`sparktf.TFCluster`. Submodules load on first use, so that node
processes start fast.
"""

import importlib

__version__ = "0.1.0"
__all__ = ["errors", "records", "dfutil", "TFCluster", "TFNode", "data", "node", "__version__"]


def __getattr__(name):
    if name in __all__:
        return importlib.import_module(f"sparktf.{name}")
    raise AttributeError(f"module 'sparktf' has no attribute {name!r}")
