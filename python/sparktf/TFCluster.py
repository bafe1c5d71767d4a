"""Driver side of the cluster runtime, with TFoS's names and semantics.

    cluster = TFCluster.run(sc, map_fun, tf_args, num_executors=4, num_ps=0,
                            input_mode=InputMode.TENSORFLOW, master_node="chief")
    cluster.shutdown()

``run`` starts the native coordinator on the driver, runs one node task per
executor as a Spark barrier stage, and returns once every node has registered
and received its role. Each node task starts a native node agent, which runs
``map_fun(tf_args, ctx)`` in its own supervised Python process with
``TF_CONFIG`` set. ``shutdown`` waits for the workers to finish, stops
parameter servers, and raises with the failing node's traceback if any failed.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from sparktf import _native, errors

logger = logging.getLogger("sparktf")

__all__ = ["InputMode", "TFCluster", "run"]

DEFAULT_SLOT_WAIT = 30.0  # seconds to wait for executors to come up before failing


class InputMode:
    """TENSORFLOW: nodes read their own data. SPARK: Spark feeds them (later)."""

    TENSORFLOW = 0
    SPARK = 1


def _agent_binary() -> str:
    here = os.path.join(os.path.dirname(__file__), "bin", "sparktf")
    if os.access(here, os.X_OK):
        return here
    found = shutil.which("sparktf", path=os.path.dirname(sys.executable))
    if found:
        return found
    raise errors.NotFound("the sparktf binary is missing from the package (bin/sparktf); "
                          "reinstall sparktf")


def _driver_host(sc) -> str:
    host = sc.getConf().get("spark.driver.host", None)
    if host:
        return host
    return socket.gethostbyname(socket.gethostname())


def _task_slots(sc) -> tuple[int, int]:
    """(executors, task slots) currently registered with the driver."""
    infos = sc.statusTracker().getExecutorInfos()
    executors = max(len(infos) - 1, 0)  # the driver is listed too
    cpus = int(sc.getConf().get("spark.task.cpus", "1"))
    return executors, sc.defaultParallelism // max(cpus, 1) if executors else 0


def _wait_for_slots(sc, needed: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        executors, slots = _task_slots(sc)
        if slots >= needed:
            return
        if time.monotonic() >= deadline:
            raise errors.InvalidArgument(
                f"num_executors={needed} but the cluster has {executors} executor(s) with "
                f"{slots} task slot(s) after waiting {timeout:.0f} s. Ask Spark for at least "
                f"{needed} executors (spark.executor.instances, --num-executors), with one "
                "task slot each (spark.executor.cores = spark.task.cpus), and disable dynamic "
                "allocation (spark.dynamicAllocation.enabled=false)")
        time.sleep(0.2)


def _node_task(meta: dict):
    """The barrier task body: start the node agent and wait for it."""

    def run_node(_partition):
        from pyspark import BarrierTaskContext

        tc = BarrierTaskContext.get()
        executor_id = tc.partitionId()
        resources = tc.resources()
        gpus = list(resources["gpu"].addresses) if "gpu" in resources else []
        tmp = tempfile.mkdtemp(prefix="sparktf-node-")
        try:
            payload = os.path.join(tmp, "payload")
            with open(payload, "wb") as f:
                f.write(meta["payload"])
            cmd = [meta["agent"], "agent", "--coordinator", meta["coordinator"],
                   "--executor-id", str(executor_id), "--error-file",
                   os.path.join(tmp, "error"), "--reservation-timeout",
                   str(meta["reservation_timeout"]), "--python", sys.executable]
            if gpus:
                cmd += ["--gpus", ",".join(gpus)]
            if meta.get("log_dir"):
                cmd += ["--tensorboard-logdir", meta["log_dir"]]
            cmd += ["--", sys.executable, "-m", "sparktf.node", payload]
            env = dict(os.environ, SPARKTF_TOKEN=meta["token"])
            rc = subprocess.run(cmd, env=env, check=False).returncode
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if rc != 0:
            raise RuntimeError(f"sparktf node {executor_id} ended with exit code {rc}; "
                               "the driver reports the cause")
        yield executor_id

    return run_node


class TFCluster:
    """A running sparktf cluster (returned by :func:`run`)."""

    def __init__(self, sc, coordinator, job_thread, job_group: str, cluster_info: dict,
                 input_mode: int, log_dir: str | None):
        self.sc = sc
        self._coordinator = coordinator
        self._job = job_thread
        self._job_group = job_group
        self.cluster_info = cluster_info
        self.input_mode = input_mode
        self.log_dir = log_dir
        self._closed = False

    @property
    def cluster_spec(self) -> dict:
        return json.loads(self._coordinator.cluster_json())

    def status(self) -> dict:
        """Nodes, phases, exits and errors, from the coordinator."""
        return json.loads(self._coordinator.status_json())

    def tensorboard_url(self) -> str | None:
        """URL of the TensorBoard the chief runs (tensorboard=True), if started."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for node in self.status()["nodes"]:
                if node.get("tensorboard"):
                    return node["tensorboard"]
            if self.log_dir is None:
                return None
            time.sleep(0.1)
        return None

    def train(self, *args, **kwargs):
        raise NotImplementedError("cluster.train() feeds data in InputMode.SPARK, which this "
                                  "version of sparktf does not provide yet")

    def inference(self, *args, **kwargs):
        raise NotImplementedError("cluster.inference() needs InputMode.SPARK, which this "
                                  "version of sparktf does not provide yet")

    def _fail(self, message: str, exc_type=errors.Aborted):
        self._coordinator.abort(message)
        self.sc.cancelJobGroup(self._job_group)
        self._job.join(30)
        self._coordinator.shutdown()
        self._closed = True
        raise exc_type(message)

    def wait(self, timeout: float) -> bool:
        """Waits up to `timeout` s for every node to finish. True when all
        finished cleanly, False if some still run; raises
        :class:`sparktf.errors.Aborted` with the failed node's traceback (and
        tears the cluster down) if a node failed or was lost."""
        if self._closed:
            return True
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self._coordinator.wait_finished(min(1.0, max(timeout, 0.01))):
                    return True
            except errors.Aborted as e:
                self._fail(str(e))
            if not self._job.is_alive() and self._job.error is not None:
                self._fail(f"the Spark job running the nodes failed: {self._job.error}")
            if time.monotonic() >= deadline:
                return False

    def shutdown(self, grace_secs: float = 0, timeout: float = 259200) -> None:
        """Waits for every worker to finish (then stops ps and evaluator nodes).
        Raises :class:`sparktf.errors.Aborted` with the failed node's traceback
        if a node failed or was lost, DeadlineExceeded after `timeout` s."""
        if self._closed:
            return
        if not self.wait(timeout):
            self._fail(f"shutdown timed out after {timeout} s: "
                       f"{self._coordinator.last_wait_error()}", errors.DeadlineExceeded)
        self._job.join(60)
        if self._job.is_alive() or self._job.error is not None:
            self._fail(f"nodes finished but their Spark tasks did not: {self._job.error}")
        if grace_secs:
            time.sleep(grace_secs)
        self._coordinator.shutdown()
        self._closed = True
        logger.info("sparktf: cluster shut down")


class _JobThread(threading.Thread):
    def __init__(self, sc, rdd_fn, group: str):
        super().__init__(name="sparktf-nodes", daemon=True)
        self.sc, self.rdd_fn, self.group, self.error = sc, rdd_fn, group, None

    def run(self):
        try:
            self.sc.setJobGroup(self.group, "sparktf nodes", interruptOnCancel=True)
            self.rdd_fn()
        except BaseException as e:  # noqa: BLE001 - reported by the cluster
            self.error = e


def run(sc, map_fun, tf_args, num_executors, num_ps=0, tensorboard=False,
        input_mode=InputMode.TENSORFLOW, log_dir=None, driver_ps_nodes=False,
        master_node=None, reservation_timeout=600, queues=None, eval_node=False,
        release_port=True, heartbeat_timeout=10.0):
    """Starts a TensorFlow cluster on `num_executors` Spark executors and runs
    ``map_fun(tf_args, ctx)`` on each (TFoS's TFCluster.run). Returns once every
    node has its role; raises a clear error within seconds when Spark cannot
    provide the task slots, and after `reservation_timeout` s when nodes do not
    register (naming the missing executors)."""
    try:  # the standalone package loads faster on the node than pyspark's copy
        import cloudpickle
    except ImportError:
        from pyspark import cloudpickle

    if input_mode == InputMode.SPARK:
        raise NotImplementedError("InputMode.SPARK is not provided by this version of sparktf; "
                                  "use InputMode.TENSORFLOW (nodes read their own data)")
    if input_mode != InputMode.TENSORFLOW:
        raise errors.InvalidArgument(f"unknown input_mode {input_mode!r}")
    if driver_ps_nodes:
        raise errors.InvalidArgument("driver_ps_nodes=True is not supported: parameter servers "
                                     "run on executors")
    if master_node not in (None, "chief", "master"):
        raise errors.InvalidArgument(f"master_node must be None, 'chief' or 'master', "
                                     f"got {master_node!r}")
    if tensorboard and not log_dir:
        log_dir = tempfile.mkdtemp(prefix="sparktf-tensorboard-")
    num_executors = int(num_executors)
    _wait_for_slots(sc, num_executors, min(float(reservation_timeout), DEFAULT_SLOT_WAIT))

    token = secrets.token_hex(16)
    coordinator = _native.Coordinator(num_executors, token, int(num_ps), master_node or "",
                                      bool(eval_node), "0.0.0.0", 0, float(heartbeat_timeout))
    default_fs = sc._jsc.hadoopConfiguration().get("fs.defaultFS") or "file://"
    if default_fs == "file:///":
        default_fs = "file://"
    meta = {
        "coordinator": f"{_driver_host(sc)}:{coordinator.port}",
        "token": token,
        "agent": _agent_binary(),
        "reservation_timeout": float(reservation_timeout),
        "log_dir": log_dir if tensorboard else None,
        "payload": cloudpickle.dumps((map_fun, tf_args, {"release_port": bool(release_port),
                                                         "defaultFS": default_fs})),
    }
    nodes = sc.parallelize(range(num_executors), num_executors)
    group = f"sparktf-{token[:8]}"
    job = _JobThread(sc, lambda: nodes.barrier().mapPartitions(_node_task(meta)).collect(),
                     group)
    t0 = time.monotonic()
    job.start()
    logger.info("sparktf: coordinator %s waiting for %d nodes", meta["coordinator"],
                num_executors)
    deadline = t0 + float(reservation_timeout)
    cluster = TFCluster(sc, coordinator, job, group, {}, input_mode, log_dir)
    while True:
        try:
            if coordinator.wait_reserved(min(0.5, max(deadline - time.monotonic(), 0.01))):
                break
        except errors.Aborted as e:
            cluster._fail(str(e))
        if job.error is not None:
            cluster._fail(f"the Spark job running the nodes failed before they registered: "
                          f"{job.error}")
        if time.monotonic() >= deadline:
            cluster._fail(coordinator.last_wait_error(), errors.DeadlineExceeded)
    cluster.cluster_info = json.loads(coordinator.cluster_json())
    logger.info("sparktf: cluster ready in %.1f s: %s", time.monotonic() - t0,
                cluster.cluster_info)
    return cluster
