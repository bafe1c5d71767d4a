"""sparktf on YARN: Hadoop's own ResourceManager and 2 NodeManagers (the minicluster, with
HDFS as the default FS) and jobs submitted to it with `spark-submit --master yarn`, as the
seeds submit theirs."""

import json
import os
import re
import subprocess
import sys
import time
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


@pytest.fixture(scope="module")
def packed_env(yarn):
    """This test environment packed by `sparktf pack` and put on HDFS, world-readable, as
    the seeds do with theirs (YARN then localizes it once per NodeManager)."""
    from sparktf import fs

    archive = TEST_ENV / "sparktf-env.tar.gz"
    sparktf_cli = os.path.join(os.path.dirname(sys.executable), "sparktf")
    # Without the test-only packages (the S3 server, its AWS client and linter, the browser
    # driver, pytest, the extension's build tools): about 16,000 fewer files for each
    # NodeManager to unpack (a chmod forked per file, about 2 ms each).
    test_only = ["moto", "cfnlint", "cfn_lint", "sympy", "mpmath", "networkx", "selenium",
                 "trio*", "graphql*", "boto3", "botocore", "s3transfer", "aws_xray_sdk",
                 "_pytest", "pytest", "pytest_timeout", "scikit_build_core", "nanobind"]
    p = subprocess.run([sparktf_cli, "pack", "-o", str(archive), "-f",
                        *[a for name in test_only for a in ("--exclude-package", name)]],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "--archives sparktf-env.tar.gz#env" in p.stdout, p.stdout
    # The README's `hdfs dfs -put sparktf-env.tar.gz /envs/`, with Hadoop's own shell.
    for cmd in (["-mkdir", "-p", "/envs"], ["-put", "-f", str(archive), "/envs/"]):
        put = yarn.hdfs(*cmd, capture_output=True, text=True, timeout=300)
        assert put.returncode == 0, put.stdout + put.stderr
    archive.unlink()
    uri = f"{yarn.url}/envs/sparktf-env.tar.gz"
    assert fs.stat(uri).size > 0
    return uri


def container_logs(yarn, submit_output: str, tail: int = 40) -> str:
    """The end of every container's stdout and stderr of the application that a
    spark-submit printed, from the NodeManagers' log directories."""
    import re

    apps = set(re.findall(r"application_\d+_\d+", submit_output))
    out = []
    for app in sorted(apps):
        for f in sorted(yarn.data_dir.glob(f"**/{app}/*/std*")):
            lines = f.read_text(errors="replace").splitlines()
            out.append(f"--- {f.parent.name}/{f.name}\n" + "\n".join(lines[-tail:]))
    return "\n".join(out)


def submit_command(yarn, deploy_mode, script, *args, archive=None, conf=None, executors=2):
    """(argv, env) of spark-submit --master yarn as a user runs it. With `archive`, the
    seeds' way: the environment shipped with --archives ARCHIVE#env and used by the
    executors (and by the driver in cluster mode) through
    spark.pyspark.python=./env/bin/python; without, the test environment's own
    interpreter."""
    bin_dir = os.path.dirname(sys.executable)
    env = dict(os.environ, HADOOP_CONF_DIR=str(yarn.conf_dir), TF_CPP_MIN_LOG_LEVEL="3",
               PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    cmd = [os.path.join(bin_dir, "spark-submit"), "--master", "yarn",
           "--deploy-mode", deploy_mode, "--num-executors", str(executors), "--executor-cores", "1",
           "--executor-memory", "1g", "--driver-memory", "1g",
           # TF runs in the container too; YARN enforces its limit (README: Memory on YARN)
           "--conf", "spark.executor.memoryOverhead=1g",
           "--conf", "spark.dynamicAllocation.enabled=false",
           "--conf", "spark.yarn.am.memory=512m", "--conf", "spark.yarn.maxAppAttempts=1",
           "--conf", "spark.ui.showConsoleProgress=false",
           # Spark 4's UI start races the AM's proxy-filter registration in client mode
           # (ConcurrentModificationException in Jetty's ServletHandler.initialize, seen in
           # CI); no test here reads the Spark UI
           "--conf", "spark.ui.enabled=false"]
    if archive:
        cmd += ["--archives", f"{archive}#env", "--conf", "spark.pyspark.python=./env/bin/python"]
        if deploy_mode == "client":  # the driver runs here, in this environment
            cmd += ["--conf", f"spark.pyspark.driver.python={sys.executable}"]
    else:
        cmd += ["--conf", f"spark.pyspark.python={sys.executable}"]
    for key, value in (conf or {}).items():
        cmd += ["--conf", f"{key}={value}"]
    return cmd + [str(script), *args], env


def spark_submit(yarn, deploy_mode, script, *args, archive=None, conf=None, executors=2,
                 timeout=1100):
    cmd, env = submit_command(yarn, deploy_mode, script, *args, archive=archive, conf=conf,
                              executors=executors)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("deploy_mode", ["client", "cluster"])
def test_the_seeds_job_runs_on_yarn_from_a_packed_environment(yarn, packed_env, deploy_mode):
    """examples/hdfs_workflow.py submitted to YARN with the environment packed by
    `sparktf pack` and shipped with --archives: TFRecord shards written to HDFS by the
    executors, MWMS training (a chief and a worker) reading them with tf.data, export to
    HDFS, and distributed inference. Every node runs inside a YARN container (and the
    driver too in cluster mode), with the unpacked environment's Python and sparktf
    agent, not this machine's."""
    from sparktf import fs

    base = f"{yarn.url}/seeds-yarn-{deploy_mode}"
    report_uri = f"{yarn.url}/reports/seeds-yarn-{deploy_mode}.json"
    p = spark_submit(yarn, deploy_mode, ROOT / "examples" / "hdfs_workflow.py",
                     "--base", base, "--epochs", "6", "--report", report_uri,
                     archive=packed_env)
    print(p.stderr)  # spark-submit's log, for the timings
    assert p.returncode == 0, (p.stdout[-2000:] + p.stderr[-3000:] +
                               container_logs(yarn, p.stdout + p.stderr))
    r = json.loads(fs.read_bytes(report_uri))

    assert r["master"] == "yarn" and r["default_fs"] == yarn.url
    if deploy_mode == "cluster":
        assert r["driver_container"].startswith("container_")
    else:
        assert r["driver_container"] is None
    here = os.path.realpath(sys.prefix)
    for n in r["nodes"]:  # the unpacked archive's, in the NodeManager's cache
        assert n["python"].endswith("/env/bin/python") and not n["python"].startswith(
            (sys.prefix, here)), n["python"]
        assert not n["agent"].startswith(here) and n["agent"].endswith("sparktf/bin/sparktf")
        assert "/filecache/" in n["agent"] or "/appcache/" in n["agent"], n["agent"]
    if deploy_mode == "cluster":
        assert r["driver_python"].endswith("/env/bin/python"), r["driver_python"]
        assert not r["driver_python"].startswith((sys.prefix, here)), r["driver_python"]
    containers = [n["container"] for n in r["nodes"]]
    assert all(c and c.startswith("container_") for c in containers), containers
    assert len(set(containers)) == 2 and r["driver_container"] not in containers
    assert sorted(n["job_name"] for n in r["nodes"]) == ["chief", "worker"]
    assert r["checkpoints"] == [f"ckpt-{e:02d}" for e in range(1, 7)]
    assert r["predictions"] == r["num_test"] and r["num_train"] + r["num_test"] == 1309
    assert r["accuracy"] >= r["baseline"] + 0.05, (r["accuracy"], r["baseline"])


def job_result(p) -> dict:
    """The JSON a tests/yarn_jobs script printed after RESULT."""
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise AssertionError("no RESULT line:\n" + p.stdout[-2000:] + p.stderr[-4000:])


@pytest.mark.timeout(900)
def test_a_node_over_its_container_memory_is_killed_by_yarn_and_explained(yarn, tmp_path):
    """A node's TF process that grows to 3 GiB in a container of 1 GiB + 384 MiB: the
    NodeManager's physical-memory check counts it (it runs inside the container's process
    tree) and kills the container; the driver raises within seconds, naming the node, the
    Spark executor, the container, YARN's diagnostics and the setting to raise."""
    hog = tmp_path / "hog"
    p = spark_submit(yarn, "client", ROOT / "tests" / "yarn_jobs" / "memory_hog.py",
                     "--gib", "3", "--idle", "300", "--pid-file", str(hog),
                     conf={"spark.executor.memoryOverhead": "384m"}, timeout=800)
    r = job_result(p)
    message = r["error"] or ""
    print(json.dumps(r, indent=1))
    assert r.get("type") == "Aborted", (r, p.stderr[-3000:])
    assert "worker:1 (executor 1 on " in message, message
    assert re.search(r"Spark executor \d+ \(container_\d+_\d+_\d+_\d+\) was removed", message), message
    assert "exceeding physical memory limits" in message, message
    assert "spark.executor.memoryOverhead" in message, message
    assert r["seconds"] - r["started"] < 60, r  # not the 300 s the nodes would idle
    pid, container = open(f"{hog}.1").read().split()
    assert container in message
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not os.path.exists(f"/proc/{pid}"), "the TF process outlived its container"


def sparktf_processes() -> list:
    """Node agents and TF processes of this checkout still running."""
    from test_cluster_spark import node_processes

    return node_processes()


@pytest.mark.timeout(600)
def test_killing_the_application_leaves_nothing_on_the_nodemanagers(yarn, tmp_path):
    """`yarn application -kill` (Hadoop's own CLI class) while an InputMode.SPARK cluster
    runs: within 10 s no node agent, TF process or shm segment of it is left on the
    NodeManagers' host, and the driver (client mode) ends with an error."""
    from test_feed_spark import shm_segments
    from minicluster import classpath, java

    shm_before = set(shm_segments())
    idle = tmp_path / "idle"
    cmd, env = submit_command(yarn, "client", ROOT / "tests" / "yarn_jobs" / "memory_hog.py",
                              "--gib", "0", "--idle", "600", "--mode", "spark",
                              "--pid-file", str(idle))
    log = open(tmp_path / "submit.log", "w+")
    driver = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 400
        while not all(os.path.exists(f"{idle}.{i}") for i in (0, 1)):
            assert driver.poll() is None and time.monotonic() < deadline, \
                open(tmp_path / "submit.log").read()[-4000:]
            time.sleep(1)
        pids = [int(open(f"{idle}.{i}").read().split()[0]) for i in (0, 1)]
        assert sparktf_processes(), "the nodes' processes should be running"
        app = re.findall(r"application_\d+_\d+", open(tmp_path / "submit.log").read())[0]
        kill = subprocess.run([java(), "-cp", classpath(yarn.conf_dir),
                               "org.apache.hadoop.yarn.client.cli.ApplicationCLI",
                               "application", "-kill", app],
                              capture_output=True, text=True, timeout=120)
        assert kill.returncode == 0, kill.stdout + kill.stderr
        killed = time.monotonic()
        while time.monotonic() - killed < 10 and (
                sparktf_processes() or set(shm_segments()) - shm_before):
            time.sleep(0.2)
        assert sparktf_processes() == [], "node processes outlived the application"
        assert sorted(set(shm_segments()) - shm_before) == []
        assert not [p for p in pids if os.path.exists(f"/proc/{p}")]
        driver.wait(timeout=120)  # the driver learns that YARN ended the application
        out = open(tmp_path / "submit.log").read()
        r = json.loads(out.split("RESULT ", 1)[1].splitlines()[0])
        # What Spark knew by then varies ("Executor Process Lost", or its SparkContext
        # already stopped); the node and its container are always named.
        assert r["type"] == "Aborted" and re.search(
            r"worker:\d \(executor \d on .*container_\d+", r["error"]), r
    finally:
        if driver.poll() is None:
            driver.kill()


@pytest.mark.timeout(600)
def test_too_few_executors_and_a_module_missing_from_the_archive_are_explained(yarn,
                                                                              packed_env):
    """Submitted with the packed environment and one executor: a two-node cluster fails
    at once (the application asked for one) naming the settings (YARN's queue and
    container size among them); a node whose function imports a module that only the driver has fails
    naming the module, the container's Python and how to ship the module."""
    p = spark_submit(yarn, "client", ROOT / "tests" / "yarn_jobs" / "failures.py",
                     "--reservation-timeout", "15", archive=packed_env, executors=1,
                     timeout=500)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    r = job_result(p)
    print(json.dumps(r, indent=1))
    few = r["too_few_executors"]
    assert few["type"] == "InvalidArgument", few
    # It fails before waiting, so how many executors had registered by then varies.
    assert re.match(r"num_executors=2 but the cluster has [01] executor\(s\)", few["error"]), few
    assert "the application asked for 1: spark.executor.instances" in few["error"], few
    for setting in ("spark.executor.instances", "spark.yarn.queue",
                    "spark.executor.memoryOverhead", "yarn.scheduler.maximum-allocation-mb"):
        assert setting in few["error"], (setting, few)
    assert re.search(r"page of application_\d+_\d+", few["error"]), few
    assert few["seconds"] < 5, few  # it asked for too few: no point waiting

    missing = r["missing_module"]
    assert missing["type"] == "Aborted", missing
    message = missing["error"]
    assert "No module named 'sparktf_driver_only_module'" in message, message
    assert re.search(r"the Python of this node \(\S+/env/bin/python on ", message), message
    assert "--archives env.tar.gz#env" in message, message
    assert re.search(r"\(executor 0 on \S+, Spark executor \d+, container_\d+_\d+_\d+_\d+\)",
                     message), message


@pytest.mark.timeout(900)
def test_spark_mode_training_and_inference_on_yarn(yarn):
    """InputMode.SPARK on YARN: MWMS training fed from an RDD, export to HDFS, then
    inference fed by Spark with exactly one answer per row in order. Every TF process runs
    in its executor's container: in that container's session, which YARN's process tree
    counts (even once the Python worker that started its agent has ended); so does the
    chief's TensorBoard (tensorboard=True, logs on HDFS), which answers on its URL."""
    base = f"{yarn.url}/spark-mode"
    # The chief's container holds its TF process and TensorBoard (TensorFlow too): YARN
    # killed it at 2 GB with the default 1g overhead (README: Memory on YARN).
    p = spark_submit(yarn, "client", ROOT / "tests" / "yarn_jobs" / "spark_mode.py",
                     "--base", base, "--epochs", "8", timeout=800,
                     conf={"spark.executor.memoryOverhead": "2g"})
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    r = job_result(p)
    print(json.dumps(r, indent=1))
    assert r["predictions"] == r["test_rows"] == 297
    assert r["accuracy"] > 0.85, r["accuracy"]  # held-out digits; chance is 0.1
    for stage in ("train", "infer"):
        nodes = r["where"][stage]
        assert sorted(n["job_name"] for n in nodes) == ["worker", "worker"], nodes
        containers = [n["container"] for n in nodes]
        assert len(set(containers)) == 2 and all(c.startswith("container_") for c in containers)
        assert all(n["session_is_container"] for n in nodes), nodes
    # The chief's TensorBoard runs in its container's session too, and answers.
    train = r["where"]["train"]
    sessions = [n["tensorboard_sessions"] for n in train]
    assert sorted(len(s) for s in sessions) == [0, 1], train
    chief = next(n for n in train if n["tensorboard_sessions"])
    assert chief["tensorboard_sessions"] == [chief["session"]], chief
    assert r["tensorboard"]["status"] == 200, r["tensorboard"]


def rm_application(yarn, app: str) -> dict:
    """The ResourceManager's REST report of an application."""
    import urllib.request

    url = f"http://{yarn.info['resourcemanager_webapp']}/ws/v1/cluster/apps/{app}"
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)["app"]


@pytest.fixture
def gpu_yarn():
    """A YARN of its own whose 2 NodeManagers offer 2 yarn.io/gpu each, scheduled by the
    Capacity Scheduler's DominantResourceCalculator (the FIFO scheduler of the other tests
    ignores all but memory)."""
    from minicluster import HdfsMiniCluster

    cluster = HdfsMiniCluster(TEST_ENV / "gpu-yarn-conf", datanodes=1,
                              data_dir=TEST_ENV / "gpu-yarn-data",
                              log=TEST_ENV / "gpu-yarn.log", nodemanagers=2,
                              gpus_per_nodemanager=2).start()
    yield cluster
    cluster.stop()


@pytest.mark.timeout(600)
def test_gpus_requested_from_yarn_reach_each_node(gpu_yarn, tmp_path):
    """Executors that ask for a GPU each (spark.executor.resource.gpu.amount=1, which
    Spark requests from YARN as yarn.io/gpu) and discover theirs with a script: YARN
    accounts the GPUs to the application's containers, and each node's TF process sees
    exactly its task's GPU in CUDA_VISIBLE_DEVICES. (The mini YARN declares yarn.io/gpu
    as a countable resource: no devices, no isolation, see README: GPUs.)"""
    script = tmp_path / "discover.sh"
    script.write_text('#!/bin/sh\necho \'{"name": "gpu", "addresses": ["0", "1"]}\'\n')
    script.chmod(0o755)
    p = spark_submit(gpu_yarn, "client", ROOT / "tests" / "yarn_jobs" / "gpus.py",
                     f"{gpu_yarn.url}/gpus", timeout=500, conf={
                         "spark.executor.resource.gpu.amount": "1",
                         "spark.task.resource.gpu.amount": "1",
                         "spark.executor.resource.gpu.discoveryScript": str(script)})
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    r = job_result(p)
    print(json.dumps(r, indent=1))
    nodes = r["nodes"]
    assert len(nodes) == 2 and all(n["cuda"] in ("0", "1") for n in nodes), nodes
    assert len({n["container"] for n in nodes}) == 2, nodes
    entries = rm_application(gpu_yarn, r["application"])["resourceSecondsMap"]["entry"]
    seconds = {e["key"]: int(e["value"]) for e in (
        entries if isinstance(entries, list) else [entries])}
    assert seconds.get("yarn.io/gpu", 0) > 0, seconds
