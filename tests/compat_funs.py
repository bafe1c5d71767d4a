"""map_funs written as TFoS programs write them (imported by the TF processes)."""

import json
import os


def squares_with_datafeed(args, ctx):
    """TFoS's own InputMode.SPARK inference test's map_fun."""
    import tensorflow as tf

    from sparktf.compat import TFNode

    tf_feed = TFNode.DataFeed(ctx.mgr, False)
    while not tf_feed.should_stop():
        batch = tf_feed.next_batch(batch_size=10)
        if len(batch) == 0:
            continue
        squares = tf.math.square(batch)
        tf_feed.batch_results(squares.numpy())


def port_released(args, ctx):
    """TFoS's test_port_released: the reservation is not the map_fun's business."""
    assert ctx.tmp_socket is None


def port_unreleased(args, ctx):
    """TFoS's test_port_unreleased: with release_port=False the port stays bound until
    ctx.release_port()."""
    import socket

    assert ctx.tmp_socket is not None
    port = ctx.tmp_socket.getsockname()[1]
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("0.0.0.0", port))
        raise AssertionError(f"port {port} could be bound while reserved")
    except OSError:
        pass
    finally:
        s.close()
    ctx.release_port()
    assert ctx.tmp_socket is None
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("0.0.0.0", port))  # free now
    s.close()


def parallel_sum(args, ctx):
    """TFParallel: a single-node TF computation; writes what it saw."""
    import tensorflow as tf

    total = int(tf.math.add(tf.constant(args["x"]), tf.constant(args["y"])).numpy())
    if ctx.executor_id == args.get("fail_on", -1):
        raise ValueError(f"run {ctx.executor_id} failed on purpose")
    with open(os.path.join(args["out"], f"run-{ctx.executor_id}.json"), "w") as f:
        json.dump({"sum": total, "worker_num": ctx.worker_num, "num_workers": ctx.num_workers,
                   "tf_config": os.environ.get("TF_CONFIG")}, f)


def keras_fit_under_mwms(args, ctx):
    """TFoS-era Keras code: tf.keras under MultiWorkerMirroredStrategy, no Keras switch of
    its own. Records which Keras tf.keras was and that fit ran."""
    import numpy as np
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
    x = np.ones((32, 4), np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(8).repeat()
    history = model.fit(ds, epochs=1, steps_per_epoch=2, verbose=0)
    with open(os.path.join(args["out"], f"keras-{ctx.executor_id}.json"), "w") as f:
        json.dump({"keras": type(model).__module__.split(".")[0],
                   "steps": len(history.history["loss"])}, f)


def digits_estimator_train(args, ctx):
    """A TFEstimator train_fn: Keras 2 (through sparktf.compat) under MWMS on the fed
    columns (image: 64 floats, label), exported for TFModel with layer-named signature
    keys (compat.export_saved_model)."""
    import tensorflow as tf

    from sparktf.compat import compat

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.Input((64,), name="image"),
            tf.keras.layers.Rescaling(1 / 16.0, name="scale"),
            tf.keras.layers.Dense(32, activation="relu", name="hidden"),
            tf.keras.layers.Dense(10, activation="softmax", name="probs")])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    per_worker = args.batch_size // ctx.num_workers
    data = strategy.distribute_datasets_from_function(
        lambda _: ctx.dataset(per_worker))
    model.fit(data, epochs=1, steps_per_epoch=ctx.UNTIL_END_OF_FEED, verbose=0)
    compat.export_saved_model(model, args.export_dir, ctx.is_chief)
    with open(os.path.join(args.out, f"train-{ctx.executor_id}.json"), "w") as f:
        json.dump({"epochs": args.epochs, "steps": args.steps, "note": args.note,
                   "batch_size": args.batch_size}, f)


def count_tfrecords(args, ctx):
    """A TFEstimator train_fn for InputMode.TENSORFLOW: reads the TFRecords the estimator
    wrote to args.tfrecord_dir and records how many Examples and the label sum it saw."""
    import tensorflow as tf

    from sparktf import records

    files = records.list_files(args.tfrecord_dir)
    spec = {"label": tf.io.FixedLenFeature([], tf.int64)}
    ds = tf.data.TFRecordDataset(files).map(lambda r: tf.io.parse_single_example(r, spec))
    rows = total = 0
    for ex in ds:
        rows += 1
        total += int(ex["label"])
    with open(os.path.join(args.out, f"tfr-{ctx.executor_id}.json"), "w") as f:
        json.dump({"rows": rows, "label_sum": total, "dir": args.tfrecord_dir}, f)
