"""map_funs of the chaos suite (imported by the TF processes by name). Each node appends
to <work>/starts.jsonl, at start, where it runs and the processes a fault can hit:
its TF process, its node agent (the TF process's parent) and its executor's JVM. Training
nodes append each finished epoch (or round) to <work>/epochs.jsonl; the chief writes the
held-out accuracy to <work>/result-<generation>.json."""

import json
import os
import time


def _append(path, record):
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def _executor_jvm():
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/comm") as f:
            if f.read().strip() == "java":
                return pid
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return 0


def _record_start(args, ctx):
    tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    task = tf_config.get("task", {})
    addr = tf_config.get("cluster", {}).get(task.get("type"), [""])[task.get("index", 0)]
    _append(os.path.join(args["work"], "starts.jsonl"), {
        "generation": ctx.restart_count, "role": f"{ctx.job_name}:{ctx.task_index}",
        "executor": ctx.executor_id, "host": addr.rsplit(":", 1)[0],
        "port": int(addr.rsplit(":", 1)[1]) if addr else 0, "pid": os.getpid(),
        "agent": os.getppid(), "jvm": _executor_jvm(), "time": time.time()})


def _digits():
    import numpy as np
    from sklearn.datasets import load_digits

    d = load_digits()
    x, y = (d.data / 16.0).astype(np.float32), d.target.astype(np.int64)
    return (x[:1500], y[:1500]), (x[1500:], y[1500:])


def _keras_model(tf):
    """The digits classifier of the Keras modes (build it in the strategy's scope)."""
    model = tf.keras.Sequential([tf.keras.Input((64,)),
                                 tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(10)])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def mwms(args, ctx):
    """MultiWorkerMirrored Keras on scikit-learn's digits, resuming from
    BackupAndRestore(args["backup"]) after a restart."""
    _record_start(args, ctx)
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import numpy as np
    import tensorflow as tf

    (x, y), (tx, ty) = _digits()
    tf.keras.utils.set_random_seed(0)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1500, seed=0).repeat().batch(
        32 * ctx.num_workers)
    with strategy.scope():
        model = _keras_model(tf)
    log = os.path.join(args["work"], "epochs.jsonl")

    class Epochs(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            _append(log, {"generation": ctx.restart_count,
                          "role": f"{ctx.job_name}:{ctx.task_index}", "epoch": epoch + 1,
                          "time": time.time()})
            time.sleep(args.get("epoch_pause", 0))  # room for a fault between epochs

    model.fit(ds, epochs=args["epochs"], steps_per_epoch=args["steps"], verbose=0,
              callbacks=[tf.keras.callbacks.BackupAndRestore(args["backup"]), Epochs()])
    pred = np.argmax(model.predict(tx, verbose=0), axis=1)  # a collective: every node
    if ctx.is_chief:
        with open(os.path.join(args["work"], f"result-{ctx.restart_count}.json"), "w") as f:
            json.dump({"accuracy": float((pred == ty).mean())}, f)


def parameter_server(args, ctx):
    """ParameterServerStrategy: ps and worker serve; the chief runs rounds of steps and
    saves a checkpoint (CheckpointManager on args["backup"]) after each, resuming from the
    latest after a restart."""
    _record_start(args, ctx)
    import numpy as np
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if ctx.job_name in ("ps", "worker"):
        server = tf.distribute.Server(resolver.cluster_spec(), job_name=ctx.job_name,
                                      task_index=ctx.task_index, protocol="grpc", start=True)
        server.join()  # until the cluster stops this node
        return
    (x, y), (tx, ty) = _digits()
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)

    def dataset_fn():
        ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1500).repeat()
        return ds.batch(64)

    with strategy.scope():
        w = tf.Variable(tf.zeros([64, 10]))
        b = tf.Variable(tf.zeros([10]))
        rounds = tf.Variable(0, dtype=tf.int64)
        opt = tf.keras.optimizers.SGD(0.5)
    ckpt = tf.train.Checkpoint(w=w, b=b, rounds=rounds)
    manager = tf.train.CheckpointManager(ckpt, args["backup"], max_to_keep=2)
    if manager.latest_checkpoint:
        ckpt.restore(manager.latest_checkpoint)
    it = iter(coordinator.create_per_worker_dataset(dataset_fn))
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(iterator):
        def replica_fn(bx, by):
            with tf.GradientTape() as tape:
                loss = loss_fn(by, tf.matmul(bx, w) + b)
            grads = tape.gradient(loss, [w, b])
            opt.apply_gradients(zip(grads, [w, b]))
            return loss
        bx, by = next(iterator)
        return strategy.run(replica_fn, args=(bx, by))

    log = os.path.join(args["work"], "epochs.jsonl")
    while int(rounds.numpy()) < args["epochs"]:
        for _ in range(args["steps"]):
            coordinator.schedule(step, args=(it,))
        coordinator.join()
        rounds.assign_add(1)
        manager.save()
        _append(log, {"generation": ctx.restart_count, "role": "chief:0",
                      "epoch": int(rounds.numpy()), "time": time.time()})
        time.sleep(args.get("epoch_pause", 0))
    pred = np.argmax(tx @ w.numpy() + b.numpy(), axis=1)
    with open(os.path.join(args["work"], f"result-{ctx.restart_count}.json"), "w") as f:
        json.dump({"accuracy": float((pred == ty).mean())}, f)


def spark_fed(args, ctx):
    """InputMode.SPARK: MultiWorkerMirrored Keras over the rows Spark feeds; logs each
    20 steps as an "epoch"; the chief writes the held-out accuracy."""
    _record_start(args, ctx)
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import numpy as np
    import tensorflow as tf

    _, (tx, ty) = _digits()
    tf.keras.utils.set_random_seed(0)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    dist = strategy.distribute_datasets_from_function(lambda _: ctx.dataset(32))
    with strategy.scope():
        model = _keras_model(tf)
    log = os.path.join(args["work"], "epochs.jsonl")

    class Steps(tf.keras.callbacks.Callback):
        steps = 0

        def on_train_batch_end(self, batch, logs=None):
            Steps.steps += 1
            if Steps.steps % 20 == 0:
                _append(log, {"generation": ctx.restart_count,
                              "role": f"{ctx.job_name}:{ctx.task_index}",
                              "epoch": Steps.steps // 20, "time": time.time()})
                time.sleep(args.get("epoch_pause", 0))

    model.fit(dist, epochs=1, steps_per_epoch=ctx.UNTIL_END_OF_FEED, verbose=0,
              callbacks=[Steps()])
    pred = np.argmax(model.predict(tx, verbose=0), axis=1)
    if ctx.is_chief:
        with open(os.path.join(args["work"], f"result-{ctx.restart_count}.json"), "w") as f:
            json.dump({"accuracy": float((pred == ty).mean())}, f)
