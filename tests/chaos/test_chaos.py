"""The chaos suite, CI-sized: faults injected into running clusters on two simulated
hosts (Spark standalone workers on 127.0.0.2 and 127.0.0.3), each scenario compared with
an undisturbed run of its mode. The long form (every fault in every mode, several rounds,
the table of docs/reliability.md) is `python tests/chaos/run.py`. Writes this run's table
to build/chaos/reliability.md."""

import re
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scenarios  # noqa: E402
from standalone import StandaloneCluster  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1500)]
ROOT = HERE.parent.parent
WORK = ROOT / "build" / "chaos"
RESULTS: list = []


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    scenarios.ensure_root()
    cluster = StandaloneCluster(tmp_path_factory.mktemp("standalone")).start()
    yield cluster
    cluster.stop()
    if RESULTS:
        scenarios.write_report(RESULTS, WORK / "reliability.md",
                               "pytest tests/chaos (CI-sized, one round)")


def by_scenario(results):
    return {r["scenario"]: r for r in results}


def assert_no_leftovers(r):
    assert scenarios.leftover_count(r) == 0, (r["scenario"], r["leftovers"])


def assert_resumed(r, epochs):
    """Generation 0 trained from epoch 1; generation 1 went on from its last checkpoint
    (not from scratch) to the last epoch."""
    gen0 = [e for g, e in r["epochs"] if g == 0]
    gen1 = [e for g, e in r["epochs"] if g == 1]
    assert gen0 == list(range(1, len(gen0) + 1)) and len(gen0) >= 2, r["epochs"]
    assert gen1 == list(range(gen1[0], epochs + 1)), r["epochs"]
    assert 2 <= gen1[0] <= gen0[-1] + 2, r["epochs"]


def check_recovered(r, baseline, epochs, detect_within, recover_within, resumes=True):
    """Recovered within the bounds, with the undisturbed accuracy and nothing left; with
    `resumes`, from the checkpoint. Without (SPARK mode's map_fun keeps none) the new
    generation trains from scratch on the rows the old one had not taken, a shorter run
    whose accuracy on these 297 held-out digits swings by a few points from step to step
    (0.85-0.92 from 60 steps on, in a single-process run of the same model): it is held to
    0.1 below the undisturbed run instead of 0.05."""
    name = r["scenario"]
    assert r["injected"] and r["injector_error"] is None, (name, r["injector_error"])
    assert r["outcome"] == "recovered", (name, r["outcome"], r["error"][:3000])
    assert r["generations"] == 2, name
    if resumes:
        assert_resumed(r, epochs)
    assert r["detect_s"] is not None and r["detect_s"] < detect_within, (name, r["detect_s"])
    assert r["recover_s"] is not None and r["recover_s"] < recover_within, (name, r["recover_s"])
    slack = 0.05 if resumes else 0.1
    assert r["accuracy"] >= baseline - slack, (name, r["accuracy"], baseline)
    assert_no_leftovers(r)


def test_multi_worker_mirrored_recovers_from_every_fault(hosts):
    results = scenarios.run_mode(hosts.master_url, "mwms", scenarios.CI["mwms"], WORK)
    RESULTS.extend(results)
    r = by_scenario(results)
    base = r["none"]
    assert base["outcome"] == "completed" and base["accuracy"] > 0.85, base
    assert [tuple(e) for e in base["epochs"]] == [(0, e) for e in range(1, 7)], base["epochs"]
    assert_no_leftovers(base)
    # A killed or stopped process is seen at once (its agent reports it); a killed agent
    # when its connection closes; a cut-off host when its heartbeats stop (10 s).
    for name in ("kill_worker", "kill_chief", "sigstop_worker", "kill_agent",
                 "kill_executor", "disk_full"):
        check_recovered(r[name], base["accuracy"], 6, detect_within=5, recover_within=30)
    check_recovered(r["cut_off"], base["accuracy"], 6, detect_within=15, recover_within=40)
    assert "No space left on device" in r["disk_full"]["first_failure"], \
        r["disk_full"]["first_failure"][:3000]
    # Every MultiWorkerMirrored worker writes the backup (the others into temp dirs there):
    # whichever hit the full disk first is named.
    assert re.match(r"generation 0: (chief|worker):0 \(executor", r["disk_full"]["first_failure"])
    assert "stopped by signal 19" in r["sigstop_worker"]["first_failure"]
    assert "heartbeat" in r["cut_off"]["first_failure"] or \
        "lost" in r["cut_off"]["first_failure"], r["cut_off"]["first_failure"][:2000]


def test_parameter_server_recovers_from_a_killed_ps(hosts):
    results = scenarios.run_mode(hosts.master_url, "ps", scenarios.CI["ps"], WORK)
    RESULTS.extend(results)
    r = by_scenario(results)
    base = r["none"]
    assert base["outcome"] == "completed" and base["accuracy"] > 0.8, base
    assert_no_leftovers(base)
    check_recovered(r["kill_ps"], base["accuracy"], 6, detect_within=5, recover_within=30)
    assert r["kill_ps"]["first_failure"].startswith("generation 0: ps:0 ")


def test_spark_mode_recovers_from_a_killed_worker_or_agent_feeding_again(hosts):
    """InputMode.SPARK over TCP between the hosts: train() carries on through the restart,
    feeding the new generation again what the old one had not taken (it trains from
    scratch: this map_fun keeps no checkpoint). A killed agent, detached from its task,
    cannot clean up: what its Python worker and the next agents remove must leave nothing."""
    results = scenarios.run_mode(hosts.master_url, "spark", scenarios.CI["spark"], WORK)
    RESULTS.extend(results)
    r = by_scenario(results)
    base = r["none"]
    assert base["outcome"] == "completed" and base["accuracy"] > 0.85, base
    assert_no_leftovers(base)
    for name in ("kill_worker", "kill_agent"):
        check_recovered(r[name], base["accuracy"], 8, detect_within=5, recover_within=30,
                        resumes=False)
    killed = r["kill_worker"]
    assert killed["first_failure"].startswith("generation 0: worker:0 (executor"), \
        killed["first_failure"][:2000]
    assert "signal 9" in killed["first_failure"]
    assert [g for g, _ in killed["epochs"]].count(1) >= 3, killed["epochs"]


def test_a_killed_driver_leaves_nothing_on_either_host_within_10_s(hosts):
    r = scenarios.run_driver_kill(hosts.master_url, WORK)
    RESULTS.append(r)
    assert r["hosts"] == ["127.0.0.2", "127.0.0.3"], r
    # Two TF processes, their agents and the chief's TensorBoard; a ring per node.
    assert r["processes_before"] >= 5 and r["shm_before"] >= 2, r
    assert_no_leftovers(r)
    assert r["gone_s"] < 10, r
