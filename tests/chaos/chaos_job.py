"""The chaos suite's Spark driver: `python chaos_job.py CONFIG.json`. It runs one mode's
scenarios, one after another, in one Spark application on the standalone cluster the
config names, injects each scenario's fault from outside the nodes, and writes one JSON
line per scenario to config["results"]:

    {"scenario", "mode", "outcome" ("completed" | "recovered" | "failed"), "error",
     "detect_s" (fault -> the driver knows), "recover_s" (fault -> every node of the next
     generation runs map_fun), "accuracy", "generations", "epochs" (generation, epoch)
     of the chief, "leftovers": {"processes", "ports", "shm", "temp"}}

Faults (the target is the worker node unless named): kill_worker, kill_chief, kill_ps
(SIGKILL of that node's TF process), kill_agent (its node agent), kill_executor (its
Spark executor's JVM), sigstop_worker, disk_full (the checkpoint directory, a small
tmpfs, is filled; freed once the failure is seen), cut_off (every packet from or to the
worker's host address is dropped for config["cut_seconds"]), and none."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(HERE), str(ROOT / "tests")]

from leftovers import leftovers, wait_leftovers  # noqa: E402
MODES = {
    # fun, nodes, num_ps, master_node
    "mwms": ("mwms", 2, 0, "chief"),
    "ps": ("parameter_server", 3, 1, "chief"),
    "spark": ("spark_fed", 2, 0, None),
}
TARGET = {"kill_worker": "worker:0", "kill_chief": "chief:0", "kill_ps": "ps:0",
          "kill_agent": "worker:0", "kill_executor": "worker:0", "sigstop_worker": "worker:0",
          "disk_full": "chief:0", "cut_off": "worker:0"}


def _jsonl(path):
    if not os.path.exists(path):
        return []
    out = []
    for line in open(path):
        try:
            out.append(json.loads(line))
        except ValueError:
            pass  # a line being written
    return out


class FailureLog(logging.Handler):
    """The time the driver logged that a generation failed."""

    def __init__(self):
        super().__init__()
        self.failed_at: list[float] = []

    def emit(self, record):
        if "failed; restarting the cluster" in record.getMessage():
            self.failed_at.append(time.time())


class Injector(threading.Thread):
    """Waits until `watched` (the role whose epochs the result records) has logged epoch
    `at_epoch` of generation 0, then hits the target. Another node's epoch would not do: it
    can log an epoch the watched one never logs (killed between the backup and its log)."""

    def __init__(self, scenario: str, work: Path, watched: str, at_epoch: int,
                 failures: FailureLog, cut_seconds: float, backup: Path):
        super().__init__(daemon=True)
        self.scenario, self.work, self.at_epoch = scenario, work, at_epoch
        self.watched = watched
        self.failures, self.cut_seconds, self.backup = failures, cut_seconds, backup
        self.injected_at = None
        self.error = None
        self.stop = threading.Event()

    def _find_target(self):
        role = TARGET[self.scenario]
        while not self.stop.is_set():
            for s in _jsonl(self.work / "starts.jsonl"):
                if s["generation"] == 0 and s["role"] == role:
                    return s
            time.sleep(0.1)
        return None

    def run(self):
        try:
            self._run()
        except Exception:  # noqa: BLE001 - reported with the scenario's result
            self.error = traceback.format_exc()

    def _run(self):
        while not self.stop.is_set():
            if any(e["generation"] == 0 and e["role"] == self.watched
                   and e["epoch"] >= self.at_epoch for e in _jsonl(self.work / "epochs.jsonl")):
                break
            time.sleep(0.05)
        target = self._find_target()
        if target is None:
            return
        s = self.scenario
        self.injected_at = time.time()
        if s.startswith("kill_") and s not in ("kill_agent", "kill_executor"):
            os.kill(target["pid"], signal.SIGKILL)
        elif s == "kill_agent":
            os.kill(target["agent"], signal.SIGKILL)
        elif s == "kill_executor":
            os.kill(target["jvm"], signal.SIGKILL)
        elif s == "sigstop_worker":
            os.kill(target["pid"], signal.SIGSTOP)
        elif s == "disk_full":
            fd = os.open(self.backup / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while os.write(fd, b"\0" * (1 << 16)):
                    pass
            except OSError:
                pass  # full
            finally:
                os.close(fd)
            self._wait_failure(120)
            os.unlink(self.backup / "filler")
        elif s == "cut_off":
            rules = [["-s", target["host"]], ["-d", target["host"]]]
            for r in rules:
                subprocess.run(["iptables", "-I", "OUTPUT", *r, "-j", "DROP"], check=True)
            try:
                self.stop.wait(self.cut_seconds)
            finally:
                for r in rules:
                    subprocess.run(["iptables", "-D", "OUTPUT", *r, "-j", "DROP"], check=True)

    def _wait_failure(self, timeout):
        deadline = time.monotonic() + timeout
        while not self.failures.failed_at and time.monotonic() < deadline:
            time.sleep(0.1)


def run_scenario(sc, mode: str, scenario: str, config: dict) -> dict:
    import chaos_funs

    from sparktf import TFCluster, errors

    fun, nodes, num_ps, master_node = MODES[mode]
    watched = "chief:0" if master_node else "worker:0"  # the role whose epochs are recorded
    work = Path(config["work"]) / f"{mode}-{scenario}"
    work.mkdir(parents=True)
    backup = work / "backup"
    backup.mkdir()
    if scenario == "disk_full":
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(backup)],
                       check=True)
    failures = FailureLog()
    logging.getLogger("sparktf").addHandler(failures)
    epochs = config.get("epochs", 6)
    args = {"work": str(work), "backup": str(backup / "ckpt"), "epochs": epochs,
            "steps": config.get("steps", 20), "epoch_pause": config.get("epoch_pause", 0.5)}
    before = leftovers()  # the machine's: only what this scenario adds counts
    injector = None
    if scenario != "none":
        injector = Injector(scenario, work, watched, config.get("fault_epoch", 2),
                            failures, config.get("cut_seconds", 15), backup)
        injector.start()
    outcome, error, raised_at = "completed", "", None
    cluster = None
    try:
        cluster = TFCluster.run(
            sc, getattr(chaos_funs, fun), args, nodes, num_ps=num_ps, master_node=master_node,
            reservation_timeout=120, restarts=1,
            restart_backoff=0.5, progress_timeout=60,
            tensorboard=bool(config.get("tensorboard")),
            log_dir=str(work / "logs") if config.get("tensorboard") else None,
            input_mode=TFCluster.InputMode.SPARK if mode == "spark" else
            TFCluster.InputMode.TENSORFLOW)
        if mode == "spark":
            from chaos_funs import _digits

            (x, y), _ = _digits()
            rdd = sc.parallelize(list(zip(x, y.tolist())), 4)
            cluster.train(rdd, num_epochs=epochs)
        cluster.shutdown(timeout=600)
        if cluster.generation > 0:
            outcome = "recovered"
    except errors.SparktfError as e:
        raised_at = time.time()
        outcome, error = "failed", str(e)
    finally:
        if injector is not None:
            injector.stop.set()
            injector.join(60)
        logging.getLogger("sparktf").removeHandler(failures)
        if scenario == "disk_full":
            subprocess.run(["umount", "-l", str(backup)], check=False)
    starts = _jsonl(work / "starts.jsonl")
    ports = set()
    for s in starts:
        ports.add((s["host"], int(s.get("port", 0))))
    t0 = injector.injected_at if injector else None
    detected = failures.failed_at[0] if failures.failed_at else raised_at
    later = [s["time"] for s in starts if s["generation"] == 1]
    result_files = sorted(work.glob("result-*.json"))
    accuracy = json.load(open(result_files[-1]))["accuracy"] if result_files else None
    return {
        "scenario": scenario, "mode": mode, "outcome": outcome, "error": error[:4000],
        "first_failure": (cluster._failures[0] if cluster and cluster._failures else error)[:4000],
        "injected": t0 is not None,
        "detect_s": round(detected - t0, 2) if t0 and detected else None,
        "recover_s": round(max(later) - t0, 2) if t0 and len(later) == nodes else None,
        "accuracy": accuracy,
        "generations": 1 + (cluster.generation if cluster else 0),
        "epochs": [(e["generation"], e["epoch"]) for e in _jsonl(work / "epochs.jsonl")
                   if e["role"] == watched],
        "injector_error": injector.error if injector else None,
        "leftovers": wait_leftovers({p for p in ports if p[1]}, ignore=before),
    }


def main():
    config = json.load(open(sys.argv[1]))
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    nodes = MODES[config["mode"]][1]
    if config["mode"] == "spark":
        os.environ["SPARKTF_FEED_TRANSPORT"] = "tcp"  # the hosts share one kernel: TCP
    spark = (SparkSession.builder.master(config["master"]).appName(f"chaos-{config['mode']}")
             .config("spark.cores.max", str(nodes)).config("spark.executor.cores", "1")
             .config("spark.executor.memory", "1g").config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.task.maxFailures", "1")
             .config("spark.executorEnv.PYTHONPATH", os.pathsep.join(sys.path))
             .getOrCreate())
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    with open(config["results"], "a") as out:
        for scenario in config["scenarios"]:
            result = run_scenario(sc, config["mode"], scenario, config)
            out.write(json.dumps(result) + "\n")
            out.flush()
            print(json.dumps({k: result[k] for k in ("scenario", "mode", "outcome", "detect_s",
                                                     "recover_s", "accuracy")}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
