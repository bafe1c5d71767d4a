"""The chaos suite's scenarios, run against a StandaloneCluster (two simulated hosts),
and the table of docs/reliability.md. Used by test_chaos.py (the CI-sized set) and by
run.py (every scenario, several rounds)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import chaos_job
from leftovers import leftovers, wait_leftovers

HERE = Path(__file__).resolve().parent

# Per mode, the scenarios of the CI-sized suite and of the long one ("none" is the
# undisturbed run the others are compared with).
CI = {
    "mwms": ["none", "kill_worker", "kill_chief", "kill_agent", "kill_executor",
             "sigstop_worker", "disk_full", "cut_off"],
    "ps": ["none", "kill_ps"],
    "spark": ["none", "kill_worker", "kill_agent"],
}
LONG = {
    "mwms": CI["mwms"],
    "ps": ["none", "kill_ps", "kill_worker", "kill_chief", "kill_agent", "kill_executor",
           "sigstop_worker", "cut_off"],
    "spark": ["none", "kill_worker", "kill_agent", "kill_executor", "sigstop_worker"],
}
SETTINGS = {"mwms": {}, "ps": {}, "spark": {"epochs": 8}}


def run_mode(master: str, mode: str, scenarios: list, work: Path, timeout: float = 1500):
    """Runs `scenarios` of `mode` in one driver process; returns their results."""
    work.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / mode, ignore_errors=True)
    results = work / f"{mode}.jsonl"
    results.unlink(missing_ok=True)
    config = dict(SETTINGS[mode], master=master, mode=mode, scenarios=scenarios,
                  work=str(work / mode), results=str(results))
    (work / f"{mode}.json").write_text(json.dumps(config))
    with open(work / f"{mode}.log", "w") as log:
        p = subprocess.run([sys.executable, str(HERE / "chaos_job.py"), str(work / f"{mode}.json")],
                           stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
    out = [json.loads(line) for line in open(results)] if results.exists() else []
    if p.returncode != 0 or len(out) != len(scenarios):
        raise AssertionError(f"the {mode} driver exited with {p.returncode} after "
                             f"{len(out)}/{len(scenarios)} scenarios; its log:\n" +
                             (work / f"{mode}.log").read_text()[-6000:])
    return out


def run_driver_kill(master: str, work: Path, timeout: float = 300) -> dict:
    """InputMode.SPARK with TensorBoard on the chief: the driver is SIGKILLed mid-training;
    returns how long until every node process, TensorBoard, shm segment, temp dir and
    node port on both hosts is gone."""
    work.mkdir(parents=True, exist_ok=True)
    node_work = work / "driver_kill"
    shutil.rmtree(node_work, ignore_errors=True)
    config = dict(master=master, mode="spark", scenarios=["none"], work=str(node_work),
                  results=str(work / "driver_kill.jsonl"), epochs=40, epoch_pause=0.5,
                  tensorboard=True)
    (work / "driver_kill.json").write_text(json.dumps(config))
    baseline = leftovers()  # the machine's before this run: not this run's to remove
    log = open(work / "driver_kill.log", "w")
    driver = subprocess.Popen([sys.executable, str(HERE / "chaos_job.py"),
                               str(work / "driver_kill.json")], stdout=log,
                              stderr=subprocess.STDOUT)
    epochs = node_work / "spark-none" / "epochs.jsonl"
    deadline = time.monotonic() + timeout
    try:
        while len(chaos_job._jsonl(epochs)) < 4:
            if driver.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("the driver ended or never trained; its log:\n" +
                                     (work / "driver_kill.log").read_text()[-6000:])
            time.sleep(0.1)
        starts = chaos_job._jsonl(node_work / "spark-none" / "starts.jsonl")
        ports = {(s["host"], s["port"]) for s in starts}
        before = leftovers(ports, ignore=baseline)  # this cluster's, while it runs
        killed = time.time()
        driver.send_signal(signal.SIGKILL)
        driver.wait(30)
        left = wait_leftovers(ports, timeout=30, ignore=baseline)
        gone_s = time.time() - killed
    finally:
        if driver.poll() is None:
            driver.kill()
    return {"scenario": "kill_driver", "mode": "spark", "outcome": "cleaned up",
            "processes_before": len(before["processes"]), "shm_before": len(before["shm"]),
            "hosts": sorted({s["host"] for s in starts}), "gone_s": round(gone_s, 2),
            "leftovers": left}


def leftover_count(r: dict) -> int:
    return sum(len(v) for v in r["leftovers"].values())


def write_report(results: list, path: Path, command: str) -> None:
    """The reliability table (medians over rounds) into `path`, between the markers of
    docs/reliability.md when it has them."""
    by = {}
    for r in results:
        by.setdefault((r["mode"], r["scenario"]), []).append(r)
    baseline = {m: [r["accuracy"] for r in rs if r.get("accuracy") is not None]
                for (m, s), rs in by.items() if s == "none"}

    def med(values):
        values = [v for v in values if v is not None]
        return f"{statistics.median(values):.2f}" if values else "-"

    rows = ["| mode | fault | rounds | outcome | detect (s) | recover (s) | accuracy "
            "(undisturbed) | leftovers |", "|---|---|---|---|---|---|---|---|"]
    for (mode, scenario), rs in by.items():
        outcomes = sorted({r["outcome"] for r in rs})
        if scenario == "kill_driver":
            rows.append(f"| {mode} | kill -9 of the driver | {len(rs)} | every node process, "
                        f"TensorBoard, shm segment and temp dir gone after "
                        f"{med([r['gone_s'] for r in rs])} s | - | - | - | "
                        f"{sum(leftover_count(r) for r in rs)} |")
            continue
        base = baseline.get(mode) or [None]
        rows.append(
            f"| {mode} | {scenario} | {len(rs)} | {', '.join(outcomes)} | "
            f"{med([r['detect_s'] for r in rs])} | {med([r['recover_s'] for r in rs])} | "
            f"{med([r['accuracy'] for r in rs])} ({med(base)}) | "
            f"{sum(leftover_count(r) for r in rs)} |")
    table = "\n".join(rows) + f"\n\nProduced by `{command}` on {time.strftime('%Y-%m-%d')}.\n"
    begin, end = "<!-- chaos table: begin -->", "<!-- chaos table: end -->"
    text = path.read_text() if path.exists() else ""
    if begin in text and end in text:
        text = text[:text.index(begin) + len(begin)] + "\n" + table + text[text.index(end):]
    else:
        text = f"{begin}\n{table}{end}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def ensure_root() -> None:
    if os.geteuid() != 0:
        raise AssertionError("the chaos suite needs root (iptables, a tmpfs mount); CI runs "
                             "as root")
