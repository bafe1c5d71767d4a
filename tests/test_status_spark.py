"""The status endpoint of a running cluster (InputMode.SPARK, 2 workers reading a slowed
feed and reporting steps): its JSON per node, its token check, `sparktf status URL` and
cluster.status() as the same table, and the page in a real headless browser (Debian's
chromium driven by selenium), whose screenshot is kept under build/test-artifacts/."""

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

import feed_funs
from sparktf import TFCluster
from sparktf.TFCluster import InputMode

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "build" / "test-artifacts"
SPARKTF = os.path.join(os.path.dirname(sys.executable), "sparktf")


def _slow_rows(stop_file):
    """Rows made at 2 ms each until `stop_file` exists, then at once."""
    def make(i):
        if not os.path.exists(stop_file):
            time.sleep(0.002)
        return (float(i),)
    return make


class Running:
    """A cluster in the middle of cluster.train, with its status URL and what run()
    printed on the driver's stderr."""

    def __init__(self, spark, out):
        self._stop = out / "stop"
        sc = spark.sparkContext
        printed = io.StringIO()
        with contextlib.redirect_stderr(printed):
            self.cluster = TFCluster.run(sc, feed_funs.reports_steps, {"out": str(out)}, 2,
                                         input_mode=InputMode.SPARK, progress=0,
                                         node_output=False, reservation_timeout=120)
        self.printed = printed.getvalue()
        self.url = self.cluster.status_url()
        rdd = sc.parallelize(range(8000), 4).map(_slow_rows(str(self._stop)))
        self._result = {}
        self._trainer = threading.Thread(
            target=lambda: self._result.update(self.cluster.train(rdd, num_epochs=3)))
        self._trainer.start()
        self._finished = False

    def finish(self):
        """Lets the feed run at full speed, waits for train() and shuts the cluster down."""
        if self._finished:
            return
        self._finished = True
        self._stop.touch()
        self._trainer.join(timeout=180)
        self.cluster.shutdown(timeout=120)
        assert self._result.get("rows") == 24000, self._result


@pytest.fixture(scope="module")
def running(spark, tmp_path_factory):
    r = Running(spark, tmp_path_factory.mktemp("status"))
    try:
        yield r
    finally:
        r.finish()


def _get(url, token=None):
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as r:
        return r.status, r.headers, r.read()


def _split(url):
    """(base URL, token) of the URL the driver printed."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}", urllib.parse.parse_qs(parts.query)["token"][0]


def _until(predicate, timeout=60, interval=0.3):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def _status(base, token):
    return json.loads(_get(base + "/api/status", token)[2])


def test_the_endpoint_serves_every_nodes_progress_and_input(running):
    cluster, url = running.cluster, running.url
    base, token = _split(url)
    assert f"sparktf: the cluster's status: {url}\n" in running.printed, running.printed
    assert re.fullmatch(r"http://[^/]+:\d+/\?token=[0-9a-f]{32}", url), url
    assert token != cluster._token  # read-only, derived
    def both_busy():
        s = _status(base, token)
        busy = [n for n in s["nodes"] if (n["training"] or {}).get("steps_per_sec") is not None
                and (n["input"] or {}).get("rows_per_sec") is not None]
        return s if len(busy) == 2 else None
    status = _until(both_busy)
    assert status, _status(base, token)
    assert status["num_nodes"] == 2 and status["totals"]["nodes"]["running"] == 2, status
    for n in status["nodes"]:
        assert n["name"] in ("worker:0", "worker:1"), n
        assert n["phase"] == "running" and n["pid"] > 0 and n["host"], n
        assert 0 < n["uptime_s"] < 600 and 0 <= n["heartbeat_age_s"] < 5, n
        training, feed = n["training"], n["input"]
        assert training["metrics"] == {"loss": pytest.approx(1.0 / training["step"])}, training
        assert training["batch_size"] == 50, training
        assert training["examples_per_sec"] == pytest.approx(50 * training["steps_per_sec"])
        assert feed["rows_fed"] >= feed["rows_taken"] > 0, feed
        assert feed["batches"] > 0 and feed["rows_taken"] >= 50 * feed["batches"] - 50, feed
        assert 0 <= feed["ring_fill"] <= 1 and 0 <= feed["stall"] <= 1, feed
    # The feed makes 1000 rows/s a partition while a worker takes 2500: they wait.
    assert max(n["input"]["stall"] for n in status["nodes"]) > 0.2, status["nodes"]
    assert status["totals"]["rows_taken"] == sum(n["input"]["rows_taken"]
                                                 for n in status["nodes"])
    history = _until(lambda: (lambda h: h if len(h["samples"]) >= 2 else None)(
        json.loads(_get(base + "/api/history", token)[2])), timeout=10)
    assert history and set(history["samples"][-1]["nodes"]) == {"worker:0", "worker:1"}
    steps = [s["nodes"]["worker:0"]["step"] for s in history["samples"]
             if (s["nodes"].get("worker:0") or {}).get("step") is not None]
    assert steps == sorted(steps), steps


def test_without_the_token_it_is_401_and_the_cluster_token_works_too(running):
    cluster, url = running.cluster, running.url
    base, token = _split(url)
    for path, given in [("/api/status", None), ("/api/status", "0" * 32), ("/", None),
                        ("/static/app.js", token[:-1])]:
        with pytest.raises(urllib.error.HTTPError) as e:
            _get(base + path, given)
        assert e.value.code == 401, path
        assert e.value.headers["WWW-Authenticate"] == 'Bearer realm="sparktf"'
    assert _get(base + "/api/status", cluster._token)[0] == 200
    code, headers, body = _get(url)  # the page, with the token in the URL
    assert code == 200 and b"<title>sparktf cluster</title>" in body
    assert headers["Set-Cookie"].startswith(f"sparktf_token={token};")
    assert headers["Content-Type"] == "text/html; charset=utf-8"


def test_the_cli_and_cluster_status_print_the_same_table(running):
    cluster, url = running.cluster, running.url
    p = subprocess.run([SPARKTF, "status", url], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    cli = p.stdout.splitlines()
    here = str(cluster.status()).splitlines()
    assert cli[0].startswith("sparktf cluster: 2 of 2 nodes registered, 2 running"), cli
    assert cli[1] == here[1], (cli, here)
    assert cli[1].split()[:4] == ["NODE", "HOST", "EXECUTOR", "PID"], cli
    assert sorted(line.split()[0] for line in cli[2:4]) == ["worker:0", "worker:1"], cli
    assert sorted(line.split()[0] for line in here[2:4]) == ["worker:0", "worker:1"], here
    assert cluster.status()["nodes"][0]["name"] in ("worker:0", "worker:1")  # still a dict
    # --watch refreshes until interrupted; --json is the raw document.
    watch = subprocess.Popen([SPARKTF, "status", url, "--watch", "0.3"], stdout=subprocess.PIPE,
                             text=True)
    time.sleep(1.5)
    watch.send_signal(2)
    shown, _ = watch.communicate(timeout=10)
    assert watch.returncode == 0 and shown.count("sparktf cluster:") >= 3, shown
    p = subprocess.run([SPARKTF, "status", url, "--json"], capture_output=True, text=True,
                       timeout=30)
    assert len(json.loads(p.stdout)["nodes"]) == 2
    base, _ = _split(url)
    p = subprocess.run([SPARKTF, "status", base], capture_output=True, text=True, timeout=30)
    assert p.returncode == 3 and "a token is needed" in p.stderr, p.stderr


def test_the_page_shows_every_node_and_a_rising_step_in_a_browser(running):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    cluster, url = running.cluster, running.url
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1500,1000"):
        options.add_argument(flag)
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must not look for downloads
    driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
    try:
        driver.set_page_load_timeout(30)
        driver.get(url)

        # Read in one script: the page redraws the table every second, so elements
        # found in one call may be gone by the next.
        def rows():
            return dict(driver.execute_script(
                "return [...document.querySelectorAll('#nodes tbody tr')]"
                ".map(tr => [tr.dataset.node, tr.querySelector('td.step').textContent])"))

        def step(node):
            text = rows().get(node, "-")
            return int(text) if text.isdigit() else None

        assert _until(lambda: step("worker:0") and step("worker:1"), timeout=30), \
            driver.page_source[:3000]
        assert sorted(rows()) == ["worker:0", "worker:1"]
        first = step("worker:0")
        assert _until(lambda: (step("worker:0") or 0) > first, timeout=20), (first, step("worker:0"))
        # The charts have a line per node once the history has two samples.
        assert _until(lambda: driver.execute_script(
            "return document.querySelectorAll('#chart-steps path[data-node]').length") == 2,
            timeout=20)
        summary = driver.find_element(By.ID, "summary").text
        assert summary.startswith("2 of 2 nodes registered, 2 running"), summary
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(ARTIFACTS / "status-page.png"))
        assert (ARTIFACTS / "status-page.png").stat().st_size > 10000
    finally:
        driver.quit()


def test_after_shutdown_the_endpoint_is_gone(running):
    url = running.url
    assert _get(url)[0] == 200
    running.finish()
    with pytest.raises(urllib.error.URLError):
        _get(url)
    p = subprocess.run([SPARKTF, "status", url], capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and "has the cluster ended?" in p.stderr, p.stderr
