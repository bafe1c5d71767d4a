"""Feeding where partitions live, on two simulated hosts: a Spark standalone cluster with
a worker (one executor) on 127.0.0.2 and one on 127.0.0.3, and a 2-node InputMode.SPARK
cluster, a node per host. A partition fed over TCP crossed hosts (a task feeds a node on
its own host through shared memory)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "chaos"))
from standalone import StandaloneCluster  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory):
    cluster = StandaloneCluster(tmp_path_factory.mktemp("hosts"), cores=1, memory="3g").start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.mark.timeout(900)
def test_partitions_are_fed_on_their_own_host_in_equal_shares(two_hosts, tmp_path, capsys):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", SPARK_LOCAL_IP="127.0.0.1")
    p = subprocess.run([sys.executable, str(ROOT / "tests" / "feed_hosts_job.py"),
                        two_hosts.master_url, str(tmp_path), "modulo,local,local-jvm"],
                       capture_output=True, text=True, timeout=800, env=env, cwd=tmp_path)
    results = {r["placement"]: r for r in (json.loads(line[7:]) for line in p.stdout.splitlines()
                                             if line.startswith("RESULT "))}
    assert p.returncode == 0 and len(results) == 3, p.stdout[-3000:] + p.stderr[-6000:]
    crossed = {}
    for placement, r in results.items():
        stats = r["stats"]
        assert sorted(r["node_hosts"]) == ["127.0.0.2", "127.0.0.3"], r
        assert stats["rows"] == 16000 and stats["partitions"] == 16, stats
        crossed[placement] = stats["partitions"] - stats["local_partitions"]
        # every row once, each node the rows of the partitions train() says it sent there
        for node, got in r["read"].items():
            sent = [p for epoch in stats["placement"] for p, n in enumerate(epoch)
                    if n == int(node)]
            assert got["rows"] == 1000 * len(sent), (placement, node, got, stats["placement"])
            assert got["sum"] == sum(p * 1000 * 1000 + 499500 for p in sent), (placement, node)
    with capsys.disabled():
        print(f"\npartitions that crossed hosts, of 16: {crossed['modulo']} with partition i ->"
              f" node i mod 2, {crossed['local']} fed where they live, {crossed['local-jvm']}"
              " fed where they live by the JVM feeder")
    assert results["local-jvm"]["stats"]["feeder"] == "jvm"
    for local in (results["local"]["stats"], results["local-jvm"]["stats"]):
        check_fed_where_they_live(local)


def check_fed_where_they_live(local: dict) -> None:
    # fed where they live: none crosses while each node takes its share, 4 an epoch
    for epoch in local["placement"]:
        assert sorted(epoch) == [0, 0, 0, 0, 1, 1, 1, 1], local["placement"]
    # a partition crosses only when its host's node has its 4 already: then every one it
    # crossed to the other node, and that node took 4 of its own host's
    for nodes, remote in zip(local["placement"], local["remote"]):
        if remote:
            into = {nodes[p] for p in remote}
            assert len(into) == 1, (nodes, remote)
            full = [p for p, n in enumerate(nodes) if n not in into]
            assert len(full) == 4 and not set(full) & set(remote), (nodes, remote)
