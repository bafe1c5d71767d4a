"""Shared fixtures. Spark tests run on a real multi-executor Spark
(local-cluster: a master and 4 worker JVMs, each with one executor of one core), never on
local[N], which runs executors as threads inside the driver."""

import os
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Each test's time (setup, call and teardown), written as the run goes so that a run cut
# short still shows where its time went: build/test-durations.tsv.
DURATIONS = Path(__file__).resolve().parent.parent / "build" / "test-durations.tsv"


def pytest_sessionstart(session):
    DURATIONS.parent.mkdir(parents=True, exist_ok=True)
    DURATIONS.write_text("seconds\tphase\toutcome\ttest\n")


def pytest_runtest_logreport(report):
    with DURATIONS.open("a") as f:
        f.write(f"{report.duration:.1f}\t{report.when}\t{report.outcome}\t{report.nodeid}\n")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

# Remote stores: HDFS (Hadoop's minicluster) and S3 (moto) are started by the `hdfs` and
# `s3` fixtures on first use. Their client configuration lives at fixed places set here,
# before Spark starts, so that executors (which inherit this environment) find it too.
TEST_ENV = ROOT / "build" / "test-env"
shutil.rmtree(TEST_ENV, ignore_errors=True)
HADOOP_CONF = TEST_ENV / "hadoop-conf"
AWS_DIR = TEST_ENV / "aws"
for _var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
             "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION",
             "HADOOP_USER_NAME", "SPARKTF_FS_TIMEOUT"):
    os.environ.pop(_var, None)
# Temporary files of the tests, of the executors and of the node processes they start stay
# in the checkout, and are the leftovers the tests look for: another run on this machine
# (sharing /tmp) neither sees them nor adds to them.
TEST_TMP = TEST_ENV / "tmp"
TEST_TMP.mkdir(parents=True)
tempfile.tempdir = None
os.environ.update({
    "TMPDIR": str(TEST_TMP),
    "HADOOP_CONF_DIR": str(HADOOP_CONF),
    "AWS_CONFIG_FILE": str(AWS_DIR / "config"),
    "AWS_SHARED_CREDENTIALS_FILE": str(AWS_DIR / "credentials"),
    "AWS_EC2_METADATA_DISABLED": "true",  # never ask an instance-metadata address
})


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    from sparktf import jvm

    # Executors must run the same interpreter (the project's venv).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local-cluster[4,1,1024]")
        .appName("sparktf-tests")
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        # HADOOP_CONF_DIR (set above) gains the minicluster's core-site.xml once the hdfs
        # fixture runs; Spark's own default filesystem stays local whatever the order.
        .config("spark.hadoop.fs.defaultFS", "file:///")
        .config("spark.executorEnv.PYTHONPATH", os.pathsep.join(sys.path))
        # The JVM feeder (cluster.train(df) takes it when it is on the classpath).
        .config("spark.jars", jvm.jar_path())
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def hdfs():
    """A NameNode and 2 DataNodes (replication 2, 8 MiB blocks) on loopback; HADOOP_CONF_DIR
    points at its client configuration, so hdfs:/// is this cluster."""
    from minicluster import HdfsMiniCluster

    cluster = HdfsMiniCluster(HADOOP_CONF, datanodes=2, data_dir=TEST_ENV / "hdfs-data",
                              log=TEST_ENV / "hdfs.log").start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def s3():
    """moto's S3 server on loopback with bucket `sparktf-test`; AWS_CONFIG_FILE and
    AWS_SHARED_CREDENTIALS_FILE hold its endpoint and a valid key."""
    from s3server import MotoS3Server

    server = MotoS3Server(AWS_DIR, log=TEST_ENV / "moto.log").start()
    yield server
    server.stop()


@pytest.fixture(params=["local", "hdfs", "s3"])
def store(request, tmp_path):
    """A fresh directory URI on each kind of filesystem: a local path, hdfs:///... and
    s3://bucket/...; the same test runs on all three."""
    kind = request.param
    if kind == "local":
        return str(tmp_path)
    name = f"t-{uuid.uuid4().hex[:10]}"
    if kind == "hdfs":
        request.getfixturevalue("hdfs")
        return f"hdfs:///tmp/{name}"
    server = request.getfixturevalue("s3")
    return f"s3://{server.bucket}/{name}"


def free_port() -> int:
    """A TCP port that was free a moment ago (the kernel's pick, outside any fixed range)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
