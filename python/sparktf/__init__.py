"""sparktf: distributed TensorFlow training and inference on Apache Spark.

The native core (``sparktf._native``) does the work; these modules adapt it to
Python, PySpark and TensorFlow. Start with :mod:`sparktf.records` and
:mod:`sparktf.dfutil`.
"""

from sparktf import errors, records

__version__ = "0.1.0"
__all__ = ["errors", "records", "__version__"]
