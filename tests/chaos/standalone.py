"""A Spark standalone cluster on simulated hosts: a master on 127.0.0.1 and one worker
per loopback address (127.0.0.2, 127.0.0.3, ...), each worker and its executors bound to
its own address (SPARK_LOCAL_IP), so that each executor's node has its own host."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _spark_class() -> str:
    import pyspark

    return os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")


class StandaloneCluster:
    def __init__(self, work: Path, hosts=("127.0.0.2", "127.0.0.3"), cores: int = 2,
                 memory: str = "6g"):
        self.work = Path(work)
        self.hosts = list(hosts)
        self.cores = cores
        self.memory = memory
        self.procs: dict[str, subprocess.Popen] = {}
        self.port = 0
        self.master_url = ""

    def _start(self, name: str, args: list, local_ip: str) -> None:
        log = open(self.work / f"{name}.log", "w")
        env = dict(os.environ, SPARK_LOCAL_IP=local_ip, SPARK_LOG_DIR=str(self.work),
                   SPARK_WORKER_DIR=str(self.work / f"{name}-dir"),
                   SPARK_NO_DAEMONIZE="1")
        self.procs[name] = subprocess.Popen([_spark_class(), *args], stdout=log, stderr=log,
                                            env=env, start_new_session=True)

    def _wait_log(self, name: str, text: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        path = self.work / f"{name}.log"
        while time.monotonic() < deadline:
            if text in path.read_text(errors="replace"):
                return
            if self.procs[name].poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError(f"{name} did not log {text!r}:\n{path.read_text()[-3000:]}")

    def start(self) -> "StandaloneCluster":
        self.work.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self._start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(self.port), "--webui-port", str(_free_port())],
                    "127.0.0.1")
        self._wait_log("master", "I have been elected leader")
        for i, host in enumerate(self.hosts):
            self._start(f"worker-{i}", [
                "org.apache.spark.deploy.worker.Worker", "--host", host, "--port",
                str(_free_port(host)), "--webui-port", str(_free_port(host)), "--cores",
                str(self.cores), "--memory", self.memory, self.master_url], host)
        for i in range(len(self.hosts)):
            self._wait_log(f"worker-{i}", "Successfully registered with master")
        return self

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
        self.procs.clear()


def driver_session(master: str, app: str, executors: int = 2, executor_memory: str = "1g"):
    """A SparkSession of a driver on 127.0.0.1 with `executors` one-core executors on the
    standalone cluster at `master` (their PYTHONPATH this process's sys.path, the JVM
    feeder's jar on their classpath), returned
    once they have all registered or 120 s have passed, so that data cached next lands on
    every simulated host."""
    import sys

    from pyspark.sql import SparkSession

    from sparktf import jvm

    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (SparkSession.builder.master(master).appName(app)
             .config("spark.cores.max", str(executors)).config("spark.executor.cores", "1")
             .config("spark.executor.memory", executor_memory)
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.executorEnv.PYTHONPATH", os.pathsep.join(sys.path))
             .config("spark.jars", jvm.jar_path())
             .getOrCreate())
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    deadline = time.monotonic() + 120
    # getExecutorMemoryStatus counts the driver too
    while sc._jsc.sc().getExecutorMemoryStatus().size() < executors + 1 and \
            time.monotonic() < deadline:
        time.sleep(0.2)
    return spark
