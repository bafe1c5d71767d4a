"""TensorFlow itself on hdfs:// and s3:// through sparktf's filesystem plugin
(`import sparktf.tf`), against the real servers of the storage tests: tf.data, tf.io.gfile,
checkpoints, SavedModels and summaries. Local paths run the same tests as a reference."""

import os

import numpy as np
import pytest
from conftest import free_port

pytestmark = [pytest.mark.storage, pytest.mark.tensorflow]


@pytest.fixture(scope="module")
def tf():
    import tensorflow as tf

    import sparktf.tf  # noqa: F401 - registers hdfs://, s3://, s3a://

    return tf


def test_gfile(tf, store):
    d = f"{store}/gfile"
    tf.io.gfile.makedirs(d)
    with tf.io.gfile.GFile(f"{d}/a.txt", "w") as f:
        f.write("hello ")
        f.write("world")
    assert tf.io.gfile.exists(f"{d}/a.txt") and not tf.io.gfile.exists(f"{d}/b.txt")
    with tf.io.gfile.GFile(f"{d}/a.txt") as f:
        assert f.read() == "hello world"
    assert tf.io.gfile.stat(f"{d}/a.txt").length == 11
    assert tf.io.gfile.listdir(d) == ["a.txt"]
    assert tf.io.gfile.glob(f"{d}/*.txt") == [f"{d}/a.txt"]
    tf.io.gfile.rename(f"{d}/a.txt", f"{d}/b.txt")
    assert tf.io.gfile.listdir(d) == ["b.txt"]
    tf.io.gfile.rmtree(d)
    assert not tf.io.gfile.exists(f"{d}/b.txt")
    with pytest.raises(tf.errors.NotFoundError, match="missing"):
        tf.io.gfile.GFile(f"{store}/missing").read()


def test_gfile_flush_shows_what_was_written_before_close(tf, store):
    """A reader opened after flush() sees everything written so far, across HDFS block
    boundaries (8 MiB on the minicluster), and the file ends whole after more writes.
    S3 shows an object only when it is closed."""
    path = f"{store}/flushed/events.bin"
    chunk = bytes(range(256)) * 4096  # 1 MiB
    tf.io.gfile.makedirs(f"{store}/flushed")
    with tf.io.gfile.GFile(path, "wb") as f:
        for i in range(3):
            for _ in range(4):
                f.write(chunk)
            f.flush()
            if not store.startswith("s3"):
                with tf.io.gfile.GFile(path, "rb") as r:
                    assert r.read() == chunk * 4 * (i + 1)
        f.write(b"tail")
    with tf.io.gfile.GFile(path, "rb") as r:
        assert r.read() == chunk * 12 + b"tail"
    tf.io.gfile.rmtree(f"{store}/flushed")


def test_many_small_flushes_stay_readable(tf, store):
    """An event file's life: hundreds of small write+flush cycles, each visible to a new
    reader and to stat (on HDFS with 2 replicas: closing and appending here once corrupted
    replicas under load)."""
    path = f"{store}/small-flushes.bin"
    written = b""
    with tf.io.gfile.GFile(path, "wb") as f:
        for i in range(300):
            record = bytes([i % 251]) * (50 + i)
            f.write(record)
            written += record
            f.flush()
            if i % 25 == 0 and not store.startswith("s3"):
                with tf.io.gfile.GFile(path, "rb") as r:
                    assert r.read() == written
                assert tf.io.gfile.stat(path).length == len(written)
    with tf.io.gfile.GFile(path, "rb") as r:
        assert r.read() == written
    tf.io.gfile.remove(path)


@pytest.mark.parametrize("store", ["local", "hdfs"], indirect=True)  # S3: not while written
def test_an_open_reader_follows_a_file_while_it_is_written(tf, store):
    """As TensorBoard reads an event file: readers opened while the file is written read
    what later flushes add: TensorFlow's record iterator resumes after the end, and
    sparktf's own reader seeks past the length the file had when it was opened and sees
    it grow. (S3 shows an object only when it is closed.)"""
    from sparktf import fs

    tf.io.gfile.makedirs(store)
    raw, records = f"{store}/growing.bin", f"{store}/growing.tfrecord"
    first, later = bytes(range(256)) * 4, bytes(reversed(range(256))) * 4
    with tf.io.gfile.GFile(raw, "wb") as w, tf.io.TFRecordWriter(records) as rw:
        w.write(first)
        w.flush()
        rw.write(b"record 0")
        rw.flush()
        r = fs.open_input(raw)
        it = tf.compat.v1.io.tf_record_iterator(records)
        assert r.size() == len(first) and r.read() == first
        assert [next(it)] == [b"record 0"]
        with pytest.raises(StopIteration):
            next(it)
        w.write(later)
        w.flush()
        rw.write(b"record 1")
        rw.write(b"record 2")
        rw.flush()
        r.seek(len(first) + 100)
        assert r.read(50) == later[100:150]
        assert r.size() == len(first) + len(later)
        assert [next(it), next(it)] == [b"record 1", b"record 2"]
        r.close()
    tf.io.gfile.rmtree(store)


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_tfrecord_dataset_and_list_files(tf, store, compression):
    d = f"{store}/data"
    tf.io.gfile.makedirs(d)
    opts = tf.io.TFRecordOptions(compression_type=compression)
    for part in range(3):
        with tf.io.TFRecordWriter(f"{d}/part-{part}", opts) as w:
            for i in range(100):
                w.write(tf.train.Example(features=tf.train.Features(feature={
                    "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[part * 100 + i]))
                })).SerializeToString())
    files = tf.data.Dataset.list_files(f"{d}/part-*", shuffle=False)
    assert [f.decode() for f in files.as_numpy_iterator()] == [f"{d}/part-{p}" for p in range(3)]
    ds = tf.data.TFRecordDataset(files, compression_type=compression).batch(1000)
    parsed = tf.io.parse_example(next(iter(ds)), {"id": tf.io.FixedLenFeature([], tf.int64)})
    assert sorted(parsed["id"].numpy().tolist()) == list(range(300))


def test_checkpoints_and_saved_models(tf, store):
    d = f"{store}/model"
    v = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=v), f"{d}/ckpt", max_to_keep=2)
    for step in range(3):
        v.assign_add(tf.ones_like(v))
        manager.save(checkpoint_number=step)
    assert len(manager.checkpoints) == 2
    restored = tf.Variable(tf.zeros((2, 3)))
    tf.train.Checkpoint(v=restored).restore(tf.train.latest_checkpoint(f"{d}/ckpt"))
    assert np.array_equal(restored.numpy(), np.arange(6).reshape(2, 3) + 3)

    class Doubler(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def __call__(self, x):
            return 2 * x

    tf.saved_model.save(Doubler(), f"{d}/export")
    loaded = tf.saved_model.load(f"{d}/export")
    assert loaded(tf.constant([1.0, 2.5])).numpy().tolist() == [2.0, 5.0]

    # A Keras model: model.save (the .keras file) and model.export (a SavedModel).
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    expected = model.predict(x, verbose=0)
    model.save(f"{d}/model.keras")
    again = tf.keras.models.load_model(f"{d}/model.keras")
    assert np.allclose(again.predict(x, verbose=0), expected)
    model.export(f"{d}/keras-export")
    exported = tf.saved_model.load(f"{d}/keras-export")
    assert np.allclose(np.asarray(exported.serve(x)), expected)


def test_summaries(tf, store):
    logdir = f"{store}/logs"
    tf.io.gfile.makedirs(logdir)
    writer = tf.summary.create_file_writer(logdir)
    with writer.as_default():
        for step in range(3):
            tf.summary.scalar("loss", 1.0 / (step + 1), step=step)
    writer.close()
    (event_file,) = tf.io.gfile.glob(f"{logdir}/events.out.tfevents.*")
    losses = {}
    for raw in tf.data.TFRecordDataset(event_file):
        event = tf.compat.v1.Event.FromString(raw.numpy())
        for value in event.summary.value:
            losses[event.step] = float(tf.make_ndarray(value.tensor))
    assert losses == pytest.approx({0: 1.0, 1: 0.5, 2: 1 / 3})


def test_the_first_filesystem_registered_for_a_scheme_keeps_it(tf, tmp_path):
    """A second plugin for hdfs:// (here a copy of sparktf's own, as tensorflow-io's would
    be) is refused with AlreadyExists saying which schemes, and the first keeps serving."""
    import shutil
    import subprocess
    import sys

    import sparktf.tf as stf

    copy = tmp_path / "libsecond.so"
    shutil.copy(stf.plugin_path(), copy)
    code = f"""
import sparktf.tf as stf, tensorflow as tf
from sparktf import errors
stf._registered = False
import os; os.environ["SPARKTF_TF_PLUGIN"] = {str(copy)!r}
try:
    stf.register_filesystems()
except errors.AlreadyExists as e:
    print("AlreadyExists:", e)
print("still served:", tf.io.gfile.exists("hdfs:///"))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.splitlines()
    assert lines[0].startswith("AlreadyExists: TensorFlow already has a filesystem for one "
                               "of hdfs, s3, s3a"), lines
    assert lines[1] == "still served: True", lines


def test_registering_again_is_harmless_and_the_plugin_exports_one_symbol(tf):
    import subprocess

    import sparktf.tf as stf

    stf.register_filesystems()
    out = subprocess.run(["nm", "-D", "--defined-only", stf.plugin_path()],
                         capture_output=True, text=True, check=True).stdout
    assert [line.split()[-1] for line in out.splitlines()] == ["TF_InitPlugin"]
    assert os.path.getsize(stf.plugin_path()) > 0


def _digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.data / 16.0).astype(np.float32), d.target.astype(np.int64)


def _save_digits(spark, x, y, uri):
    """The first 1500 digits as 4 GZIP shards under `uri` (what cluster_funs.mwms_train
    reads)."""
    from sparktf import dfutil

    df = spark.createDataFrame([(x[i].tolist(), int(y[i])) for i in range(1500)],
                               "pixels array<float>, label long")
    dfutil.saveAsTFRecords(df, uri, num_shards=4, compression="GZIP")


# The real plugin, with the filesystem ABI number of another TensorFlow: what a sparktf
# built against one TensorFlow shows when loaded by another.
OTHER_ABI_PLUGIN = r"""
#include <dlfcn.h>
#include <stdlib.h>
#include "tensorflow/c/experimental/filesystem/filesystem_interface.h"
extern "C" void TF_InitPlugin(TF_FilesystemPluginInfo* info) {
  void* real = dlopen(getenv("REAL_PLUGIN"), RTLD_NOW | RTLD_LOCAL);
  reinterpret_cast<void (*)(TF_FilesystemPluginInfo*)>(dlsym(real, "TF_InitPlugin"))(info);
  for (int i = 0; i < info->num_schemes; ++i) info->ops[i].filesystem_ops_abi += 1;
}
"""


def test_a_plugin_of_another_abi_is_refused_with_a_clear_error(tf, tmp_path):
    import subprocess
    import sys

    import sparktf.tf as stf

    src = tmp_path / "other_abi.cc"
    src.write_text(OTHER_ABI_PLUGIN)
    lib = tmp_path / "libother_abi.so"
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(lib), str(src),
                    "-I", tf.sysconfig.get_include(), "-ldl"], check=True)
    env = dict(os.environ, SPARKTF_TF_PLUGIN=str(lib), REAL_PLUGIN=stf.plugin_path(),
               TF_CPP_MIN_LOG_LEVEL="3")
    p = subprocess.run([sys.executable, "-c", "import sparktf.tf"], capture_output=True,
                       text=True, env=env, timeout=300)
    assert p.returncode == 1, (p.returncode, p.stderr[-3000:])  # an exception, not a signal
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("sparktf.errors.Unimplemented: TensorFlow"), last
    assert "refused sparktf's filesystem plugin" in last and "ABI" in last, last


@pytest.mark.spark
def test_cluster_trains_from_hdfs_and_exports_there(spark, hdfs, tmp_path):
    """The seeds' loop on HDFS: Spark writes TFRecord shards to hdfs:///, a 2-worker
    MultiWorkerMirrored cluster reads its shards there with tf.data (node processes
    register the plugin when they import TensorFlow), and the chief exports the
    SavedModel to hdfs:///, which a fresh process loads back."""
    import json
    import subprocess
    import sys
    import uuid

    import cluster_funs
    from sparktf import TFCluster, fs

    x, y = _digits()
    base = f"hdfs:///tmp/seeds-{uuid.uuid4().hex[:8]}"
    _save_digits(spark, x, y, f"{base}/train")
    args = {"data": f"{base}/train", "global_batch": 64, "epochs": 6, "steps": 25,
            "export": f"{base}/export", "out": str(tmp_path)}
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.mwms_train, args, 2,
                            reservation_timeout=120)
    cluster.shutdown(timeout=600)
    nodes = [json.load(open(tmp_path / f"node-{i}.json")) for i in range(2)]
    assert nodes[0]["exported"] == f"{base}/export" and nodes[1]["exported"] is None
    assert all(n["loss"][-1] < 0.5 * n["loss"][0] for n in nodes)
    assert fs.exists(f"{base}/export/saved_model.pb")
    np.save(tmp_path / "x.npy", x[1500:])
    code = f"""
import numpy as np, tensorflow as tf, sparktf.tf
m = tf.saved_model.load({base + '/export'!r})
logits = m.serve(np.load({str(tmp_path / 'x.npy')!r}))
print(' '.join(map(str, np.argmax(np.asarray(logits), axis=1).tolist())))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert p.returncode == 0, p.stderr[-3000:]
    pred = np.array([int(v) for v in p.stdout.split()])
    assert (pred == y[1500:]).mean() > 0.85


@pytest.mark.spark
def test_namenode_stopping_mid_training_fails_the_cluster_naming_hdfs(spark, hdfs, tmp_path):
    """The namenode stops while a MultiWorkerMirrored cluster trains from HDFS and
    checkpoints there every epoch: the cluster fails within seconds (no TensorFlow op
    hangs on HDFS), and the error names the namenode."""
    import json
    import time
    import uuid

    import cluster_funs
    from sparktf import TFCluster

    x, y = _digits()
    base = f"hdfs:///tmp/nn-down-{uuid.uuid4().hex[:8]}"
    _save_digits(spark, x, y, f"{base}/train")
    progress = tmp_path / "progress.jsonl"
    args = {"data": f"{base}/train", "global_batch": 64, "epochs": 100000, "steps": 5,
            "export": f"{base}/export", "out": str(tmp_path), "progress": str(progress),
            "checkpoints": f"{base}/checkpoints"}
    cluster = TFCluster.run(spark.sparkContext, cluster_funs.mwms_train, args, 2,
                            reservation_timeout=120)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not (
                progress.exists() and len(progress.read_text().splitlines()) >= 3):
            assert not cluster.wait(0.5), "training ended early"
        epochs_before = len(progress.read_text().splitlines())
        assert epochs_before >= 3
        hdfs.command("stop-namenode")
        t0 = time.monotonic()
        with pytest.raises(Exception) as failure:
            cluster.shutdown(timeout=120)
        elapsed = time.monotonic() - t0
    finally:
        hdfs.command("restart-namenode")
    message = str(failure.value)
    print(f"cluster failed {elapsed:.1f}s after the namenode stopped: {message[:1500]}")
    assert elapsed < 20, (elapsed, message[-3000:])
    assert hdfs.namenode in message and "namenode" in message, message[-3000:]
    last = json.loads(progress.read_text().splitlines()[-1])
    assert last["epoch"] < epochs_before + 20  # it stopped soon after



def test_tensorboard_serves_scalars_from_hdfs(tf, hdfs):
    """`sparktf tensorboard --logdir hdfs://...` serves the loss of event files on HDFS,
    picks up a run that appears while it is running, and follows an event file that is
    still being written (what a flush of the summary writer pushed is served before the
    writer closes)."""
    import json
    import subprocess
    import sys
    import time
    import urllib.request
    import uuid

    def write_run(logdir, losses):
        tf.io.gfile.makedirs(logdir)
        writer = tf.summary.create_file_writer(logdir)
        with writer.as_default():
            for step, loss in enumerate(losses):
                tf.summary.scalar("loss", loss, step=step)
        writer.close()

    def scalars(port, run, want):
        url = f"http://127.0.0.1:{port}/data/plugin/scalars/scalars?run={run}&tag=loss"
        points, deadline = [], time.monotonic() + 90
        while time.monotonic() < deadline and len(points) < want:
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    points = json.loads(r.read())
            except OSError:
                pass
            time.sleep(1)
        return points

    logdir = f"hdfs:///tmp/tb-{uuid.uuid4().hex[:8]}"
    write_run(f"{logdir}/train", [1.0, 0.5, 0.25])
    port = free_port()
    sparktf_cli = os.path.join(os.path.dirname(sys.executable), "sparktf")
    tb = subprocess.Popen([sparktf_cli, "tensorboard", "--logdir", logdir, "--port", str(port),
                           "--host", "127.0.0.1", "--reload_interval", "1"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        points = scalars(port, "train", 3)
        assert [p[1] for p in points] == [0, 1, 2], points
        assert [p[2] for p in points] == pytest.approx([1.0, 0.5, 0.25])
        write_run(f"{logdir}/eval", [0.75, 0.375])
        points = scalars(port, "eval", 2)
        assert [p[2] for p in points] == pytest.approx([0.75, 0.375]), points

        live = tf.summary.create_file_writer(f"{logdir}/live", flush_millis=10**9)
        with live.as_default():
            for step in range(3):
                tf.summary.scalar("loss", 2.0 - step, step=step)
            live.flush()
            points = scalars(port, "live", 3)
            assert [p[2] for p in points] == pytest.approx([2.0, 1.0, 0.0]), points
            for step in range(3, 5):
                tf.summary.scalar("loss", 2.0 - step, step=step)
            live.flush()
            points = scalars(port, "live", 5)
            [event_file] = tf.io.gfile.glob(f"{logdir}/live/*")
            on_disk = sum(1 for _ in tf.compat.v1.io.tf_record_iterator(event_file))
            assert [p[1] for p in points] == [0, 1, 2, 3, 4], (points, on_disk)
        live.close()
    finally:
        tb.terminate()
        out = tb.communicate(timeout=30)[0]
        print(out.decode(errors="replace")[-20000:])  # shown when the test fails
    assert tb.returncode is not None, out


def test_keras_backup_and_restore_and_model_checkpoint(tf, store):
    """Keras writes its fault-tolerance backups and best-model checkpoints through the
    plugin, and a second fit resumes from the backup."""
    import tf_keras as keras

    d = f"{store}/keras"
    x = np.random.default_rng(0).normal(size=(256, 4)).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.float32)

    def model():
        m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, activation="sigmoid")])
        m.compile(optimizer="sgd", loss="binary_crossentropy")
        return m

    class StopAt(keras.callbacks.Callback):
        def __init__(self, epoch):
            super().__init__()
            self.epoch = epoch

        def on_epoch_begin(self, epoch, logs=None):
            if epoch == self.epoch:
                raise RuntimeError("interrupted")

    backup = keras.callbacks.BackupAndRestore(f"{d}/backup")
    ckpt = keras.callbacks.ModelCheckpoint(f"{d}/best",
                                           save_weights_only=True, save_best_only=True,
                                           monitor="loss")
    with pytest.raises(RuntimeError, match="interrupted"):
        model().fit(x, y, epochs=4, verbose=0, callbacks=[backup, ckpt, StopAt(2)])
    assert tf.io.gfile.glob(f"{d}/backup/*") and tf.io.gfile.glob(f"{d}/best*")
    seen = []

    class Record(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            seen.append(epoch)

    model().fit(x, y, epochs=4, verbose=0,
                callbacks=[keras.callbacks.BackupAndRestore(f"{d}/backup"), Record()])
    assert seen == [2, 3]  # resumed after the two epochs the backup holds


def test_checkpoint_into_a_directory_without_permission_names_the_path(hdfs):
    import subprocess
    import sys

    from sparktf import fs

    fs.makedirs("hdfs:///locked")  # the superuser's, mode 755
    code = ("import tensorflow as tf, sparktf.tf\n"
            "try:\n"
            "    tf.train.Checkpoint(v=tf.Variable(1.0)).save('hdfs:///locked/ckpt/c')\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, HADOOP_USER_NAME="alice",
                                             TF_CPP_MIN_LOG_LEVEL="3"))
    assert p.stdout.startswith("PermissionDeniedError"), (p.stdout, p.stderr[-2000:])
    assert "hdfs:///locked/ckpt" in p.stdout and "alice" in p.stdout
