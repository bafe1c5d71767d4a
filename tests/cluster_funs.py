"""map_fun bodies for the cluster tests. They live in a module (not in the
test file) so node processes import them by name."""

import json
import os
import time

SPEC = None


def _parse(tf):
    spec = {"pixels": tf.io.FixedLenFeature([64], tf.float32),
            "label": tf.io.FixedLenFeature([], tf.int64)}
    return lambda batch: tf.io.parse_example(batch, spec)


def mwms_train(args, ctx):
    """MultiWorkerMirrored Keras training on TFRecord shards written by dfutil.
    Keras 3 does not support MultiWorkerMirroredStrategy (keras-team/keras#20585):
    use Keras 2 (tf_keras) through TF_USE_LEGACY_KERAS, set before TF is imported."""
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tensorflow as tf

    from sparktf import data as sdata

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    parse = _parse(tf)

    # This worker's shard (auto-sharding off), batched with the global batch:
    # Keras splits each batch among the replicas in sync.
    ds = sdata.tfrecord_dataset(args["data"], ctx).repeat()
    ds = ds.shuffle(2048, seed=ctx.executor_id).batch(args["global_batch"]).map(parse)
    dist = ds.map(lambda d: (d["pixels"], d["label"])).prefetch(2)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((64,)),
                                     tf.keras.layers.Dense(64, activation="relu"),
                                     tf.keras.layers.Dense(10)])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
    progress = args.get("progress")

    class Progress(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if progress and ctx.is_chief:
                with open(progress, "a") as f:
                    f.write(json.dumps({"epoch": epoch + 1, "loss": float(logs["loss"]),
                                        "accuracy": float(logs["accuracy"])}) + "\n")

    callbacks = [Progress()]
    if args.get("checkpoints"):
        callbacks.append(tf.keras.callbacks.ModelCheckpoint(
            args["checkpoints"] + "/ckpt-{epoch:04d}", save_weights_only=True))
    hist = model.fit(dist, epochs=args["epochs"], steps_per_epoch=args["steps"], verbose=0,
                     callbacks=callbacks)
    exported = ctx.export_model(model, args["export"])
    with open(os.path.join(args["out"], f"node-{ctx.executor_id}.json"), "w") as f:
        json.dump({"job_name": ctx.job_name, "task_index": ctx.task_index,
                   "loss": hist.history["loss"], "exported": exported,
                   "tf_config": json.loads(os.environ["TF_CONFIG"]),
                   "num_workers": ctx.num_workers}, f)


def ps_train(args, ctx):
    """ParameterServerStrategy: ps and workers serve; the chief coordinates a
    custom training loop and exports."""
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if ctx.job_name in ("ps", "worker"):
        server = tf.distribute.Server(resolver.cluster_spec(), job_name=ctx.job_name,
                                      task_index=ctx.task_index, protocol="grpc", start=True)
        server.join()  # until the coordinator stops this node
        return
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    parse = _parse(tf)

    def dataset_fn():
        ds = tf.data.TFRecordDataset(args["files"], compression_type="GZIP").repeat()
        ds = ds.shuffle(2048).batch(64).map(parse)
        return ds.map(lambda d: (d["pixels"], d["label"]))

    class Linear(tf.Module):
        def __init__(self):
            self.w = tf.Variable(tf.zeros([64, 10]))
            self.b = tf.Variable(tf.zeros([10]))

        @tf.function(input_signature=[tf.TensorSpec([None, 64], tf.float32)])
        def __call__(self, x):
            return tf.matmul(x, self.w) + self.b

    with strategy.scope():
        model = Linear()
        opt = tf.keras.optimizers.SGD(0.5)
    per_worker = coordinator.create_per_worker_dataset(dataset_fn)
    it = iter(per_worker)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(iterator):
        def replica_fn(x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x))
            grads = tape.gradient(loss, [model.w, model.b])
            opt.apply_gradients(zip(grads, [model.w, model.b]))
            return loss
        x, y = next(iterator)
        return strategy.run(replica_fn, args=(x, y))

    losses = []
    for _ in range(args["rounds"]):
        results = [coordinator.schedule(step, args=(it,)) for _ in range(20)]
        coordinator.join()
        losses.append(float(results[-1].fetch()))
    tf.saved_model.save(model, args["export"])
    with open(os.path.join(args["out"], "chief.json"), "w") as f:
        json.dump({"losses": losses, "cluster": json.loads(os.environ["TF_CONFIG"])}, f)


def raise_on_worker(args, ctx):
    if ctx.job_name == "worker" and ctx.task_index == 1:
        time.sleep(1)
        raise ValueError(f"deliberate failure in {ctx.job_name}:{ctx.task_index}")
    with open(os.path.join(args, f"pid-{ctx.executor_id}"), "w") as f:
        f.write(str(os.getpid()))
    time.sleep(300)  # would hang without the abort


def tensorboard_node(args, ctx):
    import tensorflow as tf

    if ctx.is_chief:
        writer = tf.summary.create_file_writer(args["log_dir"])
        with writer.as_default():
            for i in range(3):
                tf.summary.scalar("loss", 1.0 / (i + 1), step=i)
        writer.flush()
    deadline = time.time() + args["max_wait"]
    while not os.path.exists(args["done"]) and time.time() < deadline:
        time.sleep(0.2)


def roles(args, ctx):
    with open(os.path.join(args, f"node-{ctx.executor_id}.json"), "w") as f:
        json.dump({"job_name": ctx.job_name, "task_index": ctx.task_index,
                   "worker_num": ctx.worker_num, "num_workers": ctx.num_workers,
                   "cluster_spec": ctx.cluster_spec, "abs": ctx.absolute_path("x/y"),
                   "tf_config": json.loads(os.environ["TF_CONFIG"])}, f)
    ctx.barrier("written", timeout=60)  # nobody exits before everyone wrote


def port_held_until_released(args, ctx):
    """With release_port=False the reserved port stays bound until
    ctx.release_port(); TensorFlow can bind it afterwards."""
    import socket

    me = ctx.cluster_spec[ctx.job_name][ctx.task_index]
    port = int(me.rsplit(":", 1)[1])

    def can_bind():
        s = socket.socket()
        try:
            s.bind(("0.0.0.0", port))
            return True
        except OSError:
            return False
        finally:
            s.close()

    before = can_bind()
    ctx.release_port()
    after = can_bind()
    with open(os.path.join(args, f"port-{ctx.executor_id}.json"), "w") as f:
        json.dump({"before": before, "after": after}, f)


def port_held_until_tensorflow_listens(args, ctx):
    """With release_port=True (the default) the port stays reserved while TensorFlow
    starts, TensorFlow's server binds it all the same, and the reservation goes once
    the server listens."""
    import socket
    import time

    me = ctx.cluster_spec[ctx.job_name][ctx.task_index]
    port = int(me.rsplit(":", 1)[1])
    held = True
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
            held = False
        except OSError:
            pass
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tensorflow as tf

    tf.distribute.MultiWorkerMirroredStrategy()  # starts the gRPC server on the port
    deadline = time.monotonic() + 5
    while ctx._port_fd >= 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    with open(os.path.join(args, f"port-{ctx.executor_id}.json"), "w") as f:
        json.dump({"held_at_start": held, "released": ctx._port_fd < 0}, f)


def killed_by_signal(args, ctx):
    import signal

    if ctx.executor_id == 1:
        time.sleep(1)
        os.kill(os.getpid(), signal.SIGKILL)  # like the OOM killer
    time.sleep(300)


def imports_a_driver_only_module(args, ctx):
    """The seeds' missing package: worker 1 imports a module that only the driver has."""
    if ctx.job_name == "worker" and ctx.task_index == 1:
        import sparktf_driver_only_module  # noqa: F401
    import time as _t

    _t.sleep(30)


def restartable_keras(args, ctx):
    """MultiWorkerMirrored Keras on scikit-learn's digits with BackupAndRestore under
    args["backup"]. In generation 0, worker 1 SIGKILLs itself at the end of epoch
    args["kill_epoch"] (1-based). Every node appends {"generation", "epoch", "time"} per
    finished epoch to out/epochs-<executor>.jsonl and {"generation", "time"} at start to
    out/starts.jsonl; the chief writes the held-out accuracy to out/result.json."""
    import signal
    import time

    start = {"generation": ctx.restart_count, "executor": ctx.executor_id, "time": time.time()}
    with open(os.path.join(args["out"], "starts.jsonl"), "a") as f:
        f.write(json.dumps(start) + "\n")
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import numpy as np
    import tensorflow as tf
    from sklearn.datasets import load_digits

    d = load_digits()
    x, y = (d.data / 16.0).astype(np.float32), d.target.astype(np.int64)
    tf.keras.utils.set_random_seed(0)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    ds = tf.data.Dataset.from_tensor_slices((x[:1500], y[:1500])).shuffle(
        1500, seed=0).repeat().batch(32 * ctx.num_workers)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((64,)),
                                     tf.keras.layers.Dense(64, activation="relu"),
                                     tf.keras.layers.Dense(10)])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    log = os.path.join(args["out"], f"epochs-{ctx.executor_id}.jsonl")

    class EpochsAndKill(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            with open(log, "a") as f:
                f.write(json.dumps({"generation": ctx.restart_count, "epoch": epoch + 1,
                                    "time": time.time()}) + "\n")
            if (ctx.restart_count == 0 and ctx.job_name == "worker" and ctx.task_index == 1
                    and epoch + 1 == args["kill_epoch"]):
                os.kill(os.getpid(), signal.SIGKILL)

    model.fit(ds, epochs=args["epochs"], steps_per_epoch=args["steps"], verbose=0,
              callbacks=[tf.keras.callbacks.BackupAndRestore(args["backup"]),
                         EpochsAndKill()])
    pred = np.argmax(model.predict(x[1500:], verbose=0), axis=1)  # collective: every node
    if ctx.is_chief:
        with open(os.path.join(args["out"], "result.json"), "w") as f:
            json.dump({"accuracy": float((pred == y[1500:]).mean()),
                       "generation": ctx.restart_count}, f)


def always_fails(args, ctx):
    """Worker 1 fails in every generation, naming it."""
    if ctx.job_name == "worker" and ctx.task_index == 1:
        raise ValueError(f"deliberate failure in generation {ctx.restart_count}")


def stops_itself(args, ctx):
    """Worker 1 stops its own TF process (SIGSTOP) while worker 0 trains on; the time of
    the stop goes to args/stopped."""
    import signal
    import time

    if ctx.job_name == "worker" and ctx.task_index == 1:
        with open(os.path.join(args, "stopped"), "w") as f:
            f.write(str(time.time()))
        os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(120)


def kills_its_executor(args, ctx):
    """Worker 1 SIGKILLs its Spark executor's JVM (the nearest java ancestor)."""
    import signal
    import time

    if ctx.job_name == "worker" and ctx.task_index == 1:
        pid = os.getppid()
        while pid > 1:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
            if comm == "java":
                break
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        with open(os.path.join(args, "killed"), "w") as f:
            f.write(f"{pid} {time.time()}")
        os.kill(pid, signal.SIGKILL)
    time.sleep(120)


def short_mwms_fit(args, ctx):
    """A few MultiWorkerMirrored Keras steps; the time map_fun returns goes to
    args/returned-<executor>."""
    import time

    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import numpy as np
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    x = np.random.default_rng(0).random((256, 8), dtype=np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1))).repeat().batch(32)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
    model.fit(ds, epochs=2, steps_per_epoch=5, verbose=0)
    with open(os.path.join(args, f"returned-{ctx.executor_id}"), "w") as f:
        f.write(str(time.time()))


def mwms_then_fail(args, ctx):
    """Both nodes start MultiWorkerMirrored (TensorFlow's runtime and its signal handlers
    are up: it catches SIGTERM); worker 1 then fails and records when, worker 0 waits."""
    import time

    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tensorflow as tf

    tf.distribute.MultiWorkerMirroredStrategy()
    if ctx.job_name == "worker" and ctx.task_index == 1:
        with open(os.path.join(args, "failed"), "w") as f:
            f.write(str(time.time()))
        raise ValueError("deliberate failure after the strategy started")
    time.sleep(120)


def hangs_in_a_callback(args, ctx):
    """Worker 1 trains a small Keras model whose callback sleeps for 120 s (hung); worker 0
    finishes at once."""
    if ctx.task_index != 1:
        return
    import time

    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import numpy as np
    import tensorflow as tf

    class Hang(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            with open(os.path.join(args, "hung"), "w") as f:
                f.write(str(time.time()))
            time.sleep(120)

    x = np.zeros((64, 4), np.float32)
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, x[:, 0], epochs=2, verbose=0, callbacks=[Hang()])


def chatty(args, ctx):
    """Each node writes numbered lines to stdout and stderr (and a redrawn progress bar,
    without its last newline); worker 1 then fails if args says so. No TensorFlow."""
    import sys

    me = f"{ctx.job_name}:{ctx.task_index}"
    for i in range(3):
        print(f"out {i} of {me}", flush=True)
        print(f"err {i} of {me}", file=sys.stderr, flush=True)
    sys.stdout.write("1/2 [=> ]\r2/2 [==>]")
    sys.stdout.flush()
    if args == "fail" and me == "worker:1":
        raise ValueError("chatty worker:1 fails on purpose")


def keras_fit_with_metrics(args, ctx):
    """A small Keras fit (one node, no strategy) of 3 epochs x 20 steps, with
    ctx.metrics_callback(); writes the final loss Keras logged."""
    import numpy as np
    import tensorflow as tf

    x = np.random.default_rng(ctx.executor_id).random((640, 4), dtype=np.float32)
    y = x.sum(axis=1, keepdims=True)
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse", metrics=["mae"])
    hist = model.fit(x, y, batch_size=32, epochs=3, verbose=0,
                     callbacks=[ctx.metrics_callback()])
    with open(os.path.join(args, f"loss-{ctx.executor_id}"), "w") as f:
        f.write(repr(float(hist.history["loss"][-1])))


def steps_for_seconds(args, ctx):
    """A custom loop that reports a step every 10 ms for args["seconds"] s; the node
    named by args["slow"] takes 50 ms a step (an input pipeline 5x slower)."""
    import time

    me = f"{ctx.job_name}:{ctx.task_index}"
    pause = 0.05 if me == args["slow"] else 0.01
    step, end = 0, time.monotonic() + args["seconds"]
    while time.monotonic() < end:
        time.sleep(pause)
        step += 1
        ctx.report(step, loss=1.0)
