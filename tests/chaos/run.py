"""The chaos suite's long form: every scenario of scenarios.LONG in every mode, `--rounds`
times, plus the driver's death; writes the medians into the table of docs/reliability.md
(or --out) and every result to --raw. Needs root (iptables, tmpfs) and a bootstrapped
checkout:

    sudo .venv/bin/python tests/chaos/run.py --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(HERE), str(ROOT / "tests")]

import scenarios  # noqa: E402
from standalone import StandaloneCluster  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default="mwms,ps,spark")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "reliability.md")
    ap.add_argument("--raw", type=Path, default=ROOT / "bench" / "raw" / "chaos.jsonl")
    args = ap.parse_args()
    scenarios.ensure_root()
    work = ROOT / "build" / "chaos-long"
    tmp = work / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    os.environ["TMPDIR"] = str(tmp)  # the leftovers looked for are this run's
    tempfile.tempdir = None
    cluster = StandaloneCluster(work / "standalone").start()
    results = []
    try:
        for rnd in range(args.rounds):
            for mode in args.modes.split(","):
                results += scenarios.run_mode(cluster.master_url, mode, scenarios.LONG[mode],
                                              work / f"round-{rnd}")
                print(f"round {rnd} {mode}: done", flush=True)
            results.append(scenarios.run_driver_kill(cluster.master_url,
                                                     work / f"round-{rnd}"))
    finally:
        cluster.stop()
    args.raw.parent.mkdir(parents=True, exist_ok=True)
    # Paths of this checkout (in tracebacks) become <checkout>: the raw file is committed.
    args.raw.write_text("".join(json.dumps(r).replace(str(ROOT), "<checkout>") + "\n"
                                for r in results))
    scenarios.write_report(results, args.out,
                           f"sudo .venv/bin/python tests/chaos/run.py --rounds {args.rounds}")
    print(args.out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
