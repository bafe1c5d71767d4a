"""The control plane at a scale this machine cannot host: the C++ coordinator with N
simulated nodes (in-process fakes in a forked child, speaking the real protocol over
loopback TCP), built in release mode (cpp/src/sparktf/cluster/coordinator_benchmark.cc).

    .venv/bin/python bench/control_plane_bench.py [--nodes 1000] [--repeats 5]

Each repeat is a fresh coordinator and child. Prints every run's JSON and the medians next
to the targets of the design (form the cluster in under 2 s; coordinator CPU at steady
state, with a heartbeat and a FEED_SYNC from every node each second, under 5% of one core;
one node's death broadcast to all others in under 1 s)."""

import argparse
import json
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "bench"

TARGETS = {"formation_s": ("form the cluster", "s", 2.0),
           "coordinator_cpu_fraction": ("coordinator CPU at steady state", "core", 0.05),
           "death_broadcast_s": ("one death told to all", "s", 1.0)}


def build() -> Path:
    # Release flags without -Werror: GCC 12 warns falsely (-Wrestrict) inside libstdc++'s
    # std::string at -O3.
    subprocess.run(["cmake", "-S", str(ROOT), "-B", str(BUILD), "-G", "Ninja",
                    "-DCMAKE_BUILD_TYPE=Release", "-DSPARKTF_BUILD_TESTS=ON"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(BUILD), "--target", "coordinator_benchmark"],
                   check=True, stdout=subprocess.DEVNULL)
    return BUILD / "cpp" / "coordinator_benchmark"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steady-seconds", type=int, default=10)
    a = p.parse_args()
    exe = build()
    runs = []
    for _ in range(a.repeats):
        out = subprocess.run([str(exe), "--nodes", str(a.nodes), "--steady-seconds",
                              str(a.steady_seconds)], check=True, capture_output=True,
                             text=True).stdout
        runs.append(json.loads(out))
        print(out.strip(), flush=True)
    print(f"\n{a.nodes} simulated nodes, medians of {a.repeats}:")
    for key, (what, unit, target) in TARGETS.items():
        median = statistics.median(r[key] for r in runs)
        shown = f"{median * 100:.1f}% of a" if unit == "core" else f"{median:.3f}"
        limit = f"{target * 100:.0f}% of a" if unit == "core" else f"{target}"
        verdict = "met" if median < target else "MISSED"
        print(f"  {what}: {shown} {unit} (target: under {limit} {unit}; {verdict})")


if __name__ == "__main__":
    main()
