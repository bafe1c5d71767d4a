"""Shared fixtures. Spark tests run on a real multi-executor Spark
(local-cluster: a master and 4 worker JVMs, each with one executor of one core), never on
local[N], which runs executors as threads inside the driver."""

import os
import sys

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    # Executors must run the same interpreter (the project's venv).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local-cluster[4,1,1024]")
        .appName("sparktf-tests")
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.executorEnv.PYTHONPATH", os.pathsep.join(sys.path))
        .getOrCreate()
    )
    yield session
    session.stop()
