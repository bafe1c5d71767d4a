"""TensorFlowOnSpark's MNIST examples (examples/mnist/keras and examples/mnist/estimator of
TFoS 2.2.5), as ports that change only the import, each run as a user runs it: spark-submit
on an embedded multi-executor Spark (local-cluster, 2 executors), on MNIST-shaped data
written in the examples' own input formats by examples/tfos/mnist_data_setup.py.
tf.estimator is gone from TensorFlow 2.21: the estimator examples keep their structure
(model_fn-style custom loop, checkpoints every 100 steps, an evaluator node, the export
with conv2d_input -> logits) on what TF 2.21 has (see examples/tfos/estimator/)."""

import glob
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from leftovers import leftovers, wait_leftovers

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "tfos"
SPARK_SUBMIT = os.path.join(os.path.dirname(sys.executable), "spark-submit")
TRAIN_ROWS = 1500  # mnist_data_setup.py's training set, --repeat 1


def _command(script, *args):
    return [SPARK_SUBMIT, "--master", "local-cluster[2,1,1024]", "--driver-memory", "1g",
            "--conf", "spark.ui.enabled=false", "--conf", "spark.executor.instances=2",
            str(EXAMPLES / script), *map(str, args)]


def _env():
    return dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)


def submit(script, *args, cwd, timeout=480):
    """Runs an example with spark-submit; its output (stdout and stderr) on success."""
    p = subprocess.run(_command(script, *args), cwd=cwd, env=_env(), capture_output=True,
                       text=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"{script} exited {p.returncode}:\n{p.stdout[-3000:]}\n"
                             f"{p.stderr[-8000:]}")
    return p.stdout + p.stderr


@pytest.fixture(autouse=True)
def nothing_left():
    """Once an example's spark-submit has exited, none of its node processes, shared
    memory or temporary directories are left."""
    before = leftovers()
    yield
    left = wait_leftovers(ignore=before)
    assert not any(left.values()), left


@pytest.fixture(scope="module")
def mnist(tmp_path_factory):
    """The data directory of mnist_data_setup.py (csv/, tfr/, npz/)."""
    out = tmp_path_factory.mktemp("mnist") / "data"
    log = submit("mnist_data_setup.py", "--output", out, "--num_partitions", 4, cwd=out.parent)
    assert f"train: {TRAIN_ROWS} images" in log and "test: 297 images" in log
    return out


def _test_set(mnist):
    with np.load(mnist / "npz" / "test.npz") as d:
        return d["image"].astype(np.float32) / 255.0, d["label"]


def exported_accuracy(export_dir, mnist, output="dense_1"):
    """Accuracy on the test set of the SavedModel's serving_default (conv2d_input ->
    `output`), loaded as TFoS's inference examples load it."""
    import tensorflow as tf

    predict = tf.saved_model.load(str(export_dir), tags="serve").signatures["serving_default"]
    images, labels = _test_set(mnist)
    scores = predict(conv2d_input=tf.constant(images))[output].numpy()
    return float(np.mean(np.argmax(scores, axis=1) == labels))


def test_keras_mnist_spark(mnist, tmp_path):
    log = submit("keras/mnist_spark.py", "--images_labels", mnist / "csv" / "train",
                 "--epochs", 3, "--learning_rate", 0.005, "--model_dir", tmp_path / "model",
                 "--export_dir", tmp_path / "export", cwd=tmp_path)
    assert exported_accuracy(tmp_path / "export", mnist) > 0.8, log[-3000:]
    assert glob.glob(str(tmp_path / "model" / "weights-0003*")), log[-3000:]


def test_keras_mnist_tf(mnist, tmp_path):
    log = submit("keras/mnist_tf.py", "--images_labels", mnist / "npz" / "train.npz",
                 "--epochs", 3, "--learning_rate", 0.005, "--model_dir", tmp_path / "model",
                 "--export_dir", tmp_path / "export", cwd=tmp_path)
    assert exported_accuracy(tmp_path / "export", mnist) > 0.8, log[-3000:]
    assert glob.glob(str(tmp_path / "model" / "train" / "events.out.tfevents.*")), \
        "the TensorBoard callback wrote no events"


@pytest.fixture(scope="module")
def keras_tf_ds_run(mnist, tmp_path_factory):
    """keras/mnist_tf_ds.py's run: its directory (model/, export/)."""
    out = tmp_path_factory.mktemp("tf_ds")
    submit("keras/mnist_tf_ds.py", "--images_labels", mnist / "tfr" / "train" / "part-*",
           "--epochs", 3, "--learning_rate", 0.005, "--model_dir", out / "model",
           "--export_dir", out / "export", cwd=out)
    return out


def test_keras_mnist_tf_ds(mnist, keras_tf_ds_run):
    assert exported_accuracy(keras_tf_ds_run / "export", mnist) > 0.8
    assert glob.glob(str(keras_tf_ds_run / "model" / "weights-0003*"))


def test_keras_mnist_inference(mnist, keras_tf_ds_run, tmp_path):
    submit("keras/mnist_inference.py", "--images_labels", mnist / "tfr" / "test",
           "--export_dir", keras_tf_ds_run / "export", "--output", tmp_path / "predictions",
           cwd=tmp_path)
    parts = sorted(glob.glob(str(tmp_path / "predictions" / "part-*")))
    assert [os.path.basename(p) for p in parts] == ["part-00000", "part-00001"]
    pairs = [tuple(map(int, line.split())) for p in parts for line in open(p)]
    _, labels = _test_set(mnist)
    assert sorted(label for label, _ in pairs) == sorted(labels.tolist())
    accuracy = np.mean([label == pred for label, pred in pairs])
    assert accuracy == pytest.approx(exported_accuracy(keras_tf_ds_run / "export", mnist),
                                     abs=1.5 / len(labels))


def _json_predictions(output):
    rows = [json.loads(line) for p in glob.glob(str(output / "part-*.json")) for line in open(p)]
    return rows


def test_keras_mnist_pipeline_trains_from_csv_and_predicts_tfrecords(mnist, tmp_path):
    log = submit("keras/mnist_pipeline.py", "--images_labels", mnist / "csv" / "train",
                 "--epochs", 3, "--learning_rate", 0.005, "--model_dir", tmp_path / "model",
                 "--export_dir", tmp_path / "export", cwd=tmp_path)
    accuracy = exported_accuracy(tmp_path / "export", mnist)
    assert accuracy > 0.8, log[-3000:]
    submit("keras/mnist_pipeline.py", "--mode", "inference", "--format", "tfr",
           "--images_labels", mnist / "tfr" / "test", "--export_dir", tmp_path / "export",
           "--output", tmp_path / "predictions", cwd=tmp_path)
    rows = _json_predictions(tmp_path / "predictions")
    _, labels = _test_set(mnist)
    assert len(rows) == len(labels)
    assert all(len(r["prediction"]) == 10 and r["argmax"] == int(np.argmax(r["prediction"]))
               for r in rows)
    assert sorted(r["label"] for r in rows) == sorted(labels.tolist())
    assert np.mean([r["argmax"] == r["label"] for r in rows]) == pytest.approx(
        accuracy, abs=1.5 / len(labels))
