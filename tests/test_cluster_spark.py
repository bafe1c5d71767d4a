"""The cluster runtime end to end: TFCluster on a real multi-executor Spark
(local-cluster, 4 executors) with real TensorFlow."""

import glob
import inspect
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

import cluster_funs
import numpy as np
import pytest
from leftovers import node_processes, node_temp_dirs, tcp_listeners

from sparktf import TFCluster, dfutil, errors

pytestmark = pytest.mark.spark


def leftovers():
    """Node processes still running, and temporary files of nodes still on disk."""
    return node_processes() + node_temp_dirs()


def wait_no_node_processes(timeout=15):
    """Waits until no node process or node temporary file remains; returns what does."""
    deadline = time.monotonic() + timeout
    while leftovers() and time.monotonic() < deadline:
        time.sleep(0.2)
    return leftovers()


@pytest.fixture(scope="module")
def digits(spark, tmp_path_factory):
    """scikit-learn's digits: 1500 rows as 4 GZIP TFRecord shards written by
    dfutil from a DataFrame; the other 297 held out."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    n_train = 1500
    df = spark.createDataFrame([(x[i].tolist(), int(y[i])) for i in range(n_train)],
                               "pixels array<float>, label long")
    out = str(tmp_path_factory.mktemp("digits") / "train")
    dfutil.saveAsTFRecords(df, out, num_shards=4, compression="GZIP")
    return out, x[n_train:], y[n_train:]


def accuracy_in_fresh_process(export_dir, x, y):
    np.save(export_dir + ".x.npy", x)
    code = f"""
import numpy as np, tensorflow as tf
m = tf.saved_model.load({export_dir!r})
x = np.load({export_dir + '.x.npy'!r})
logits = m.serve(x) if hasattr(m, 'serve') else m(x)
print(' '.join(map(str, np.argmax(np.asarray(logits), axis=1).tolist())))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert p.returncode == 0, p.stderr[-3000:]
    pred = np.array([int(v) for v in p.stdout.split()])
    return float((pred == y).mean())


def test_roles_tf_config_and_context(spark, tmp_path):
    out = str(tmp_path)
    t0 = time.monotonic()
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.roles, out, 4, num_ps=1,
                            master_node="chief", reservation_timeout=120)
    assert time.monotonic() - t0 < 60
    assert cluster.cluster_spec.keys() == {"ps", "chief", "worker"}
    cluster.shutdown(timeout=120)
    nodes = [json.load(open(os.path.join(out, f"node-{i}.json"))) for i in range(4)]
    assert [(n["job_name"], n["task_index"]) for n in nodes] == [
        ("ps", 0), ("chief", 0), ("worker", 0), ("worker", 1)]
    assert [n["worker_num"] for n in nodes] == [0, 1, 2, 3]
    assert all(n["num_workers"] == 3 for n in nodes)
    tf_config = nodes[2]["tf_config"]
    assert tf_config["task"] == {"type": "worker", "index": 0}
    assert tf_config["environment"] == "cloud"
    assert tf_config["cluster"] == nodes[0]["cluster_spec"]
    assert len(set(sum(tf_config["cluster"].values(), []))) == 4  # distinct addresses
    assert nodes[0]["abs"].startswith("file://") and nodes[0]["abs"].endswith("/x/y")
    assert wait_no_node_processes() == []


@pytest.mark.parametrize("master_node", [None, "chief"])
def test_multi_worker_mirrored_training(spark, digits, tmp_path, master_node):
    data, x_test, y_test = digits
    export = str(tmp_path / "export")
    args = {"data": data, "global_batch": 64, "epochs": 6, "steps": 25, "export": export,
            "out": str(tmp_path)}
    n = 3 if master_node else 2
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.mwms_train, args, n,
                            master_node=master_node, reservation_timeout=120)
    cluster.shutdown(timeout=600)
    nodes = [json.load(open(tmp_path / f"node-{i}.json")) for i in range(n)]
    for node in nodes:
        assert node["loss"][-1] < 0.5 * node["loss"][0], node["loss"]
        assert node["num_workers"] == n
    chief = nodes[0]
    assert (chief["job_name"], chief["task_index"]) == (master_node or "worker", 0)
    assert chief["exported"] == export
    assert all(node["exported"] is None for node in nodes[1:])  # only the chief wrote
    assert accuracy_in_fresh_process(export, x_test, y_test) > 0.85
    assert wait_no_node_processes() == []


@pytest.mark.parametrize("ps_on_driver", [False, True])
def test_parameter_server_strategy(spark, digits, tmp_path, ps_on_driver):
    """With driver_ps_nodes=True (TFoS's), the ps runs on the driver: 3 of the 4 nodes
    run on executors."""
    data, x_test, y_test = digits
    export = str(tmp_path / "export")
    from sparktf import records

    args = {"files": records.list_files(data), "rounds": 6, "export": export,
            "out": str(tmp_path)}
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.ps_train, args, 4, num_ps=1,
                            master_node="chief", reservation_timeout=120,
                            driver_ps_nodes=ps_on_driver)
    where = {n["job_name"]: n["spark_executor"] for n in cluster.status()["nodes"]}
    assert (where["ps"] == "") == ps_on_driver and where["chief"] != ""
    cluster.shutdown(timeout=600)  # the chief finishes; ps and workers are stopped
    chief = json.load(open(tmp_path / "chief.json"))
    assert chief["cluster"]["task"] == {"type": "chief", "index": 0}
    assert len(chief["cluster"]["cluster"]["worker"]) == 2
    assert chief["losses"][-1] < 0.6 * chief["losses"][0], chief["losses"]
    assert accuracy_in_fresh_process(export, x_test, y_test) > 0.8
    status = cluster.status()
    assert {n["job_name"]: n["stopped"] for n in status["nodes"]}["ps"] is True
    assert wait_no_node_processes() == []


def test_failing_worker_raises_with_its_traceback(spark, tmp_path):
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.raise_on_worker, str(tmp_path), 3,
                            reservation_timeout=120)
    t0 = time.monotonic()
    with pytest.raises(errors.Aborted) as exc:
        cluster.shutdown(timeout=120)
    assert time.monotonic() - t0 < 15
    message = str(exc.value)
    assert "worker:1 (executor 1" in message
    assert "ValueError: deliberate failure in worker:1" in message
    assert "Traceback (most recent call last)" in message
    assert wait_no_node_processes() == []
    for pid_file in glob.glob(str(tmp_path / "pid-*")):
        assert not os.path.exists(f"/proc/{open(pid_file).read()}")


def test_missing_module_names_the_package_the_node_and_the_fix(spark, tmp_path, monkeypatch):
    """A module the driver has and an executor's Python lacks (the seeds' `packaging`):
    the error names the module, the node, the executor and its Python, and says to ship it
    in the environment's archive."""
    (tmp_path / "sparktf_driver_only_module.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import sparktf_driver_only_module  # noqa: F401 - the driver has it

    cluster = TFCluster.run(spark.sparkContext, cluster_funs.imports_a_driver_only_module,
                            None, 2, reservation_timeout=120)
    with pytest.raises(errors.Aborted) as exc:
        cluster.shutdown(timeout=120)
    message = str(exc.value)
    assert "worker:1 (executor 1 on " in message and "Spark executor " in message, message
    assert "No module named 'sparktf_driver_only_module'" in message, message
    assert f"the Python of this node ({sys.executable} on " in message, message
    assert "--archives env.tar.gz#env" in message, message
    assert wait_no_node_processes() == []


def test_killed_node_process_aborts_the_cluster(spark, tmp_path):
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.killed_by_signal, None, 2,
                            reservation_timeout=120)
    t0 = time.monotonic()
    with pytest.raises(errors.Aborted, match=r"worker:1 \(executor 1 .*failed with signal 9"):
        cluster.shutdown(timeout=120)
    assert time.monotonic() - t0 < 15
    assert wait_no_node_processes() == []


def test_coordinator_listens_on_the_drivers_address_only(spark, tmp_path):
    """Where executors are told to connect (spark.driver.host), not on every interface."""
    import socket

    cluster = TFCluster.run(spark.sparkContext, cluster_funs.roles, str(tmp_path), 2,
                            reservation_timeout=120)
    try:
        host, port = cluster._coordinator_address.rsplit(":", 1)
        assert host == spark.sparkContext.getConf().get("spark.driver.host")
        listening = tcp_listeners()
        assert (socket.gethostbyname(host), int(port)) in listening, listening
        assert ("0.0.0.0", int(port)) not in listening
    finally:
        cluster.shutdown(timeout=120)


def _jsonl(path):
    return [json.loads(line) for line in open(path)] if os.path.exists(path) else []


@pytest.mark.timeout(600)
def test_a_killed_worker_is_restarted_and_training_resumes_from_its_backup(spark, tmp_path):
    """restarts=1: worker 1 kills itself (SIGKILL) after epoch 2 of 5; every node is
    stopped, the cluster starts again as generation 1 in the same application, Keras's
    BackupAndRestore resumes at epoch 3, and the model reaches the accuracy of an
    undisturbed run."""
    out, backup = tmp_path / "out", tmp_path / "backup"
    out.mkdir()
    args = {"out": str(out), "backup": str(backup), "epochs": 5, "steps": 25,
            "kill_epoch": 2}
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.restartable_keras, args, 2,
                            reservation_timeout=120, restarts=1, restart_backoff=0.5)
    cluster.shutdown(timeout=400)
    assert cluster.generation == 1
    starts = _jsonl(out / "starts.jsonl")
    assert sorted((s["generation"], s["executor"]) for s in starts) == [
        (0, 0), (0, 1), (1, 0), (1, 1)]
    for executor in (0, 1):
        epochs = [(e["generation"], e["epoch"]) for e in _jsonl(out / f"epochs-{executor}.jsonl")]
        # Generation 0 ran epochs 1-2 (the killed worker died right after logging epoch 2),
        # generation 1 went on from epoch 3: the epoch counter continued.
        assert epochs == [(0, 1), (0, 2), (1, 3), (1, 4), (1, 5)], (executor, epochs)
    result = json.load(open(out / "result.json"))
    assert result["generation"] == 1
    assert result["accuracy"] > 0.85, result  # an undisturbed run: about 0.9
    killed = max(e["time"] for e in _jsonl(out / "epochs-1.jsonl") if e["generation"] == 0)
    restarted = min(s["time"] for s in starts if s["generation"] == 1)
    print(f"generation 1 started {restarted - killed:.1f} s after the kill")
    assert restarted - killed < 30, restarted - killed  # running again within 30 s
    assert wait_no_node_processes() == []


@pytest.mark.timeout(300)
def test_after_its_restarts_the_cluster_fails_listing_every_generation(spark, tmp_path):
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.always_fails, None, 2,
                            reservation_timeout=120, restarts=1, restart_backoff=0.1)
    with pytest.raises(errors.Aborted) as exc:
        cluster.shutdown(timeout=200)
    message = str(exc.value)
    assert message.startswith("generation 1 failed after 1 restart(s): worker:1"), message
    assert "ValueError: deliberate failure in generation 1" in message
    assert "Earlier failures:\ngeneration 0: worker:1 (executor 1" in message
    assert "ValueError: deliberate failure in generation 0" in message
    assert cluster.generation == 1
    assert wait_no_node_processes() == []


def test_a_stopped_node_is_named_and_fails_the_cluster_at_once(spark, tmp_path):
    """SIGSTOP of worker 1's TF process: its agent sees the stop, kills it and reports it,
    so the driver names worker 1 within seconds (TensorFlow's own heartbeat check would
    take 10 s and blame the healthy worker 0)."""
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.stops_itself, str(tmp_path), 2,
                            reservation_timeout=120)
    with pytest.raises(errors.Aborted) as exc:
        cluster.shutdown(timeout=120)
    raised = time.time()
    message = str(exc.value)
    assert re.match(r"worker:1 \(executor 1 .*\) failed with signal 9 \(its TF process was "
                    r"stopped by signal 19 \(Stopped \(signal\)\)", message), message
    assert raised - float(open(tmp_path / "stopped").read()) < 5
    assert wait_no_node_processes() == []


def test_a_killed_executor_is_named_as_the_node_it_ran(spark, tmp_path):
    """kill -9 of worker 1's executor JVM: the driver names the sparktf node (role, index,
    host, Spark executor) and says that Spark lost the executor, within seconds."""
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.kills_its_executor,
                            str(tmp_path), 2, reservation_timeout=120)
    with pytest.raises(errors.Aborted) as exc:
        cluster.shutdown(timeout=120)
    raised = time.time()
    message = str(exc.value)
    print(message)
    assert message.startswith("worker:1 (executor 1 on "), message[:500]
    assert re.search(r"Spark executor \d+ was removed: .*137", message), message[:3000]
    assert raised - float(open(tmp_path / "killed").read().split()[1]) < 15
    assert wait_no_node_processes() == []


def test_shutdown_returns_soon_after_the_last_map_fun(spark, tmp_path):
    """After a clean MultiWorkerMirrored run, shutdown() returns within 2 s of the last
    node's map_fun returning (TensorFlow's teardown at interpreter exit once kept a
    worker's process alive for tens of seconds)."""
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.short_mwms_fit, str(tmp_path),
                            2, reservation_timeout=120)
    cluster.shutdown(timeout=120)
    done = time.time()
    last = max(float(open(tmp_path / f"returned-{i}").read()) for i in range(2))
    print(f"shutdown returned {done - last:.2f} s after the last map_fun")
    assert done - last < 2.0, done - last


def test_teardown_after_a_failure_does_not_wait_out_the_kill_grace(spark, tmp_path):
    """From a worker's failure to shutdown() raising, with every node's processes gone:
    well under the agents' 5 s SIGTERM grace."""
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.mwms_then_fail, str(tmp_path), 2,
                            reservation_timeout=120)
    with pytest.raises(errors.Aborted, match="deliberate failure after the strategy"):
        cluster.shutdown(timeout=120)
    raised = time.time()
    assert wait_no_node_processes() == []
    took = raised - float(open(tmp_path / "failed").read())
    print(f"failure to shutdown() raising: {took:.2f} s")
    assert took < 2.0, took


def test_a_node_that_makes_no_progress_fails_and_is_named(spark, tmp_path):
    """A worker hung in a Keras callback (a sleep): its main thread stays put, and after
    progress_timeout its node fails like a dead one, named, instead of shutdown() waiting
    out its own timeout."""
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.hangs_in_a_callback,
                            str(tmp_path), 2, reservation_timeout=120, progress_timeout=4)
    with pytest.raises(errors.Aborted) as exc:
        cluster.shutdown(timeout=120)
    raised = time.time()
    message = str(exc.value)
    assert re.match(r"worker:1 \(executor 1 .*\) failed with signal \d+ \(its TF process made no "
                    r"progress for 4 s", message), message[:600]
    hung = float(open(tmp_path / "hung").read())
    assert 4 <= raised - hung < 9, raised - hung
    assert wait_no_node_processes() == []


def test_bad_arguments_are_refused_before_anything_starts(spark):
    sc = spark.sparkContext
    with pytest.raises(errors.InvalidArgument, match="needs num_ps >= 1 and InputMode"):
        TFCluster.run(sc, cluster_funs.roles, "/tmp", 2, num_ps=1, driver_ps_nodes=True,
                      input_mode=TFCluster.InputMode.SPARK)
    with pytest.raises(errors.InvalidArgument, match="needs num_ps >= 1"):
        TFCluster.run(sc, cluster_funs.roles, "/tmp", 2, driver_ps_nodes=True)
    with pytest.raises(errors.InvalidArgument, match="no node is left"):
        TFCluster.run(sc, cluster_funs.roles, "/tmp", 1, num_ps=1, driver_ps_nodes=True)
    with pytest.raises(errors.InvalidArgument, match="master_node must be"):
        TFCluster.run(sc, cluster_funs.roles, "/tmp", 2, master_node="boss")
    with pytest.raises(errors.InvalidArgument, match="restarts must be >= 0"):
        TFCluster.run(sc, cluster_funs.roles, "/tmp", 2, restarts=-1)
    with pytest.raises(errors.InvalidArgument, match="unknown input_mode"):
        TFCluster.run(sc, cluster_funs.roles, "/tmp", 2, input_mode=7)
    assert node_processes() == []


def test_more_executors_than_exist_is_a_clear_error(spark):
    t0 = time.monotonic()
    with pytest.raises(ValueError, match=r"num_executors=6 but the cluster has 4 executor"):
        TFCluster.run(spark.sparkContext, cluster_funs.roles, "/tmp", 6, reservation_timeout=5)
    assert time.monotonic() - t0 < 10
    assert wait_no_node_processes() == []


def test_dynamic_allocation_below_num_executors_is_a_clear_error(spark, monkeypatch, tmp_path):
    """Dynamic allocation would take idle-looking nodes' executors away: refused at once,
    naming the settings, unless it keeps at least num_executors."""
    conf = spark.sparkContext.getConf()
    monkeypatch.setattr(type(spark.sparkContext), "getConf", lambda self: conf)
    conf.set("spark.dynamicAllocation.enabled", "true")
    conf.set("spark.dynamicAllocation.minExecutors", "1")
    t0 = time.monotonic()
    with pytest.raises(errors.InvalidArgument,
                       match=r"dynamic allocation is on .*minExecutors=1.*"
                             r"spark.dynamicAllocation.enabled=false and --num-executors 2"):
        TFCluster.run(spark.sparkContext, cluster_funs.roles, "/tmp", 2)
    assert time.monotonic() - t0 < 5
    conf.set("spark.dynamicAllocation.minExecutors", "2")
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.roles, str(tmp_path), 2,
                            reservation_timeout=60)
    cluster.shutdown(timeout=60)
    assert len(glob.glob(str(tmp_path / "node-*.json"))) == 2


@pytest.mark.parametrize("where", ["local", "hdfs"])
def test_tensorboard_on_the_chief(spark, tmp_path, request, where):
    log_dir = str(tmp_path / "logs")
    if where == "hdfs":
        request.getfixturevalue("hdfs")
        log_dir = f"hdfs:///tmp/tb-{tmp_path.name}"
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.tensorboard_node,
                            {"log_dir": log_dir, "max_wait": 90,
                             "done": str(tmp_path / "done")}, 2, master_node="chief",
                            tensorboard=True, log_dir=log_dir, reservation_timeout=120)
    url = cluster.tensorboard_url()
    assert url and url.startswith("http://")
    deadline, body = time.monotonic() + 60, None
    while time.monotonic() < deadline and body is None:
        try:
            body = urllib.request.urlopen(url + "/data/runs", timeout=2).read()
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.5)
    assert body is not None, "TensorBoard did not answer"
    if where == "hdfs":  # the chief's event file is on HDFS, written through the plugin
        from sparktf import fs
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not fs.glob(f"{log_dir}/events.out.tfevents.*"):
            time.sleep(0.5)
        assert fs.glob(f"{log_dir}/events.out.tfevents.*")
    (tmp_path / "done").write_text("")
    cluster.shutdown(timeout=120)
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(url, timeout=2)


def test_release_port_false_keeps_the_port_reserved(spark, tmp_path):
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.port_held_until_released,
                            str(tmp_path), 2, release_port=False, reservation_timeout=120)
    cluster.shutdown(timeout=120)
    for i in range(2):
        result = json.load(open(tmp_path / f"port-{i}.json"))
        assert result == {"before": False, "after": True}


def test_the_port_stays_reserved_until_tensorflow_listens_on_it(spark, tmp_path):
    """The default (release_port=True): no other process can take the port while
    TensorFlow starts (an outgoing connection once did, and its server failed to start),
    TensorFlow's MultiWorkerMirrored server binds it regardless, and the reservation is
    released once that server listens."""
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.port_held_until_tensorflow_listens,
                            str(tmp_path), 2, reservation_timeout=120)
    cluster.shutdown(timeout=120)
    for i in range(2):
        result = json.load(open(tmp_path / f"port-{i}.json"))
        assert result == {"held_at_start": True, "released": True}


def test_tfos_names_and_compat_imports():
    from sparktf.compat import TFCluster as compat_cluster
    from sparktf.compat import TFNode, dfutil as compat_dfutil  # noqa: F401

    params = list(inspect.signature(compat_cluster.run).parameters)
    assert params[:14] == ["sc", "map_fun", "tf_args", "num_executors", "num_ps", "tensorboard",
                           "input_mode", "log_dir", "driver_ps_nodes", "master_node",
                           "reservation_timeout", "queues", "eval_node", "release_port"]
    assert compat_cluster.InputMode.TENSORFLOW == 0 and compat_cluster.InputMode.SPARK == 1
    # TFoS's dfutil signatures over sparktf's (tests/test_compat.py checks them)
    assert compat_dfutil.loadTFRecords.__module__ == "sparktf.compat.dfutil"
    assert compat_dfutil.infer_spark_schema is dfutil.infer_spark_schema


GPU_JOB = """
import os, sys
os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession
out, script = sys.argv[1], sys.argv[2]
spark = (SparkSession.builder.master("local-cluster[2,1,1024]")
         .config("spark.ui.enabled", "false")
         .config("spark.worker.resource.gpu.amount", "2")
         .config("spark.worker.resource.gpu.discoveryScript", script)
         .config("spark.executor.resource.gpu.amount", "1")
         .config("spark.task.resource.gpu.amount", "1")
         .getOrCreate())
from sparktf import TFCluster

def fun(args, ctx):
    with open(os.path.join(args, "node-%d" % ctx.executor_id), "w") as f:
        f.write(os.environ.get("CUDA_VISIBLE_DEVICES", "unset"))

TFCluster.run(spark.sparkContext, fun, out, 2, reservation_timeout=60).shutdown(timeout=120)
spark.stop()
"""


def test_gpus_from_spark_task_resources(tmp_path):
    """Spark's resource scheduler hands each node task a GPU address (here from
    a discovery script that reports two fake GPUs per worker); the node process
    sees exactly that GPU in CUDA_VISIBLE_DEVICES."""
    script = tmp_path / "discover.sh"
    script.write_text('#!/bin/sh\necho \'{"name": "gpu", "addresses": ["0", "1"]}\'\n')
    script.chmod(0o755)
    p = subprocess.run([sys.executable, "-c", GPU_JOB, str(tmp_path), str(script)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    seen = [open(tmp_path / f"node-{i}").read() for i in range(2)]
    assert all(s in ("0", "1") for s in seen), seen


def test_node_output_is_streamed_to_the_driver_and_kept_per_node(spark, tmp_path, capfd):
    """Every line a node's TF process writes reaches the driver's stderr as
    [worker:i] line, and its node's file under node_log_dir, in order, stdout and stderr
    apart in the echo but each line once; a redrawn progress bar is its last state."""
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.chatty, "ok", 2,
                            reservation_timeout=120, node_log_dir=str(tmp_path / "logs"))
    cluster.shutdown(timeout=120)
    assert cluster.node_log_dir == str(tmp_path / "logs")
    echoed = capfd.readouterr().err.splitlines()
    for node in ("worker:0", "worker:1"):
        lines = (tmp_path / "logs" / f"{node.replace(':', '-')}.log").read_text().splitlines()
        assert [x for x in lines if x.startswith("out")] == [f"out {i} of {node}"
                                                              for i in range(3)], lines
        assert [x for x in lines if x.startswith("err")] == [f"err {i} of {node}"
                                                              for i in range(3)], lines
        assert lines[-1] == "2/2 [==>]", lines
        ours = [x for x in echoed if x.startswith(f"[{node}] ")]
        assert sorted(ours) == sorted(f"[{node}] {x}" for x in lines), (ours, lines)


def test_a_failed_nodes_error_names_its_log_and_node_output_false_echoes_nothing(
        spark, tmp_path, capfd):
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.chatty, "fail", 2,
                            reservation_timeout=120, node_log_dir=str(tmp_path),
                            node_output=False)
    with pytest.raises(errors.Aborted) as exc:
        cluster.shutdown(timeout=120)
    log = tmp_path / "worker-1.log"
    assert f"The output of worker:1: {log}" in str(exc.value), str(exc.value)[-2000:]
    assert "worker-0.log" not in str(exc.value)  # it did not fail
    text = log.read_text()
    assert "out 2 of worker:1" in text
    assert "ValueError: chatty worker:1 fails on purpose" in text.splitlines(), text
    assert "[worker:" not in capfd.readouterr().err


def test_the_keras_metrics_callback_reports_steps_and_logs_to_the_status(spark, tmp_path):
    """ctx.metrics_callback() in model.fit: each node's status holds its last report,
    at the end of the last epoch: 60 steps, epoch 2, and the loss Keras logged."""
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.keras_fit_with_metrics,
                            str(tmp_path), 2, reservation_timeout=120)
    cluster.shutdown(timeout=300)
    for node in cluster.status()["nodes"]:
        training = node["training"]
        assert training["step"] == 60 and training["epoch"] == 2, training
        loss = float((tmp_path / f"loss-{node['executor_id']}").read_text())
        assert training["metrics"]["loss"] == pytest.approx(loss, rel=1e-6), training
        assert set(training["metrics"]) == {"loss", "mae"}, training


def test_a_slow_worker_is_named_a_straggler_with_its_host(spark, capfd):
    """worker:1 steps 5x slower than worker:0: under half the median rate for 2 s, it is
    a straggler, warned about once on the driver with its host, and so in the status;
    worker:0 is not."""
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.steps_for_seconds,
                            {"seconds": 10, "slow": "worker:1"}, 2, reservation_timeout=120,
                            straggler_fraction=0.5, straggler_after=2)
    cluster.shutdown(timeout=120)
    nodes = {f"{n['job_name']}:{n['task_index']}": n for n in cluster.status()["nodes"]}
    assert nodes["worker:1"]["straggler"] is True, nodes["worker:1"]
    assert nodes["worker:0"]["straggler"] is False, nodes["worker:0"]
    rates = {k: n["training"]["steps_per_sec"] for k, n in nodes.items()}
    assert rates["worker:1"] < 0.5 * rates["worker:0"], rates
    warnings = [x for x in capfd.readouterr().err.splitlines() if "is a straggler" in x]
    host = nodes["worker:1"]["host"]
    assert len(warnings) == 1 and warnings[0].startswith(
        f"sparktf: worker:1 (executor 1 on {host}"), warnings
