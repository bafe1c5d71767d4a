"""What other work on the same 2 cores costs TensorFlow's training steps, with no feed at
all: the in-memory side of bench/keras_feed_bench.py (the same MLP, batches of 256, rows
from from_tensor_slices, `--epochs` epochs in one fit) run alone and next to a load that
uses a fixed share of one core, at three scheduling classes.

The load is one Python process spinning `--duty` of every 20 ms and sleeping the rest
(0.45 by default: about what the feeding executors' JVMs use while sparktf feeds this
model, bench/RESULTS.md). Its classes: nice 0 (as Spark's executors run), nice 19,
SCHED_BATCH (its fair share, but it does not preempt a running thread when it wakes: what
the JVM feeder's threads run at, docs/architecture.md), and SCHED_IDLE (it runs only on a
core no other thread wants, and a waking thread preempts it at once). Each arm runs in a fresh process, rounds interleaved; steps/s as the Keras bench
times it (from step 20 to the last).

Usage: .venv/bin/python bench/contention_bench.py [--rounds 3] [--epochs 10] [--duty 0.45]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ARMS = ["alone", "nice 0", "nice 19", "SCHED_BATCH", "SCHED_IDLE"]


def spin(duty: float) -> None:
    """The load's loop: busy for `duty` of each 20 ms, asleep for the rest, until killed."""
    while True:
        t = time.perf_counter()
        while time.perf_counter() - t < 0.02 * duty:
            pass
        time.sleep(0.02 * (1 - duty))


def start_load(arm: str, duty: float):
    """The load process for `arm` (None when alone), already at its scheduling class."""
    if arm == "alone":
        return None

    def schedule():
        if arm.startswith("SCHED_"):
            os.sched_setscheduler(0, getattr(os, arm), os.sched_param(0))
        else:
            os.nice(int(arm.split()[1]))

    return subprocess.Popen([sys.executable, __file__, "--spin", str(duty)],
                            preexec_fn=schedule)


def steps_per_s(epochs: int) -> float:
    """One in-memory fit of keras_feed_bench.py's model, in a fresh process."""
    import json

    p = subprocess.run([sys.executable, os.path.join(HERE, "keras_feed_bench.py"),
                        "--side", "memory", "--epochs", str(epochs)], capture_output=True,
                       text=True, timeout=1800, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])["steps_per_s"]
    raise RuntimeError(f"the in-memory fit failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--duty", type=float, default=0.45,
                    help="the share of one core the load keeps busy")
    ap.add_argument("--spin", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.spin is not None:
        spin(args.spin)
        return
    got = {arm: [] for arm in ARMS}
    for r in range(args.rounds):
        for arm in ARMS:
            load = start_load(arm, args.duty)
            try:
                got[arm].append(steps_per_s(args.epochs))
            finally:
                if load is not None:
                    load.kill()
                    load.wait()
        print(f"round {r + 1}: " + ", ".join(f"{a} {v[-1]:.1f}" for a, v in got.items()),
              flush=True)
    alone = statistics.median(got["alone"])
    print(f"\nin-memory Keras fit, {args.epochs} epochs of 120,000 rows, steps/s, medians of "
          f"{args.rounds} runs; the load spins {args.duty:.0%} of one core\n"
          "| load | steps/s (median) | min | max | / alone (median) | / alone, per run |\n"
          "|---|---|---|---|---|---|")
    for arm, v in got.items():
        per_run = [x / a for x, a in zip(v, got["alone"])]
        print(f"| {arm} | {statistics.median(v):.1f} | {min(v):.1f} | {max(v):.1f} | "
              f"{statistics.median(v) / alone:.2f} | "
              + ", ".join(f"{x:.2f}" for x in per_run) + " |")


if __name__ == "__main__":
    main()
