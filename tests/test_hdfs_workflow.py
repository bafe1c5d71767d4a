"""The seeds' workflow end to end on HDFS: examples/hdfs_workflow.py run as a user runs it,
on its own embedded multi-executor Spark whose fs.defaultFS is the minicluster."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.storage, pytest.mark.spark, pytest.mark.tensorflow]

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "hdfs_workflow.py"
EPOCHS = 6


def test_seeds_workflow_on_hdfs(hdfs, tmp_path):
    from sparktf import fs

    base = f"hdfs:///seeds-{uuid.uuid4().hex[:8]}"
    report_path = tmp_path / "report.json"
    p = subprocess.run([sys.executable, str(EXAMPLE), "--base", base, "--epochs", str(EPOCHS),
                        "--report", str(report_path)],
                       capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-5000:]
    r = json.loads(report_path.read_text())

    # Spark itself ran on HDFS: the default filesystem is the minicluster's namenode.
    assert r["default_fs"] == fs.default_fs() and r["default_fs"].startswith("hdfs://")
    assert r["num_train"] + r["num_test"] == 1309 and r["num_test"] > 200
    for d in ("train", "test"):
        assert len(fs.glob(f"{base}/{d}/part-*")) == (4 if d == "train" else 2)
        assert fs.exists(f"{base}/{d}/_SUCCESS") and not fs.exists(f"{base}/{d}/_temporary")

    # Training: a chief and a worker; the loss fell. (Most of the fall happens within the
    # first epoch, and epoch to epoch it is noisy: once 0.540, 0.486, 0.438, 0.440, 0.481,
    # 0.463; so the later epochs' mean is compared with the first epoch.)
    nodes = {n["job_name"]: n for n in r["nodes"]}
    assert sorted(nodes) == ["chief", "worker"]
    chief, worker = nodes["chief"], nodes["worker"]
    later = chief["loss"][len(chief["loss"]) // 2:]
    assert sum(later) / len(later) < 0.95 * chief["loss"][0], chief["loss"]

    # Only the chief wrote under the model directory: a checkpoint per epoch, and event
    # files from the chief's process only; nothing of the worker's (no Keras workertemp_*).
    assert r["checkpoints"] == [f"ckpt-{e:02d}" for e in range(1, EPOCHS + 1)]
    assert r["event_writers"] == [[chief["host"], str(chief["pid"])]]
    assert not [f for f in r["model_files"] if "workertemp" in f]
    assert all(f.startswith(f"{base}/model/checkpoints/") or
               f.startswith(f"{base}/model/tensorboard/") for f in r["model_files"])
    # The worker wrote into a scratch directory that it removed; the export is the chief's.
    assert chief["scratch"] is None and worker["scratch"]
    assert r["scratch_left"] == [] and not os.path.exists(worker["scratch"])
    assert fs.exists(f"{base}/export/saved_model.pb")

    # Inference: one prediction per held-out passenger, in one file per node, better than
    # always answering the majority class.
    assert r["predictions"] == r["prediction_names"] == r["num_test"]
    assert sorted(fs.glob(f"{base}/predictions/part-*")) == [
        f"{base}/predictions/part-{i:05d}" for i in range(2)]
    assert r["accuracy"] >= r["baseline"] + 0.05, (r["accuracy"], r["baseline"])
