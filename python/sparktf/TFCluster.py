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

In InputMode.SPARK the node task returns once its agent runs the TF process
(the agent lives on, watching the executor), so that the executors are free
for the feeding jobs of ``cluster.train`` and ``cluster.inference``.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import typing

from sparktf import _native, errors, keras_version
from sparktf import status as status_mod

logger = logging.getLogger("sparktf")

__all__ = ["InputMode", "TFCluster", "run"]

DEFAULT_PROGRESS_TIMEOUT = 1800.0  # seconds a node's main thread may stay put
DEFAULT_PROGRESS_INTERVAL = 10.0  # seconds between cluster.train's progress lines
_ABORT_POLL_INTERVAL = 0.1  # seconds between a feeding job's looks at the coordinator
DEFAULT_SLOT_WAIT = 30.0  # seconds to wait for executors to come up before failing


class InputMode:
    """TENSORFLOW: nodes read their own data. SPARK: Spark feeds them through
    cluster.train / cluster.inference."""

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


def _status_server_args(sc, token: str, enabled: bool, address, port) -> dict:
    """The Coordinator's status endpoint arguments (none when not `enabled`)."""
    if not enabled:
        return {}
    return {"status_hosts": status_mod.listen_hosts(address, _driver_host(sc)),
            "status_port": int(port or 0),
            "status_tokens": [token, status_mod.read_only_token(token)],
            "status_assets": status_mod.page_assets()}


def _driver_bind_address(sc) -> str:
    """Where the coordinator listens: Spark's own choice for the driver
    (spark.driver.bindAddress, else the address executors are told, spark.driver.host)."""
    return sc.getConf().get("spark.driver.bindAddress", None) or _driver_host(sc)


def _task_slots(sc) -> tuple[int, int]:
    """(executors, task slots) currently registered with the driver: the slots Spark's own
    check of a barrier stage counts (not sc.defaultParallelism, which is at least 2 and
    may be set by the user)."""
    jsc = sc._jsc.sc()
    executors = max(len(jsc.statusTracker().getExecutorInfos()) - 1, 0)  # and the driver
    if not executors:
        return 0, 0
    profile = jsc.resourceProfileManager().defaultResourceProfile()
    return executors, int(jsc.maxNumConcurrentTasks(profile))


def _requested_executors(sc) -> int | None:
    """How many executors the application asked for (spark.executor.instances,
    --num-executors), when that is fixed; None when Spark does not say (local-cluster,
    standalone's cores-based sizing, dynamic allocation)."""
    conf = sc.getConf()
    if conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        return None
    value = conf.get("spark.executor.instances", None)
    return int(value) if value else None


def _wait_for_slots(sc, needed: int, timeout: float, patience: float) -> None:
    """Returns once Spark has `needed` task slots. Fails at once when the application
    asked for fewer executors than that; waits up to `patience` (the reservation timeout)
    while executors it asked for are still starting (YARN containers can take long), and
    up to `timeout` otherwise."""
    requested = _requested_executors(sc)
    if requested is not None and requested < needed:
        timeout = 0.0
    elif requested is not None:
        timeout = patience
    deadline = time.monotonic() + timeout
    while True:
        executors, slots = _task_slots(sc)
        if slots >= needed:
            return
        if time.monotonic() >= deadline:
            asked = (f" (the application asked for {requested}: spark.executor.instances)"
                     if requested is not None else "")
            raise errors.InvalidArgument(
                f"num_executors={needed} but the cluster has {executors} executor(s) with "
                f"{slots} task slot(s) after waiting {timeout:.0f} s{asked}. Ask Spark for "
                f"at least {needed} executors (spark.executor.instances, --num-executors), "
                "with one task slot each (spark.executor.cores = spark.task.cpus), and "
                "disable dynamic allocation (spark.dynamicAllocation.enabled=false)"
                + _yarn_hint(sc))
        time.sleep(0.2)


def _yarn_hint(sc) -> str:
    """Why YARN may hold executors back, for a reservation that timed out."""
    if not sc.master.startswith("yarn"):
        return ""
    queue = sc.getConf().get("spark.yarn.queue", "default")
    return (f". On YARN the queue '{queue}' (spark.yarn.queue) may have no room for more "
            "containers, or a container (spark.executor.memory + "
            "spark.executor.memoryOverhead) may exceed yarn.scheduler.maximum-allocation-mb: "
            f"the ResourceManager's page of {sc.applicationId} says why containers are pending")


def _check_dynamic_allocation(sc, needed: int) -> None:
    """Dynamic allocation removes executors it sees idle and scales to pending tasks; a
    node holds its executor for the whole run (in InputMode.SPARK between feeding tasks
    too). Allowed only when it keeps at least `needed` executors."""
    conf = sc.getConf()
    if conf.get("spark.dynamicAllocation.enabled", "false").lower() != "true":
        return
    minimum = int(conf.get("spark.dynamicAllocation.minExecutors", "0"))
    if minimum >= needed:
        return
    raise errors.InvalidArgument(
        f"num_executors={needed} but dynamic allocation is on "
        f"(spark.dynamicAllocation.enabled=true, spark.dynamicAllocation.minExecutors="
        f"{minimum}): it would remove the executors of idle-looking nodes and cannot be "
        "asked for executors up front. Submit with --conf spark.dynamicAllocation.enabled="
        f"false and --num-executors {needed} (spark.executor.instances), or keep it on with "
        f"--conf spark.dynamicAllocation.minExecutors={needed}")


_detached_agents: list = []  # Popen objects of SPARK-mode agents, reaped when they end


def _executor_pid() -> int:
    """The pid of the executor JVM that (indirectly) started this Python worker."""
    pid = os.getpid()
    for _ in range(8):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            return 0
        if comm == "java":
            return pid
        pid = int(fields[1])  # ppid
        if pid <= 1:
            return 0
    return 0


def _spark_executor_id(jvm_pid: int) -> str:
    """Spark's id of the executor whose JVM is `jvm_pid` (its --executor-id), or ''."""
    try:
        with open(f"/proc/{jvm_pid}/cmdline", "rb") as f:
            args = f.read().decode(errors="replace").split("\0")
    except OSError:
        return ""
    for flag, value in zip(args, args[1:]):
        if flag == "--executor-id":
            return value
    return ""


def _removed_executors(sc) -> dict:
    """Spark's executors that were removed, {id: reason} (what the UI's Executors page
    shows: for YARN, the container's exit and its diagnostics)."""
    out = {}
    try:
        summaries = sc._jsc.sc().statusStore().executorList(False)
        for i in range(summaries.size()):
            e = summaries.apply(i)
            if not e.isActive():
                reason = e.removeReason()
                out[str(e.id())] = str(reason.get()) if reason.isDefined() else ""
    except Exception as e:  # noqa: BLE001 - only an explanation is lost
        logger.debug("sparktf: no executor list from Spark: %s", e)
    return out


# How long a failure's message waits for Spark to say why an executor ended (YARN reports
# a container's end seconds after its processes died): before raising, and before a restart.
_EXPLAIN_WAIT = 10.0
_EXPLAIN_WAIT_RESTART = 2.0

# Spark's words for YARN's exit statuses -104 and -103 (not 137: any kill on request).
_YARN_MEMORY_KILL = re.compile(r"exceeding (physical|virtual) memory limits")


def _explain_lost_nodes(sc, nodes: list, wait: float) -> str:
    """For nodes that were lost or killed, what Spark knows of their executors' end,
    waiting up to `wait` s for it (YARN reports a container's end a few seconds after its
    processes died); '' if nothing. A container killed for its memory limit gets advice."""
    wanted = {n["spark_executor"]: n for n in nodes
              if n.get("spark_executor") and (n["phase"] == "lost" or n.get("signal"))}
    if not wanted:
        return ""
    # Wait only when the executor itself may be ending: the agent vanished, was signalled
    # (a container kill signals every process in it) or saw the executor end.
    executor_ending = any(n["phase"] == "lost" or n.get("reason", "").startswith(
        ("agent received signal", "the Spark executor ended")) for n in wanted.values())
    deadline = time.monotonic() + (wait if executor_ending else 0)
    while True:
        removed = _removed_executors(sc)
        found = {i: removed[i] for i in wanted if removed.get(i)}
        if len(found) == len(wanted) or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    lines = []
    for i, reason in sorted(found.items()):
        n = wanted[i]
        where = f"Spark executor {i}" + (f" ({n['container']})" if n.get("container") else "")
        lines.append(f"{where} was removed: {reason.strip()}")
        if _YARN_MEMORY_KILL.search(reason):
            lines.append(
                "  YARN killed the container for exceeding its memory limit; the node's "
                "TensorFlow process runs inside that container and counts against it "
                "(spark.executor.memory + spark.executor.memoryOverhead). Raise "
                "spark.executor.memoryOverhead (Python and TensorFlow live there), or "
                "spark.executor.memory, or make the TF process use less memory.")
    return "\n".join(lines)


def _start_detached(cmd: list, env: dict, executor_id: int, timeout: float, tmp: str,
                    ring_prefix: str) -> None:
    """Starts the agent in its own process group and returns once it runs the TF
    process (it writes 'ready' to a pipe); raises if it ends first. It stays in the
    executor's session: when this Python worker ends, YARN's process tree of the container
    (which adopts orphans by session) still counts the agent and its TF process. Once it
    ends, a thread of this Python worker removes what an agent killed without warning
    leaves: its temp dir `tmp` and its rings (names starting with `ring_prefix`) whose
    consumer is dead."""
    import select

    _detached_agents[:] = [p for p in _detached_agents if p.poll() is None]
    read_fd, write_fd = os.pipe()
    try:
        cmd = cmd[:1] + ["agent", "--ready-fd", str(write_fd)] + cmd[2:]
        proc = subprocess.Popen(cmd, env=env, pass_fds=[write_fd], process_group=0,
                                stdin=subprocess.DEVNULL)
        os.close(write_fd)
        write_fd = -1
        deadline = time.monotonic() + timeout
        while True:
            ready, _, _ = select.select([read_fd], [], [], 1.0)
            if ready:
                if os.read(read_fd, 16).startswith(b"ready"):
                    _detached_agents.append(proc)
                    threading.Thread(target=_clean_after_agent, args=(proc, tmp, ring_prefix),
                                     name="sparktf-agent-reaper", daemon=True).start()
                    return
                rc = proc.wait()
                raise RuntimeError(f"sparktf node {executor_id} ended with exit code {rc} before "
                                   "it started; the driver reports the cause")
            if time.monotonic() >= deadline:
                proc.kill()
                raise RuntimeError(f"sparktf node {executor_id} did not start within {timeout} s")
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


def _clean_after_agent(proc, tmp: str, ring_prefix: str) -> None:
    proc.wait()
    shutil.rmtree(tmp, ignore_errors=True)
    # Its TF process dies with it (PR_SET_PDEATHSIG) a moment later; its rings are stale
    # from then on.
    deadline = time.monotonic() + 10
    while True:
        try:
            _native.sweep_stale_rings(ring_prefix)
        except errors.SparktfError as e:
            logger.debug("sparktf: sweeping %s: %s", ring_prefix, e)
        if not glob.glob("/dev/shm" + ring_prefix + "*") or time.monotonic() > deadline:
            return
        time.sleep(0.2)


_ORPHAN_AGE = 60.0  # s: a node dir younger than this may still be getting its agent


def _sweep_orphan_node_dirs() -> None:
    """Removes node temp dirs (this host's TMPDIR) that no live process names on its
    command line and that are older than _ORPHAN_AGE: an agent killed in InputMode.SPARK,
    detached from its task, could not remove its own."""
    dirs = glob.glob(os.path.join(tempfile.gettempdir(), "sparktf-node-*"))
    now = time.time()
    dirs = [d for d in dirs if now - _mtime(d) > _ORPHAN_AGE]
    if not dirs:
        return
    named = set()
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            text = open(cmdline, "rb").read().decode(errors="replace")
        except OSError:
            continue
        named.update(d for d in dirs if d in text)
    for d in dirs:
        if d not in named:
            shutil.rmtree(d, ignore_errors=True)


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return time.time()


def _agent_command(meta: dict, executor_id: int, tmp: str, gpus=(), jvm: int = 0) -> list:
    """The node agent's command line for node `executor_id`, its payload written into `tmp`
    (which the caller removes once the agent ends, unless it runs detached)."""
    payload = os.path.join(tmp, "payload")
    with open(payload, "wb") as f:
        f.write(meta["payload"])
    # This machine's own sparktf (a packed environment lives elsewhere than the driver's).
    cmd = [_agent_binary(), "agent", "--coordinator", meta["coordinator"],
           "--executor-id", str(executor_id), "--error-file",
           os.path.join(tmp, "error"), "--reservation-timeout",
           str(meta["reservation_timeout"]), "--python", sys.executable,
           "--generation", str(meta.get("generation", 0)),
           "--progress-timeout", str(meta.get("progress_timeout") or 0)]
    spark_executor = _spark_executor_id(jvm) if jvm else ""
    if spark_executor:
        cmd += ["--spark-executor-id", spark_executor]
    if os.environ.get("SPARK_LOCAL_IP"):  # the address this host's Spark uses
        cmd += ["--local-ip", os.environ["SPARK_LOCAL_IP"]]
    if gpus:
        cmd += ["--gpus", ",".join(gpus)]
    if meta.get("log_dir"):
        cmd += ["--tensorboard-logdir", meta["log_dir"]]
    if meta.get("node_logs"):
        cmd += ["--stream-output"]
    if meta.get("feed_cluster_id"):
        cmd += ["--feed-cluster-id", meta["feed_cluster_id"]]
        if jvm:
            cmd += ["--watch-pid", str(jvm)]
    return cmd + ["--", sys.executable, "-m", "sparktf.node", payload]


def _agent_env(meta: dict) -> dict:
    return dict(os.environ, SPARKTF_TOKEN=meta["token"], **meta.get("node_env", {}))


def _node_task(meta: dict):
    """The barrier task body: start the node agent and wait for it (in SPARK
    mode, only until it runs the TF process). Task i is node first_executor + i."""

    def run_node(_partition):
        from pyspark import BarrierTaskContext

        tc = BarrierTaskContext.get()
        executor_id = tc.partitionId() + int(meta.get("first_executor", 0))
        resources = tc.resources()
        gpus = list(resources["gpu"].addresses) if "gpu" in resources else []
        _sweep_orphan_node_dirs()
        tmp = tempfile.mkdtemp(prefix="sparktf-node-")
        try:
            cmd = _agent_command(meta, executor_id, tmp, gpus, _executor_pid())
            env = _agent_env(meta)
            if meta.get("feed_cluster_id"):
                ring_prefix = _native.feed_ring_name(meta["feed_cluster_id"], executor_id, "x")
                _start_detached(cmd, env, executor_id, meta["reservation_timeout"], tmp,
                                ring_prefix[:-1])
                tmp = None  # the agent removes its error file and directory
                rc = 0
            else:
                rc = subprocess.run(cmd, env=env, check=False).returncode
        finally:
            if tmp:
                shutil.rmtree(tmp, ignore_errors=True)
        if rc != 0:
            raise RuntimeError(f"sparktf node {executor_id} ended with exit code {rc}; "
                               "the driver reports the cause")
        yield executor_id

    return run_node


class _DriverNodes:
    """TFoS's driver_ps_nodes: nodes 0..n-1 (the ps) run on the driver, each an agent in
    its own process group, supervised by the coordinator like any node."""

    def __init__(self, meta: dict, count: int):
        self.procs = []
        self.dirs = []
        # They run the driver's Python with the driver's modules (TFoS forked them from
        # the driver): map_fun's module is importable wherever the driver imported it.
        env = dict(_agent_env(meta), PYTHONPATH=os.pathsep.join(
            [os.path.abspath(p or os.curdir) for p in sys.path]))
        for executor_id in range(count):
            tmp = tempfile.mkdtemp(prefix="sparktf-node-")
            self.dirs.append(tmp)
            self.procs.append(subprocess.Popen(
                _agent_command(meta, executor_id, tmp), env=env,
                process_group=0, stdin=subprocess.DEVNULL))

    def failed(self) -> str | None:
        """Why one ended before the cluster formed, if one did."""
        for i, p in enumerate(self.procs):
            if p.poll() not in (None, 0):
                return f"driver-side node {i} ended with exit code {p.returncode}"
        return None

    def stop(self, wait: float = 30) -> None:
        """Waits for the agents (the coordinator stops the ps), killing what is left."""
        deadline = time.monotonic() + wait
        for p in self.procs:
            try:
                p.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)


class TFCluster:
    """A running sparktf cluster (returned by :func:`run`)."""

    def __init__(self, sc, coordinator, meta: dict, num_executors: int, cluster_id: str,
                 input_mode: int, log_dir: str | None, token: str = "",
                 queues: list | None = None, feed_cluster_id: str = "", restarts: int = 0,
                 restart_backoff: float = 1.0):
        self.sc = sc
        self._coordinator = coordinator
        self._meta = meta
        self._num_executors = num_executors
        self._cluster_id = cluster_id
        self._job = None
        self._job_group = ""
        self.cluster_info: dict = {}
        self.generation = 0  # restarts so far
        self._restarts_left = int(restarts)
        self._restart_backoff = float(restart_backoff)
        self._failures: list[str] = []  # of the generations before this one
        self.input_mode = input_mode
        self.log_dir = log_dir
        self.progress_interval = 0.0  # TFCluster.run's progress
        self._closed = False
        self._token = token
        self._coordinator_address = ""
        # Feed rings and sockets are named per generation (<base>g<generation>): a feeding
        # task of a failed generation can never reach the next one's rings.
        self._feed_base = feed_cluster_id
        self._feed_cluster_id = ""
        self._feeds_closed = False
        self._ended_queues: set = set()  # end_feed
        self._driver_nodes_count = 0  # driver_ps_nodes: the ps run on the driver
        self._driver_nodes = None
        # SPARK mode: the epochs fed to this generation, oldest first, each with the rows
        # every fed node had been sent once it was fed (cumulative): what a restart re-feeds.
        self._fed_epochs: list[_FedEpoch] = []
        self._streams: list = []  # train_stream's queries
        self._queues = [q for q in (queues or ["input"]) if q not in ("output", "error")]
        self.dropped_records = 0
        self._status_url = None

    @property
    def cluster_spec(self) -> dict:
        return json.loads(self._coordinator.cluster_json())

    def status(self) -> status_mod.ClusterStatus:
        """Nodes (role, host, phase, exits, errors, training progress, input), totals:
        the status endpoint's JSON as a dict, which prints as the table that ``sparktf
        status URL`` prints."""
        return status_mod.ClusterStatus(json.loads(self._coordinator.status_json()))

    def status_url(self) -> str | None:
        """The live status page, with its read-only token (None with status=False)."""
        return self._status_url

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

    def _feed_meta(self, qname: str, feed_timeout: float) -> dict:
        if self.input_mode != InputMode.SPARK:
            raise errors.InvalidArgument("cluster.train/inference feed data in InputMode.SPARK; "
                                         "this cluster runs with InputMode.TENSORFLOW")
        if self._closed:
            raise errors.InvalidArgument("the cluster is shut down")
        nodes = sorted((n for n in self.status()["nodes"] if n["fed"]),
                       key=lambda n: n["feed_index"])
        targets = [{k: n[k] for k in ("executor_id", "host", "feed_port", "job_name",
                                      "task_index", "feed_index")} for n in nodes]
        if qname not in self._queues:
            raise errors.InvalidArgument(f"unknown queue {qname!r}; the cluster has "
                                         f"{self._queues} (TFCluster.run(queues=...))")
        # feed_id: this feeding job's own (every attempt of one of its tasks has it, so
        # a node drops the rows an earlier attempt delivered; docs/formats/feed.md)
        return {"cluster_id": self._feed_cluster_id, "token": self._token, "qname": qname,
                "feed_id": secrets.randbits(63) | 1,
                "coordinator": self._coordinator_address,
                "feed_timeout": float(feed_timeout), "targets": targets,
                "generation": self.generation,
                # partitions go to a node on their task's host (feeding._open_session); "modulo":
                # partition i -> node i mod W
                "placement": os.environ.get("SPARKTF_FEED_PLACEMENT", "local"),
                # "tcp" forces every feeding task onto TCP (tests, debugging)
                "transport": os.environ.get("SPARKTF_FEED_TRANSPORT", "auto"),
                # "batch": the JVM feeder's threads yield to training (docs/architecture.md);
                # "normal": they do not
                "feeder_sched": os.environ.get("SPARKTF_FEEDER_SCHED", "batch")}

    def _run_feed_job(self, job, what: str):
        """Runs a feeding job; if it fails because a node failed, raises the
        node's error (with its traceback) instead of Spark's. The job is cancelled
        within _ABORT_POLL_INTERVAL of the coordinator aborting the cluster, so that
        a dead node ends it at once, not after spark.task.maxFailures retries of
        each feeding task (each of which finds the node gone)."""
        tag = f"sparktf-feed-{secrets.token_hex(6)}"
        done = threading.Event()

        def cancel_on_abort():
            while not done.wait(_ABORT_POLL_INTERVAL):
                if self.status()["aborted"]:
                    self.sc.cancelJobsWithTag(tag)
                    return

        watcher = threading.Thread(target=cancel_on_abort, name="sparktf-feed-watch",
                                   daemon=True)
        self.sc.addJobTag(tag)  # this thread's jobs only; the user's own tags stay
        watcher.start()
        try:
            return job()
        except Exception as e:  # noqa: BLE001 - re-raised with the node's cause
            status = self.status()
            failed = _failed_nodes(status["nodes"])
            if failed or status["aborted"]:
                n = failed[0] if failed else None
                cause = status["abort_reason"] or (
                    f"{n['job_name']}:{n['task_index']} {n['phase']} (exit code "
                    f"{n['exit_code']}, signal {n['signal']})\n{n['traceback']}")
                logs = self._failed_node_logs(status["nodes"])
                raise _NodeFailed(f"{what} failed because a node failed: {cause}"
                                  + (f"\n{logs}" if logs else ""), cause) from e
            raise
        finally:
            done.set()
            watcher.join()
            self.sc.removeJobTag(tag)

    def train(self, data, num_epochs: int = 1, feed_timeout: float = 600, qname: str = "input",
              feeder: str = "auto"):
        """Feeds `data` (an RDD, or a DataFrame through Arrow) to the training
        workers, `num_epochs` times (TFoS's cluster.train). A DataFrame's columns go
        as they are (numbers, booleans, strings, binary, arrays of them, pyspark.ml
        vectors as arrays of float64); a null anywhere fails the feed naming its column
        (fill or drop nulls first). A partition goes to
        a node on its feeding task's host while that node has fewer than ceil(P / W) of
        the epoch's P partitions (shared memory, not TCP), else to the node with the
        fewest; a retried task's partition goes where it went. Returns once every row was
        delivered; the feed stays open for more calls until shutdown(). Returns {"rows",
        "skipped", "partitions", "local_partitions", "pickles_native", "pickles_python",
        "cache_partitions", "cache_blocks", "yielded_partitions", "placement": per epoch, the
        feed index of the node each partition went to, "remote": per epoch, the partitions
        fed over TCP, "feeder":
        "python" or "jvm"}: rows are skipped when a consumer stopped reading
        (terminate()); a cached RDD's stored pickles are read in C++ unless they hold
        values only Python reads (pickles_python); the JVM feeder reads a cached
        DataFrame of numbers, booleans and arrays of numbers straight from Spark's
        in-memory column buffers (cache_partitions counts those partitions;
        cache_blocks those read by their block's id, in tasks that carry none of the
        cache's lineage; the rest had no stored block and the lineage made them;
        yielded_partitions those whose JVM feeding task ran at SCHED_BATCH, with its JVM's
        JIT compilers, so as not to preempt training on shared cores:
        SPARKTF_FEEDER_SCHED=normal turns that off). With
        restarts (TFCluster.run), a node's failure restarts the cluster, and train()
        carries on: the new generation is fed again from the first epoch a node had
        not taken in full (_feed_epoch). A streaming DataFrame is fed as it arrives
        (train_stream; returns its StreamingQuery); a DStream is refused, naming that.
        `feeder` (DataFrames): "python" (mapInArrow into PySpark's Python workers), "jvm"
        (the executors' JVMs hand Arrow buffers to the core, no Python worker:
        sparktf.jvm; its jar must be in spark.jars), or "auto": "jvm" when its jar is on
        the classpath."""
        from sparktf import feeding, jvm

        _refuse_dstream(data, "cluster.train")
        if getattr(data, "isStreaming", False):
            return self.train_stream(data, feed_timeout, qname)
        if int(num_epochs) < 0:
            raise errors.InvalidArgument(f"num_epochs cannot be negative, got {num_epochs}")
        if int(num_epochs) == 0:  # TFoS's default: "an arbitrarily large number for now"
            logger.warning("sparktf: cluster.train(num_epochs=0) feeds 10 epochs, as TFoS did")
            num_epochs = 10
        if feeder not in ("auto", "python", "jvm"):
            raise errors.InvalidArgument(f"feeder must be 'auto', 'python' or 'jvm', got {feeder!r}")
        self._refuse_ended(qname)
        self._feed_meta(qname, feed_timeout)  # refuses bad arguments before anything runs
        self._restart_if_failed()
        is_df = hasattr(data, "mapInArrow")
        if feeder == "jvm":
            if not is_df:
                raise errors.InvalidArgument("feeder='jvm' feeds DataFrames; this is an RDD")
            jvm.check_available(self.sc)
        elif feeder == "auto":
            feeder = "jvm" if is_df and jvm.available(self.sc) else "python"
        if feeder == "jvm":
            data = feeding.vectors_as_arrays(data)
            partitions = data.rdd.getNumPartitions()

            def make_job(meta):
                return lambda: jvm.feed(data, dict(meta, partitions=partitions))
        elif is_df:
            schema = "partition long, pushed long, skipped long, local boolean, node long"
            data = feeding.vectors_as_arrays(data)
            partitions = data.rdd.getNumPartitions()

            def make_job(meta):
                fn = feeding.feed_arrow_partition(dict(meta, partitions=partitions))
                return lambda: [tuple(r) for r in data.mapInArrow(fn, schema).collect()]
        else:
            pickled = feeding.pickled_batches(data)
            source = data if pickled is None else pickled
            partitions = source.getNumPartitions()

            def make_job(meta):
                fn = feeding.feed_rdd_partition(dict(meta, partitions=partitions),
                                                pickled is not None)
                return lambda: source.mapPartitionsWithIndex(fn).collect()
        total = {"rows": 0, "skipped": 0, "partitions": 0, "local_partitions": 0,
                 "pickles_native": 0, "pickles_python": 0, "cache_partitions": 0,
                 "cache_blocks": 0, "yielded_partitions": 0,
                 "placement": [], "remote": [],
                 "feeder": feeder if is_df else "python"}
        with _ProgressLines(self, qname, int(num_epochs), self.progress_interval) as progress:
            self._feed_epochs(make_job, qname, feed_timeout, int(num_epochs), total, progress)
        if total["skipped"]:
            logger.warning("sparktf: %d rows were not fed because a consumer stopped reading",
                           total["skipped"])
        return total

    def _feed_epochs(self, make_job, qname: str, feed_timeout: float, num_epochs: int,
                     total: dict, progress: _ProgressLines) -> None:
        for epoch in range(num_epochs):
            t0 = time.monotonic()
            progress.epoch = epoch + 1
            stats = self._feed_epoch(make_job, qname, feed_timeout,
                                     f"feeding epoch {epoch + 1}")
            rows = sum(s[1] for s in stats)
            progress.rows_per_epoch = progress.rows_per_epoch or rows
            total["rows"] += rows
            total["skipped"] += sum(s[2] for s in stats)
            total["partitions"] += len(stats)
            total["local_partitions"] += sum(1 for s in stats if s[3])
            total["placement"].append([node for _, node in sorted((s[0], s[4]) for s in stats)])
            total["remote"].append(sorted(s[0] for s in stats if not s[3]))
            # A cached or source RDD: its stored pickles, read in C++ or (other values)
            # unpickled in Python.
            total["pickles_native"] += sum(s[5] for s in stats if len(s) > 5)
            total["pickles_python"] += sum(s[6] for s in stats if len(s) > 6)
            total["cache_partitions"] += sum(1 for s in stats if len(s) > 7 and s[7])
            total["cache_blocks"] += sum(1 for s in stats if len(s) > 8 and s[8])
            total["yielded_partitions"] += sum(1 for s in stats if len(s) > 9 and s[9])
            logger.info("sparktf: fed epoch %d/%d: %d rows in %.1f s", epoch + 1, num_epochs,
                        rows, time.monotonic() - t0)

    def _restart_if_failed(self) -> None:
        """A generation that failed while no call watched it (between train() and
        inference() calls) restarts now when restarts remain (without, the call's feeding
        job fails with the node's failure)."""
        if self._restarts_left <= 0:
            return
        status = self.status()
        if status["aborted"]:
            self._restart_and_refeed(self._with_spark_explanation(status["abort_reason"],
                                                                  _EXPLAIN_WAIT_RESTART))

    def _feed_epoch(self, make_job, qname: str, feed_timeout: float, what: str):
        """Runs one epoch's feeding job (make_job(meta) -> job) on the current generation
        and records it. When a node fails and restarts remain, the cluster restarts, what
        the failed generation had not taken is fed again (_restart_and_refeed), and then
        this epoch, from its first partition; without restarts left the node's failure is
        raised (and shutdown() raises it too)."""
        while True:
            meta = self._feed_meta(qname, feed_timeout)
            try:
                stats = self._run_feed_job(make_job(meta), what)
            except _NodeFailed as e:
                if self._restarts_left <= 0:
                    raise
                self._restart_and_refeed(self._with_spark_explanation(e.cause,
                                                                      _EXPLAIN_WAIT_RESTART))
                logger.warning("sparktf: %s again, from its first partition, to generation %d",
                               what, self.generation)
                continue
            sent = dict(self._fed_epochs[-1].sent) if self._fed_epochs else {}
            for _, pushed, _, _, node, *_ in stats:
                key = (qname, node)
                sent[key] = sent.get(key, 0) + pushed
            self._fed_epochs.append(_FedEpoch(make_job, qname, feed_timeout, what, sent))
            self._forget_taken_epochs()
            return stats

    def _forget_taken_epochs(self) -> None:
        """Drops the records of the first epochs every node has taken in full (a restart
        never feeds them again), so that a long stream of train() calls (train_stream's
        micro-batches) keeps a short list."""
        if len(self._fed_epochs) < 2:
            return
        taken = self._taken()
        keep = next((i for i, e in enumerate(self._fed_epochs)
                     if any(taken.get(k, 0) < n for k, n in e.sent.items())),
                    len(self._fed_epochs) - 1)
        del self._fed_epochs[:keep]

    def _taken(self) -> dict:
        """{(queue, feed index): rows taken or dropped} by each fed node, as its TF process
        last reported (at most kProgressReportInterval old: an underestimate)."""
        status = self.status()
        index = {str(n["executor_id"]): n["feed_index"] for n in status["nodes"] if n["fed"]}
        out = {}
        for qname, per_node in status.get("feeds", {}).items():
            for executor, p in per_node.items():
                if executor in index:
                    out[(qname, index[executor])] = (int(p.get("consumed", 0)) +
                                                     int(p.get("dropped", 0)))
        return out

    def _restart_and_refeed(self, failure: str) -> None:
        """SPARK mode (TENSORFLOW mode: _restart): restarts the cluster after `failure`,
        then feeds the new generation again every epoch from the first one that some node
        had not taken in full (docs/reliability.md)."""
        taken = self._taken()  # before the restart clears the coordinator's accounting
        fed, self._fed_epochs = self._fed_epochs, []
        self._restart(failure)
        first = next((i for i, e in enumerate(fed)
                      if any(taken.get(k, 0) < n for k, n in e.sent.items())), len(fed))
        if first < len(fed):
            logger.warning("sparktf: feeding generation %d again the %d epoch(s) its "
                           "predecessor had not taken in full", self.generation,
                           len(fed) - first)
        for e in fed[first:]:
            self._feed_epoch(e.make_job, e.qname, e.feed_timeout, e.what + " (again)")
        for qname in sorted(self._ended_queues):  # they end in the new generation too
            self._close_queue(qname, 60)

    def train_stream(self, stream_df, feed_timeout: float = 600, qname: str = "input",
                     trigger: dict | None = None, checkpoint_location: str | None = None):
        """Feeds a Structured Streaming DataFrame to the training workers as it arrives:
        each micro-batch is fed once, like a train() call (foreachBatch), and training
        carries on across micro-batches. Returns the StreamingQuery; ``query.stop()`` ends
        the feeding, and shutdown() then ends the nodes' feeds (it stops a query still
        running first). `trigger`: DataStreamWriter.trigger's arguments, e.g.
        {"processingTime": "5 seconds"}."""
        if not getattr(stream_df, "isStreaming", False):
            raise errors.InvalidArgument("train_stream takes a streaming DataFrame "
                                         "(spark.readStream...); use train() for the rest")
        self._refuse_ended(qname)
        self._feed_meta(qname, feed_timeout)  # refuses bad arguments before anything runs

        def feed_micro_batch(batch_df, batch_id):
            stats = self.train(batch_df, 1, feed_timeout, qname)
            logger.info("sparktf: micro-batch %d: %d rows fed", batch_id, stats["rows"])

        writer = stream_df.writeStream.foreachBatch(feed_micro_batch)
        if trigger:
            writer = writer.trigger(**trigger)
        if checkpoint_location:
            writer = writer.option("checkpointLocation", checkpoint_location)
        query = writer.start()
        self._streams.append(query)
        return query

    def inference(self, rdd, feed_timeout: float = 600, qname: str = "input"):
        """An RDD of results: partition i holds the results of input partition
        i, in order, one per row (TFoS's cluster.inference). Lazy, like any
        RDD; a consumer that returns a different number of results fails the
        job with a clear error."""
        self._refuse_ended(qname)
        self._feed_meta(qname, feed_timeout)  # refuses bad arguments before anything runs
        self._restart_if_failed()
        meta = self._feed_meta(qname, feed_timeout)
        from sparktf import feeding

        pickled = feeding.pickled_batches(rdd)
        source = rdd if pickled is None else pickled
        meta["partitions"] = source.getNumPartitions()
        return source.mapPartitionsWithIndex(
            feeding.infer_rdd_partition(meta, pickled is not None), preservesPartitioning=True)

    def end_feed(self, qname: str, timeout: float = 60) -> None:
        """Ends the feed of queue `qname` on every node: their DataFeed / ctx.dataset of
        it reaches its end of data once they have read what was fed, while the other
        queues go on (e.g. a validation feed next to the training feed). shutdown() ends
        every queue not ended before."""
        self._refuse_ended(qname)
        self._feed_meta(qname, timeout)  # refuses bad arguments
        self._restart_if_failed()
        self._ended_queues.add(qname)
        self._close_queue(qname, timeout)

    def _refuse_ended(self, qname: str) -> None:
        if qname in self._ended_queues:
            raise errors.InvalidArgument(f"the feed of queue {qname!r} was ended (end_feed)")

    def _close_feeds(self, timeout: float = 60) -> None:
        self._feeds_closed = True
        for qname in self._queues:
            self._close_queue(qname, timeout)

    def _close_queue(self, qname: str, timeout: float) -> None:
        """Closes `qname`'s ring input on every node of the current generation."""
        for t in self._feed_meta(qname, timeout)["targets"]:
            try:
                _native.close_feed(self._feed_cluster_id, t["executor_id"], t["host"],
                                   t["feed_port"], self._token, qname, timeout)
            except errors.SparktfError as e:  # a node that already ended
                logger.info("sparktf: closing feed %s of node %d: %s", qname,
                            t["executor_id"], e)

    def feed_stats(self) -> dict:
        """Per queue: rows delivered, consumed and dropped (to keep workers in
        step) on each worker, and their totals."""
        out = {}
        for qname, per_node in self.status().get("feeds", {}).items():
            totals = {k: sum(int(p.get(k, 0)) for p in per_node.values())
                      for k in ("delivered", "consumed", "dropped")}
            out[qname] = {"nodes": per_node, **totals}
        return out

    def _start_generation(self) -> None:
        """Runs this generation's nodes (one barrier stage of num_executors tasks, in a job
        group of its own) and returns once every node has its role; fails the cluster
        when they cannot register in time."""
        meta = dict(self._meta, generation=self.generation)
        if self._feed_base:
            self._feed_cluster_id = f"{self._feed_base}g{self.generation}"
            meta["feed_cluster_id"] = self._feed_cluster_id
        n = self._num_executors
        on_driver = self._driver_nodes_count
        meta["first_executor"] = on_driver
        tasks = self.sc.parallelize(range(n - on_driver), n - on_driver)
        self._job_group = f"sparktf-{self._cluster_id}-{self.generation}"
        self._job = _JobThread(
            self.sc, lambda: tasks.barrier().mapPartitions(_node_task(meta)).collect(),
            self._job_group)
        t0 = time.monotonic()
        if on_driver:
            self._driver_nodes = _DriverNodes(meta, on_driver)
        self._job.start()
        logger.info("sparktf: coordinator %s waiting for %d nodes (generation %d)",
                    meta["coordinator"], n, self.generation)
        deadline = t0 + meta["reservation_timeout"]
        while True:
            try:
                if self._coordinator.wait_reserved(
                        min(0.5, max(deadline - time.monotonic(), 0.01))):
                    break
            except errors.Aborted as e:
                self._fail(str(e))
            if self._job.error is not None:
                self._fail(f"the Spark job running the nodes failed before they registered: "
                           f"{self._job.error}")
            if self._driver_nodes is not None and self._driver_nodes.failed():
                self._fail(self._driver_nodes.failed() + " before the cluster formed")
            if time.monotonic() >= deadline:
                self._fail(self._coordinator.last_wait_error(), errors.DeadlineExceeded)
        self.cluster_info = json.loads(self._coordinator.cluster_json())
        logger.info("sparktf: cluster ready in %.1f s: %s", time.monotonic() - t0,
                    self.cluster_info)

    def _stop_nodes(self) -> None:
        """Cancels this generation's node tasks and waits (up to 30 s) for their job."""
        try:
            self.sc.cancelJobGroup(self._job_group)
        except Exception as e:  # noqa: BLE001 - a stopped SparkContext has no jobs left
            logger.debug("sparktf: cancelling the nodes' job: %s", e)
        if self._job is not None:
            self._job.join(30)
        if self._driver_nodes is not None:
            self._driver_nodes.stop(wait=5)
            self._driver_nodes = None

    def _restart(self, failure: str) -> None:
        """After a failure of this generation: stops its nodes and starts the next one."""
        self._failures.append(f"generation {self.generation}: {failure}")
        self._restarts_left -= 1
        logger.warning("sparktf: generation %d failed; restarting the cluster (%d more "
                       "restart(s) allowed): %s", self.generation, self._restarts_left, failure)
        self._stop_nodes()
        self.generation = self._coordinator.restart()
        time.sleep(self._restart_backoff)
        _wait_for_slots(self.sc, self._num_executors - self._driver_nodes_count,
                        min(self._meta["reservation_timeout"], DEFAULT_SLOT_WAIT),
                        self._meta["reservation_timeout"])
        self._start_generation()

    def _fail(self, message: str, exc_type=errors.Aborted):
        self._coordinator.abort(message)
        self._stop_nodes()
        self._coordinator.shutdown()
        self._closed = True
        if self._failures:
            message = (f"generation {self.generation} failed after {len(self._failures)} "
                       f"restart(s): {message}\n\nEarlier failures:\n" +
                       "\n\n".join(self._failures))
        raise exc_type(message)

    def _with_spark_explanation(self, message: str, wait: float) -> str:
        """`message` and, when nodes were lost or killed, what Spark says of their
        executors (waiting up to `wait` s for it)."""
        try:
            nodes = self.status()["nodes"]
        except Exception:  # noqa: BLE001 - the message stands alone
            return message
        spark_says = "\n".join(filter(None, [_explain_lost_nodes(self.sc, nodes, wait=wait),
                                              self._failed_node_logs(nodes)]))
        try:
            if self.sc._jsc.sc().isStopped():
                spark_says = (spark_says + "\n" if spark_says else "") + (
                    "The SparkContext has stopped: the application ended under the cluster "
                    "(killed, e.g. `yarn application -kill`, or its master lost)")
        except Exception:  # noqa: BLE001 - as good as stopped
            pass
        return f"{message}\n{spark_says}" if spark_says else message

    def _failed_node_logs(self, nodes: list) -> str:
        """Where the whole output of each failed node is (node_log_dir), one line each."""
        lines = []
        for n in _failed_nodes(nodes):
            name = f"{n['job_name']}:{n['task_index']}"
            path = self._coordinator.node_log_path(name)
            if path and os.path.exists(path):
                lines.append(f"The output of {name}: {path}")
        return "\n".join(lines)

    def wait(self, timeout: float) -> bool:
        """Waits up to `timeout` s for every node to finish. True when all
        finished cleanly, False if some still run; raises
        :class:`sparktf.errors.Aborted` with the failed node's traceback (and
        tears the cluster down) if a node failed or was lost."""
        if self._closed:
            return True
        deadline = time.monotonic() + timeout
        while True:
            failure = None
            try:
                if self._coordinator.wait_finished(min(1.0, max(timeout, 0.01))):
                    return True
            except errors.Aborted as e:
                failure = str(e)
            if failure is None and not self._job.is_alive() and self._job.error is not None:
                failure = f"the Spark job running the nodes failed: {self._job.error}"
            if failure is not None:
                # A restart waits less for Spark's word: the next generation is waiting.
                failure = self._with_spark_explanation(
                    failure, _EXPLAIN_WAIT if self._restarts_left <= 0 else _EXPLAIN_WAIT_RESTART)
                if self._restarts_left <= 0:
                    self._fail(failure)
                if self.input_mode == InputMode.SPARK:
                    try:
                        self._restart_and_refeed(failure)
                    except _NodeFailed as e:  # the new generation failed too, no restart left
                        self._fail(e.cause)
                    if self._feeds_closed:
                        self._close_feeds()  # the new generation's feeds end there too
                else:
                    self._restart(failure)
                continue
            if time.monotonic() >= deadline:
                return False

    def _feed_stream_until_done(self, query, timeout: float) -> None:
        """Returns once every worker has finished or `query` has stopped; raises its
        failure, or DeadlineExceeded after `timeout` s."""
        deadline = time.monotonic() + timeout
        while not self.wait(1.0):
            if not query.isActive:
                failure = query.exception()
                if failure is not None:
                    self._fail(f"the streaming query feeding the cluster failed: {failure}")
                return
            if time.monotonic() >= deadline:
                query.stop()
                self._fail(f"shutdown timed out after {timeout} s with the stream feeding",
                           errors.DeadlineExceeded)

    def shutdown(self, ssc=None, grace_secs: float = 0, timeout: float = 259200) -> None:
        """Waits for every worker to finish (then stops ps and evaluator nodes).
        Raises :class:`sparktf.errors.Aborted` with the failed node's traceback
        if a node failed or was lost, DeadlineExceeded after `timeout` s. `ssc` (TFoS's
        Spark Streaming context) is refused: see _refuse_dstream; in its place give the
        StreamingQuery of train(stream_df): shutdown then lets it feed until every worker
        has finished (or it stops; its failure is raised), as TFoS's shutdown(ssc) did.
        `grace_secs`: how long an evaluator node may go on by itself once the workers are
        done (to evaluate the last checkpoint) before it is stopped; ps nodes are stopped
        at once. No more is slept (TFoS slept it whatever the nodes did): shutdown returns
        once every node has finished, the chief's export included."""
        if grace_secs < 0:
            raise errors.InvalidArgument(f"grace_secs cannot be negative, got {grace_secs}")
        if not self._closed:
            self._coordinator.set_evaluator_grace(float(grace_secs))
        if ssc is not None:
            if not _is_streaming_query(ssc):
                _refuse_dstream(ssc, "cluster.shutdown(ssc)")
            elif not self._closed:
                self._feed_stream_until_done(ssc, timeout)
        if self._closed:
            return
        for query in self._streams:
            if query.isActive:
                logger.warning("sparktf: shutdown() stops streaming query %s, which feeds "
                               "this cluster", query.name or query.id)
                query.stop()
        if self.input_mode == InputMode.SPARK:
            self._close_feeds()
        if not self.wait(timeout):
            self._fail(f"shutdown timed out after {timeout} s: "
                       f"{self._coordinator.last_wait_error()}", errors.DeadlineExceeded)
        self._job.join(60)
        if self._job.is_alive() or self._job.error is not None:
            self._fail(f"nodes finished but their Spark tasks did not: {self._job.error}")
        if self._driver_nodes is not None:
            self._driver_nodes.stop()
            self._driver_nodes = None
        if self.input_mode == InputMode.SPARK:
            for qname, st in self.feed_stats().items():
                self.dropped_records += st["dropped"]
                logger.info("sparktf: feed %s: %d rows delivered, %d consumed, %d dropped to "
                            "keep the workers in step", qname, st["delivered"], st["consumed"],
                            st["dropped"])
        self._coordinator.shutdown()
        self._closed = True
        logger.info("sparktf: cluster shut down")


def _is_streaming_query(obj) -> bool:
    return all(hasattr(obj, a) for a in ("isActive", "exception", "stop", "awaitTermination"))


def _refuse_dstream(data, what: str) -> None:
    """Spark Streaming's DStream API (TFoS's streaming entry point) is deprecated in Spark
    and not fed by sparktf: raises Unimplemented with the Structured Streaming equivalent."""
    module = type(data).__module__ or ""
    if module.startswith("pyspark.streaming"):
        raise errors.Unimplemented(
            f"{what} with a DStream / StreamingContext: sparktf feeds Structured Streaming "
            "instead. Read the stream as a DataFrame (spark.readStream...) and feed each "
            "micro-batch: query = cluster.train(stream_df) (or train_stream); ...; "
            "query.stop(); cluster.shutdown()")


def _failed_nodes(nodes: list) -> list:
    """The nodes of a STATUS that failed: lost, or exited with a code or a signal."""
    return [n for n in nodes if n["phase"] == "lost" or
            (n["phase"] == "exited" and (n["exit_code"] or n["signal"]))]


class _ProgressLines:
    """While cluster.train feeds, a line on the driver's stderr every `interval` s: the
    epoch, the rows the workers have taken (out of the total once an epoch's size is
    known) and the chief's last training report (ctx.report / ctx.metrics_callback).
    Whole lines, so that they read the same in a terminal, a notebook and a log, between
    the nodes' own output lines."""

    def __init__(self, cluster, qname: str, epochs: int, interval: float):
        self.cluster, self.qname, self.epochs, self.interval = cluster, qname, epochs, interval
        self.epoch, self.rows_per_epoch = 1, None
        self._taken_before = self._taken() if interval > 0 else 0  # earlier train() calls'
        self._printed = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sparktf-progress", daemon=True)

    def __enter__(self):
        if self.interval > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()
            if exc[0] is None and self._printed:  # where it ended
                print(self.line(), file=sys.stderr, flush=True)

    def _taken(self) -> int:
        return sum(n for (q, _), n in self.cluster._taken().items() if q == self.qname)

    def line(self) -> str:
        status = self.cluster.status()
        taken = self._taken() - self._taken_before
        total = f" of {self.rows_per_epoch * self.epochs:,}" if self.rows_per_epoch else ""
        text = f"sparktf: epoch {self.epoch}/{self.epochs}: {taken:,}{total} rows taken"
        chief = next((n for n in status["nodes"] if n["is_chief"]), None)
        training = (chief or {}).get("training")
        if training:
            text += f"; {chief['job_name']}:{chief['task_index']} at step {training['step']:,}"
            if training.get("steps_per_sec"):
                text += f" ({training['steps_per_sec']:.1f} steps/s)"
            text += "".join(f", {k} {v:.4g}" for k, v in training["metrics"].items())
        return text

    def _run(self) -> None:
        while not self._done.wait(self.interval):
            try:
                print(self.line(), file=sys.stderr, flush=True)
                self._printed = True
            except Exception as e:  # noqa: BLE001 - progress must never fail training
                logger.debug("sparktf: progress line: %s", e)


class _FedEpoch(typing.NamedTuple):
    make_job: object  # meta -> the Spark job that feeds the epoch
    qname: str
    feed_timeout: float
    what: str
    sent: dict  # {(queue, feed index): rows sent to that node up to this epoch}


class _NodeFailed(errors.Aborted):
    """A feeding job failed because a node failed; `cause` is the node's failure."""

    def __init__(self, message: str, cause: str):
        super().__init__(message)
        self.cause = cause


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
        release_port=True, heartbeat_timeout=10.0, restarts=0, restart_backoff=1.0,
        progress_timeout=DEFAULT_PROGRESS_TIMEOUT, legacy_keras=None, node_output=True,
        node_log_dir=None, progress=DEFAULT_PROGRESS_INTERVAL, straggler_fraction=0.5,
        straggler_after=30.0, status=True, status_address=None, status_port=0):
    """Starts a TensorFlow cluster on `num_executors` Spark executors and runs
    ``map_fun(tf_args, ctx)`` on each (TFoS's TFCluster.run). Returns once every
    node has its role; raises a clear error within seconds when Spark cannot
    provide the task slots, and after `reservation_timeout` s when nodes do not
    register (naming the missing executors).

    With `restarts=K`, a failure of any node stops every node and starts the cluster
    again in the same application, up to K times, `restart_backoff` s after the failure:
    a new generation (``ctx.restart_count``) with new node tasks, ports, TF_CONFIG and
    feed rings. Training resumes from the user's own checkpoints (Keras
    ``BackupAndRestore``, a ``CheckpointManager``) on a path every node sees. In
    InputMode.SPARK, train() carries on: the new generation is fed again every epoch from
    the first one some node had not taken in full, each from its first partition
    (docs/reliability.md says what is and is not fed twice). After K restarts the next
    failure raises, listing every generation's failure.

    A node whose TF process's main thread does not move for `progress_timeout` s (a
    sleep or a deadlock in map_fun; a single TensorFlow step or compilation that long
    counts too) fails like a dead one, named in the error; None turns this off.

    `legacy_keras`: True makes ``tf.keras`` Keras 2 (tf_keras) on the nodes, which
    MultiWorkerMirroredStrategy needs (sparktf.compat's default); False keeps Keras 3, and a
    Keras 3 fit/evaluate/predict under a multi-worker strategy then raises at once, naming
    this switch; None (the default): True if the driver has TF_USE_LEGACY_KERAS=1, else
    False (sparktf.keras_version).

    What each node's TF process writes to stdout and stderr comes to the driver: each line
    is printed on the driver's stderr prefixed with the node (``[worker:1] ...``; off with
    `node_output=False`) and kept in a file per node under `node_log_dir` (default: a new
    ``sparktf-logs-*`` directory in the driver's temp dir, kept after the cluster; path in
    ``cluster.node_log_dir`` and in the errors naming a failed node). It also still goes
    to the executor's own log.

    While ``cluster.train`` feeds, a progress line goes to the driver's stderr every
    `progress` s (the epoch, rows taken out of the total once known, the chief's step,
    steps/s and metrics from ``ctx.report`` / ``ctx.metrics_callback()``); 0 or None
    turns it off.

    A training node whose step rate (from those reports) stays under
    `straggler_fraction` of the median rate of the training nodes for `straggler_after`
    s is a straggler: warned about on the driver's stderr with its host, and
    ``"straggler": true`` in its node of ``cluster.status()``; 0 turns this off.

    The driver serves the cluster's status over HTTP (`status=False` turns it off): a
    live page at ``cluster.status_url()`` (also printed on the driver's stderr), its JSON
    at ``api/status`` and ``api/history``, and ``sparktf status URL`` prints it as a
    table. Every request needs the status token that URL carries (a read-only token
    derived from the cluster's; the cluster's own works too), or it gets 401. It listens
    on `status_address`: by default loopback and the driver's host (as Spark's UI), or
    the IP address(es) given ("0.0.0.0": every interface), on `status_port` (0: a free
    port)."""
    try:  # the standalone package loads faster on the node than pyspark's copy
        import cloudpickle
    except ImportError:
        from pyspark import cloudpickle

    if input_mode not in (InputMode.TENSORFLOW, InputMode.SPARK):
        raise errors.InvalidArgument(f"unknown input_mode {input_mode!r}")
    if driver_ps_nodes and (input_mode != InputMode.TENSORFLOW or int(num_ps) < 1):
        raise errors.InvalidArgument("driver_ps_nodes=True runs the num_ps parameter servers "
                                     "on the driver: it needs num_ps >= 1 and "
                                     "InputMode.TENSORFLOW (as in TFoS)")
    if master_node not in (None, "chief", "master"):
        raise errors.InvalidArgument(f"master_node must be None, 'chief' or 'master', "
                                     f"got {master_node!r}")
    if int(restarts) < 0:
        raise errors.InvalidArgument(f"restarts must be >= 0, got {restarts}")
    if tensorboard and not log_dir:
        log_dir = tempfile.mkdtemp(prefix="sparktf-tensorboard-")
    num_executors = int(num_executors)
    _agent_binary()  # the driver's install is complete (each executor checks its own)
    on_executors = num_executors - (int(num_ps) if driver_ps_nodes else 0)
    if on_executors < 1:
        raise errors.InvalidArgument(f"num_executors={num_executors} counts every node (with "
                                     f"driver_ps_nodes, the {num_ps} ps too): no node is left "
                                     "for the executors")
    _check_dynamic_allocation(sc, on_executors)
    _wait_for_slots(sc, on_executors, min(float(reservation_timeout), DEFAULT_SLOT_WAIT),
                    float(reservation_timeout))

    token = secrets.token_hex(16)
    # Names what others can see (shm rings and abstract sockets, which every local user can
    # list; the Spark job group): random, and unrelated to the token.
    cluster_id = secrets.token_hex(8)
    feed_cluster_id = cluster_id if input_mode == InputMode.SPARK else ""
    node_log_dir = os.path.abspath(node_log_dir or tempfile.mkdtemp(prefix="sparktf-logs-"))
    status_args = _status_server_args(sc, token, status, status_address, status_port)

    def start_coordinator(status_args):
        return _native.Coordinator(num_executors, token, int(num_ps), master_node or "",
                                   bool(eval_node), _driver_bind_address(sc), 0,
                                   float(heartbeat_timeout), node_log_dir, bool(node_output),
                                   float(straggler_fraction or 0), float(straggler_after),
                                   **status_args)

    try:
        coordinator = start_coordinator(status_args)
    except (errors.Unavailable, errors.InvalidArgument) as e:
        if not status_args or status_address is not None or "status server" not in str(e):
            raise
        # The driver's host is not an address of this machine (behind NAT, say): the
        # status page on loopback only, rather than no cluster.
        logger.warning("sparktf: %s; the status page listens on 127.0.0.1 only", e)
        status_args["status_hosts"] = ["127.0.0.1"]
        coordinator = start_coordinator(status_args)
    default_fs = sc._jsc.hadoopConfiguration().get("fs.defaultFS") or "file://"
    if default_fs == "file:///":
        default_fs = "file://"
    meta = {
        "coordinator": f"{_driver_host(sc)}:{coordinator.port}",
        "token": token,
        "reservation_timeout": float(reservation_timeout),
        "progress_timeout": float(progress_timeout) if progress_timeout else None,
        "log_dir": log_dir if tensorboard else None,
        "payload": cloudpickle.dumps((map_fun, tf_args, {"release_port": bool(release_port),
                                                         "defaultFS": default_fs,
                                                         "queues": list(queues or ["input"])})),
        "feed_cluster_id": feed_cluster_id or None,
        "node_env": keras_version.node_env(legacy_keras),
        "node_logs": True,
    }
    cluster = TFCluster(sc, coordinator, meta, num_executors, cluster_id, input_mode, log_dir,
                        token, queues, feed_cluster_id, restarts, restart_backoff)
    cluster._coordinator_address = meta["coordinator"]
    cluster.node_log_dir = node_log_dir
    if status_args:
        hosts = status_args["status_hosts"]
        cluster._status_url = (f"http://{status_mod.url_host(hosts, _driver_host(sc))}:"
                               f"{coordinator.status_port}/?token={status_mod.read_only_token(token)}")
        sys.stderr.write(f"sparktf: the cluster's status: {cluster._status_url}\n")
        sys.stderr.flush()
    cluster.progress_interval = float(progress or 0)
    cluster._driver_nodes_count = int(num_ps) if driver_ps_nodes else 0
    cluster._start_generation()
    return cluster
