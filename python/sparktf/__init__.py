"""sparktf: distributed TensorFlow training and inference on Apache Spark.

The native core (``sparktf._native``) does the work; these modules adapt it to
Python, PySpark and TensorFlow: :mod:`sparktf.records`, :mod:`sparktf.dfutil`,
:mod:`sparktf.TFCluster`. Submodules load on first use, so that node
processes start fast.
"""

import importlib
import os

__version__ = "0.1.0"
__all__ = ["errors", "records", "dfutil", "TFCluster", "TFNode", "data", "node", "__version__"]


def __getattr__(name):
    if name in __all__:
        return importlib.import_module(f"sparktf.{name}")
    raise AttributeError(f"module 'sparktf' has no attribute {name!r}")


def _adopt_spark_hadoop_conf() -> None:
    """In a YARN container, Spark ships the client's Hadoop configuration as
    ./__spark_conf__/__hadoop_conf__ but sets no HADOOP_CONF_DIR; point it there (for
    this process and the node processes it starts) so that hdfs:/// means the same
    cluster as on the driver."""
    if os.environ.get("HADOOP_CONF_DIR") or os.environ.get("HADOOP_HOME"):
        return
    shipped = os.path.join(os.getcwd(), "__spark_conf__", "__hadoop_conf__")
    if os.path.isfile(os.path.join(shipped, "core-site.xml")):
        os.environ["HADOOP_CONF_DIR"] = shipped


_adopt_spark_hadoop_conf()
