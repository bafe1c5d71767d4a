"""sparktf on YARN: Hadoop's own ResourceManager and 2 NodeManagers (the minicluster, with
HDFS as the default FS) and jobs submitted to it with `spark-submit --master yarn`, as the
seeds submit theirs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.storage, pytest.mark.spark, pytest.mark.tensorflow,
              pytest.mark.yarn]

ROOT = Path(__file__).resolve().parent.parent
TEST_ENV = ROOT / "build" / "test-env"


@pytest.fixture(scope="module")
def yarn():
    """HDFS (a NameNode, 2 DataNodes) and YARN (a ResourceManager, 2 NodeManagers of
    6 GiB each, physical-memory checks on) in one JVM; its client files (core-site.xml,
    hdfs-site.xml, yarn-site.xml) are what HADOOP_CONF_DIR names for spark-submit."""
    from minicluster import HdfsMiniCluster

    cluster = HdfsMiniCluster(TEST_ENV / "yarn-conf", datanodes=2,
                              data_dir=TEST_ENV / "yarn-data", log=TEST_ENV / "yarn.log",
                              nodemanagers=2).start()
    yield cluster
    cluster.stop()


def spark_submit(yarn, deploy_mode, script, *args, timeout=900):
    """spark-submit --master yarn as a user runs it, with the executors' and driver's
    Python set by spark.pyspark.python."""
    bin_dir = os.path.dirname(sys.executable)
    env = dict(os.environ, HADOOP_CONF_DIR=str(yarn.conf_dir), TF_CPP_MIN_LOG_LEVEL="3",
               PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    cmd = [os.path.join(bin_dir, "spark-submit"), "--master", "yarn",
           "--deploy-mode", deploy_mode, "--num-executors", "2", "--executor-cores", "1",
           "--executor-memory", "1g", "--driver-memory", "1g",
           "--conf", "spark.yarn.am.memory=512m",
           "--conf", f"spark.pyspark.python={sys.executable}",
           "--conf", "spark.ui.showConsoleProgress=false",
           str(script), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("deploy_mode", ["client", "cluster"])
def test_the_seeds_job_runs_on_yarn(yarn, deploy_mode):
    """examples/hdfs_workflow.py submitted to YARN: TFRecord shards written to HDFS by the
    executors, MWMS training (a chief and a worker) reading them with tf.data, export to
    HDFS, and distributed inference; every node runs inside a YARN container (and the
    driver too in cluster mode)."""
    from sparktf import fs

    base = f"{yarn.url}/seeds-yarn-{deploy_mode}"
    report_uri = f"{yarn.url}/reports/seeds-yarn-{deploy_mode}.json"
    p = spark_submit(yarn, deploy_mode, ROOT / "examples" / "hdfs_workflow.py",
                     "--base", base, "--epochs", "6", "--report", report_uri)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-6000:]
    r = json.loads(fs.read_bytes(report_uri))

    assert r["master"] == "yarn" and r["default_fs"] == yarn.url
    if deploy_mode == "cluster":
        assert r["driver_container"].startswith("container_")
    else:
        assert r["driver_container"] is None
    containers = [n["container"] for n in r["nodes"]]
    assert all(c and c.startswith("container_") for c in containers), containers
    assert len(set(containers)) == 2 and r["driver_container"] not in containers
    assert sorted(n["job_name"] for n in r["nodes"]) == ["chief", "worker"]
    assert r["checkpoints"] == [f"ckpt-{e:02d}" for e in range(1, 7)]
    assert r["predictions"] == r["num_test"] and r["num_train"] + r["num_test"] == 1309
    assert r["accuracy"] >= r["baseline"] + 0.05, (r["accuracy"], r["baseline"])
