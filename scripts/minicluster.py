#!/usr/bin/env python3
"""Hadoop's own minicluster on loopback, for tests and benchmarks: a real NameNode and
DataNodes from `org.apache.hadoop:hadoop-client-minicluster` (Maven Central), and with
--nodemanagers a YARN ResourceManager and NodeManagers, run on the system Java by
scripts/hadoop/MiniCluster.java. Jars are fetched once into build/hadoop/lib
inside the clone (Maven's repository under build/m2).

  python scripts/minicluster.py fetch
  python scripts/minicluster.py start --conf-dir build/hdfs/conf [--datanodes 2]
                                     [--nodemanagers 2]
  export HADOOP_CONF_DIR=build/hdfs/conf          # core-site.xml, hdfs-site.xml, yarn-site.xml
  python scripts/minicluster.py ctl --conf-dir build/hdfs/conf stop-datanode 1
  python scripts/minicluster.py hdfs --conf-dir build/hdfs/conf -- -ls /
  python scripts/minicluster.py stop --conf-dir build/hdfs/conf

`start` returns once HDFS answers; `stop` shuts it down and waits until nothing of it is
left running or listening. From Python, `HdfsMiniCluster` does the same and also stops the
JVM when the Python process that started it dies.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "build" / "hadoop" / "lib"
SOURCE = ROOT / "scripts" / "hadoop" / "MiniCluster.java"
POM = ROOT / "scripts" / "hadoop" / "pom.xml"
START_TIMEOUT = 120.0
STOP_TIMEOUT = 30.0


def fetch_jars() -> Path:
    """The directory of the minicluster's jars, fetched with Maven if missing."""
    stamp = LIB / ".complete"
    want = hashlib.sha256(POM.read_bytes()).hexdigest() + "\n"
    if stamp.exists() and stamp.read_text() == want:
        return LIB
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("Maven (mvn) is needed to fetch Hadoop's minicluster jars; "
                           "scripts/bootstrap.sh installs it")
    LIB.mkdir(parents=True, exist_ok=True)
    subprocess.run([mvn, "-q", "-B", "-f", str(POM),
                    f"-Dmaven.repo.local={ROOT / 'build' / 'm2'}",
                    "dependency:copy-dependencies", f"-DoutputDirectory={LIB}"], check=True)
    stamp.write_text(want)
    return LIB


def classpath(conf_dir: Path | None = None) -> str:
    jars = sorted(str(p) for p in fetch_jars().glob("*.jar"))
    return os.pathsep.join(([str(conf_dir)] if conf_dir else []) + jars)


def java_home() -> str:
    return os.environ.get("JAVA_HOME") or str(Path(os.path.realpath(java())).parent.parent)


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    exe = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not exe:
        raise RuntimeError("no java found (Java 17 is needed)")
    return exe


class HdfsMiniCluster:
    """A NameNode and `datanodes` DataNodes in one JVM, and with `nodemanagers` > 0 a
    YARN ResourceManager and that many NodeManagers (each offering
    `nodemanager_memory_mb`, physical-memory checks on, and `gpus_per_nodemanager` of
    the resource yarn.io/gpu when > 0: countable, with no devices behind them) with HDFS
    as the default FS.
    Client configuration goes to `conf_dir` (point HADOOP_CONF_DIR at it). The JVM ends
    when stop() is called, or when this Python process dies (its standard input
    closes)."""

    def __init__(self, conf_dir, datanodes: int = 2, data_dir=None,
                 block_size: int = 8 << 20, log=None, nodemanagers: int = 0,
                 nodemanager_memory_mb: int = 6144, gpus_per_nodemanager: int = 0):
        self.conf_dir = Path(conf_dir).resolve()
        self.data_dir = Path(data_dir).resolve() if data_dir else self.conf_dir.parent / "data"
        self.datanodes = datanodes
        self.block_size = block_size
        self.nodemanagers = nodemanagers
        self.nodemanager_memory_mb = nodemanager_memory_mb
        self.gpus_per_nodemanager = gpus_per_nodemanager
        self.log_path = Path(log) if log else self.conf_dir.parent / "minicluster.log"
        self.proc: subprocess.Popen | None = None
        self.info: dict = {}

    @property
    def namenode(self) -> str:
        return self.info["namenode"]

    @property
    def url(self) -> str:
        return f"hdfs://{self.namenode}"

    @property
    def resourcemanager(self) -> str:
        return self.info["resourcemanager"]

    def start(self, detach: bool = False) -> "HdfsMiniCluster":
        shutil.rmtree(self.conf_dir, ignore_errors=True)
        shutil.rmtree(self.data_dir, ignore_errors=True)
        self.conf_dir.mkdir(parents=True)
        self.data_dir.mkdir(parents=True)
        heap = "-Xmx768m" if not self.nodemanagers else "-Xmx1536m"
        log4j = SOURCE.parent / "log4j.properties"
        cmd = [java(), heap, "-XX:+UseSerialGC", f"-Dlog4j.configuration=file:{log4j}",
               "-cp", classpath(), str(SOURCE),
               "--conf-dir", str(self.conf_dir), "--data-dir", str(self.data_dir),
               "--datanodes", str(self.datanodes), "--block-size", str(self.block_size),
               "--nodemanagers", str(self.nodemanagers),
               "--nodemanager-memory-mb", str(self.nodemanager_memory_mb),
               "--gpus-per-nodemanager", str(self.gpus_per_nodemanager)]
        # Containers run $JAVA_HOME/bin/java and see the NodeManagers' HADOOP_CONF_DIR (as
        # on a real cluster: this cluster's client files). MiniYARNCluster keeps its
        # directories under target/ of the working directory.
        env = dict(os.environ, JAVA_HOME=java_home(), HADOOP_CONF_DIR=str(self.conf_dir))
        log = open(self.log_path, "wb")
        if detach:  # outlives this process: stopped only by `stop`
            self.proc = subprocess.Popen(cmd + ["--watch-stdin", "false"],
                                         stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         cwd=self.data_dir, env=env)
        else:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=log,
                                         stderr=subprocess.STDOUT, cwd=self.data_dir, env=env)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        info_file = self.conf_dir / "cluster.json"
        while not info_file.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"the HDFS minicluster exited with {self.proc.returncode} "
                                   f"before it was up; see {self.log_path}:\n"
                                   + _tail(self.log_path))
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"the HDFS minicluster was not up within {START_TIMEOUT:.0f} s;"
                                   f" see {self.log_path}")
            time.sleep(0.2)
        self.info = json.loads(info_file.read_text())
        return self

    @classmethod
    def attach(cls, conf_dir) -> "HdfsMiniCluster":
        """A handle on a cluster that `start --detach` left running."""
        c = cls(conf_dir)
        c.info = json.loads((c.conf_dir / "cluster.json").read_text())
        return c

    def command(self, line: str, timeout: float = 60.0) -> str:
        """Sends one control command ("stop-datanode 1", ...); returns its reply."""
        with socket.create_connection(("127.0.0.1", self.info["control_port"]),
                                      timeout=timeout) as s:
            s.sendall(line.encode() + b"\n")
            reply = s.makefile().readline().strip()
        if not reply.startswith("ok"):
            raise RuntimeError(f"minicluster: {line}: {reply or 'no answer'}")
        return reply

    def stop(self) -> None:
        pid = self.info.get("pid") or (self.proc.pid if self.proc else None)
        if pid is None:
            return
        try:
            self.command("shutdown", timeout=STOP_TIMEOUT)
        except (OSError, RuntimeError, KeyError):
            pass
        deadline = time.monotonic() + STOP_TIMEOUT
        while _alive(pid) and time.monotonic() < deadline:
            if self.proc is not None:
                try:
                    self.proc.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    pass
            else:
                time.sleep(0.2)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
            if self.proc is not None:
                self.proc.wait(timeout=10)
        if self.proc is not None and self.proc.stdin:
            self.proc.stdin.close()
        self.info = {}

    def hdfs(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        """Runs Hadoop's own shell (`hdfs dfs ARGS`) with the minicluster's jars."""
        return subprocess.run([java(), "-Xmx512m", "-cp", classpath(self.conf_dir),
                               "org.apache.hadoop.fs.FsShell", *args], **kwargs)

    def __enter__(self) -> "HdfsMiniCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child is as good as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("fetch", help="fetch the jars into build/hadoop/lib")
    for name in ("start", "stop", "ctl", "hdfs"):
        s = sub.add_parser(name)
        s.add_argument("--conf-dir", required=True)
        if name == "start":
            s.add_argument("--datanodes", type=int, default=2)
            s.add_argument("--block-size", type=int, default=8 << 20)
            s.add_argument("--nodemanagers", type=int, default=0,
                           help="also start YARN with this many NodeManagers")
            s.add_argument("--gpus-per-nodemanager", type=int, default=0,
                           help="declare yarn.io/gpu, this many per NodeManager (no devices)")
        if name in ("ctl", "hdfs"):
            s.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if a.cmd == "fetch":
        print(fetch_jars())
        return 0
    if a.cmd == "start":
        c = HdfsMiniCluster(a.conf_dir, a.datanodes, block_size=a.block_size,
                            nodemanagers=a.nodemanagers,
                            gpus_per_nodemanager=a.gpus_per_nodemanager).start(detach=True)
        yarn = (f"; YARN up: ResourceManager {c.resourcemanager}, {a.nodemanagers} "
                f"NodeManagers" if a.nodemanagers else "")
        print(f"HDFS up: {c.url}{yarn} (HADOOP_CONF_DIR={c.conf_dir}); log: {c.log_path}")
        return 0
    c = HdfsMiniCluster.attach(a.conf_dir)
    if a.cmd == "stop":
        c.stop()
        print("HDFS stopped")
        return 0
    args = [x for x in a.args if x != "--"]
    if a.cmd == "ctl":
        print(c.command(" ".join(args)))
        return 0
    return c.hdfs(*args).returncode


if __name__ == "__main__":
    sys.exit(main())
