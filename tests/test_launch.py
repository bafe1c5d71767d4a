"""`sparktf launch`: the runtime without Spark, as a user runs it."""

import json
import os
import shutil
import subprocess
import sys
import time

from conftest import free_port

SPARKTF = shutil.which("sparktf", path=os.path.dirname(sys.executable)) or "sparktf"

WRITE_TF_CONFIG = (
    "import json, os, sys; c = json.loads(os.environ['TF_CONFIG']); "
    "open(os.path.join(sys.argv[1], 'node-%s.json' % os.environ['SPARKTF_EXECUTOR_ID']), 'w')"
    ".write(json.dumps(c))")


def launch(*args, timeout=120, **kw):
    return subprocess.run([SPARKTF, "launch", *args], capture_output=True, text=True,
                          timeout=timeout, **kw)


def test_launch_runs_every_node_with_tf_config(tmp_path):
    p = launch("-n", "3", "--chief", "--", sys.executable, "-c", WRITE_TF_CONFIG, str(tmp_path))
    assert p.returncode == 0, p.stderr
    configs = [json.load(open(tmp_path / f"node-{i}.json")) for i in range(3)]
    assert [c["task"] for c in configs] == [{"type": "chief", "index": 0},
                                            {"type": "worker", "index": 0},
                                            {"type": "worker", "index": 1}]
    assert all(c["cluster"] == configs[0]["cluster"] for c in configs)


def test_launch_fails_fast_and_kills_the_rest(tmp_path):
    script = ("import os, sys, time\n"
              "if os.environ['SPARKTF_EXECUTOR_ID'] == '1':\n"
              "    raise RuntimeError('node 1 gives up')\n"
              "p = sys.argv[1] + '/pid-' + os.environ['SPARKTF_EXECUTOR_ID']\n"
              "open(p + '.tmp', 'w').write(str(os.getpid()))\n"
              "os.rename(p + '.tmp', p)  # a node killed before this leaves only a .tmp\n"
              "time.sleep(120)\n")
    t0 = time.monotonic()
    p = launch("-n", "3", "--", sys.executable, "-c", script, str(tmp_path))
    assert p.returncode != 0
    assert time.monotonic() - t0 < 20
    assert "worker:1 (executor 1" in p.stderr and "RuntimeError: node 1 gives up" in p.stderr
    for name in os.listdir(tmp_path):
        pid = open(tmp_path / name).read()
        # A .tmp is empty when its node was killed between creating and writing it.
        if pid or not name.endswith(".tmp"):
            assert pid and not os.path.exists(f"/proc/{pid}"), name


def test_launch_across_two_launchers_sharing_a_coordinator(tmp_path):
    token = tmp_path / "token"
    port = free_port()
    host = subprocess.Popen(
        [SPARKTF, "launch", "-n", "2", "--coordinator", f"127.0.0.1:{port}",
         "--host-coordinator", "--local", "1", "--token-file", str(token), "--",
         sys.executable, "-c", WRITE_TF_CONFIG, str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while not token.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    joiner = launch("-n", "2", "--coordinator", f"127.0.0.1:{port}", "--local", "1",
                    "--first-executor", "1", "--token-file", str(token), "--",
                    sys.executable, "-c", WRITE_TF_CONFIG, str(tmp_path))
    out, err = host.communicate(timeout=60)
    assert host.returncode == 0 and joiner.returncode == 0, err + joiner.stderr
    tasks = sorted(json.load(open(tmp_path / f"node-{i}.json"))["task"]["index"] for i in (0, 1))
    assert tasks == [0, 1]
    assert oct(os.stat(token).st_mode & 0o777) == "0o600"


def test_joining_with_a_wrong_token_is_refused(tmp_path):
    port = free_port()
    host = subprocess.Popen(
        [SPARKTF, "launch", "-n", "1", "--coordinator", f"127.0.0.1:{port}",
         "--host-coordinator", "--local", "0", "--reservation-timeout", "5", "--", "true"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    bad = tmp_path / "bad"
    bad.write_text("not-the-token\n")
    p = launch("-n", "1", "--coordinator", f"127.0.0.1:{port}", "--local", "1",
               "--token-file", str(bad), "--", "true")
    assert p.returncode != 0 and "Unauthenticated" in p.stderr
    host.communicate(timeout=30)
    assert host.returncode != 0  # nobody registered within its reservation timeout


def test_killed_launcher_leaves_nothing_running(tmp_path):
    import signal

    script = ("import os, sys, time\n"
              "p = sys.argv[1] + '/pid-' + os.environ['SPARKTF_EXECUTOR_ID']\n"
              "open(p + '.tmp', 'w').write(str(os.getpid()))\n"
              "os.rename(p + '.tmp', p)  # a node killed before this leaves only a .tmp\n"
              "time.sleep(120)\n")
    p = subprocess.Popen([SPARKTF, "launch", "-n", "2", "--", sys.executable, "-c", script,
                          str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while len(os.listdir(tmp_path)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    pids = [open(tmp_path / n).read() for n in os.listdir(tmp_path)]
    assert len(pids) == 2
    p.send_signal(signal.SIGKILL)  # the coordinator dies with it
    p.wait()
    deadline = time.monotonic() + 15
    while any(os.path.exists(f"/proc/{pid}") for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in pids)


def test_agent_sets_cuda_visible_devices_and_reports_to_coordinator(tmp_path):
    from sparktf import _native

    token = "t" * 32
    coord = _native.Coordinator(1, token, bind_host="127.0.0.1")
    try:
        out = tmp_path / "env"
        script = ("import os, sys; open(sys.argv[1], 'w').write("
                  "os.environ.get('CUDA_VISIBLE_DEVICES', '-') + ' ' + os.environ['TF_CONFIG'])")
        p = subprocess.run([SPARKTF, "agent", "--coordinator", f"127.0.0.1:{coord.port}",
                            "--executor-id", "0", "--gpus", "2,3", "--",
                            sys.executable, "-c", script, str(out)],
                           env=dict(os.environ, SPARKTF_TOKEN=token), capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        gpus, tf_config = out.read_text().split(" ", 1)
        assert gpus == "2,3"
        assert json.loads(tf_config)["task"] == {"type": "worker", "index": 0}
        assert coord.wait_finished(5)
        node = json.loads(coord.status_json())["nodes"][0]
        assert node["phase"] == "exited" and node["exit_code"] == 0
    finally:
        coord.shutdown()


def test_a_print_after_the_launchers_stdout_closed_does_not_fail_the_node():
    """The TF process writes into the agent's pipes, never into a pipe whose reader may
    be gone (in SPARK mode, the Python worker that started the agent): the agent forwards
    what it can and drops the rest."""
    script = ("import sys, time\n"
              "time.sleep(1)\n"
              "print('x' * 200000)\n"
              "print('done', file=sys.stderr)\n")
    p = subprocess.Popen([SPARKTF, "launch", "-n", "1", "--", sys.executable, "-c", script],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # nobody reads the launcher's stdout any more
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err.decode(errors="replace")[-2000:]
