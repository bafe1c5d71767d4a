"""sparktf: distributed TensorFlow training and inference on Apache Spark.

The native core (``sparktf._native``) does the work; these modules adapt it to
Python, PySpark and TensorFlow: :mod:`sparktf.records`, :mod:`sparktf.dfutil`,
:mod:`sparktf.TFCluster`. Submodules load on first use, so that node
processes start fast.
"""

import importlib
import os

__version__ = "0.1.0"
__all__ = ["errors", "records", "dfutil", "TFCluster", "TFNode", "data", "node", "jvm",
           "__version__"]


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


def _adopt_container_tmp() -> None:
    """In a YARN container, Spark gives its JVM ./tmp (inside the container's directory,
    which YARN deletes with the container) as the temporary directory but leaves TMPDIR
    unset; use the same for this process and the node processes it starts, so that a
    container killed before it cleans up leaves nothing on the host."""
    if os.environ.get("TMPDIR") or not os.environ.get("CONTAINER_ID"):
        return
    container_tmp = os.path.join(os.getcwd(), "tmp")
    if os.path.isdir(container_tmp) and os.access(container_tmp, os.W_OK):
        import tempfile

        os.environ["TMPDIR"] = container_tmp
        tempfile.tempdir = None  # recomputed from TMPDIR on next use


_adopt_spark_hadoop_conf()
_adopt_container_tmp()
