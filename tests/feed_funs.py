"""map_funs for the InputMode.SPARK tests (imported by the TF processes)."""

import json
import os


def count_rows(args, ctx):
    """Reads the whole feed with DataFeed.next_batch; writes what it saw: rows, batches,
    the sum of the first column, and of every other column the sum of its values and the
    kinds of its values ("float32[3]" for a numpy array, "list[3]", or the type's name)."""
    import numpy as np

    feed = ctx.get_data_feed(train_mode=True)
    rows, batches, total = 0, 0, 0.0
    others: dict = {}
    while not feed.should_stop():
        batch = feed.next_batch(args.get("batch", 100))
        if len(batch) == 0:
            continue
        rows += len(batch)
        batches += 1
        total += sum(float(r[0]) for r in batch)
        for r in batch:
            for i, v in enumerate(r[1:] if isinstance(r, (tuple, list)) else (), start=1):
                seen = others.setdefault(str(i), {"sum": 0.0, "kinds": []})
                kind = (f"{v.dtype}{list(v.shape)}" if isinstance(v, np.ndarray)
                        else f"{type(v).__name__}[{len(v)}]" if isinstance(v, (list, tuple))
                        else type(v).__name__)
                if kind not in seen["kinds"]:
                    seen["kinds"].append(kind)
                try:
                    seen["sum"] += float(np.sum(v))
                except (TypeError, ValueError):  # text: no sum, its kind is recorded
                    pass
    with open(os.path.join(args["out"], f"node-{ctx.executor_id}.json"), "w") as f:
        json.dump({"rows": rows, "batches": batches, "sum": total, "columns": others,
                   "worker": ctx.task_index, "progress": feed.progress()}, f)


def squares(args, ctx):
    """Inference: answers each row x with x*x, in order."""
    feed = ctx.get_data_feed(train_mode=False)
    while not feed.should_stop():
        batch = feed.next_batch(args.get("batch", 37))
        if len(batch) > 0:
            feed.batch_results([int(x) * int(x) for x in batch])


def fail_after(args, ctx):
    """Reads a few batches, then raises (writing the time to args["out"]/failed-<id>)."""
    import time

    feed = ctx.get_data_feed()
    for _ in range(args.get("batches", 2)):
        feed.next_batch(10)
    if args.get("out"):
        with open(os.path.join(args["out"], f"failed-{ctx.executor_id}"), "w") as f:
            f.write(str(time.time()))
    raise ValueError("consumer exploded on purpose")


def terminate_after(args, ctx):
    """Reads a few batches, then terminates the feed; records what it read."""
    feed = ctx.get_data_feed()
    rows = 0
    for _ in range(args.get("batches", 3)):
        rows += len(feed.next_batch(10))
    feed.terminate()
    with open(os.path.join(args["out"], f"node-{ctx.executor_id}.json"), "w") as f:
        json.dump({"rows": rows}, f)


def wrong_result_count(args, ctx):
    """Inference that answers one result short per batch."""
    feed = ctx.get_data_feed(train_mode=False)
    while not feed.should_stop():
        batch = feed.next_batch(10)
        if len(batch) > 1:
            feed.batch_results([0] * (len(batch) - 1))


def mwms_keras(args, ctx):
    """MultiWorkerMirrored Keras training over ctx.dataset. Writes per worker
    the steps it ran; the chief evaluates on args["test"] and exports."""
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import numpy as np
    import tensorflow as tf

    # Seeded, so that an accuracy bound tests the feed, not the luck of the initial weights.
    tf.keras.utils.set_random_seed(args.get("seed", 0))
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    mapping = args.get("input_mapping")

    def dataset_fn(_):
        ds = ctx.dataset(args["batch"], input_mapping=mapping)
        if mapping:
            ds = ds.map(lambda d: (d["x"], d["y"]))
        return ds

    dist = strategy.distribute_datasets_from_function(dataset_fn)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((args["features"],)),
                                     tf.keras.layers.Dense(args.get("hidden", 32),
                                                           activation="relu"),
                                     tf.keras.layers.Dense(args["classes"])])
        model.compile(optimizer=tf.keras.optimizers.Adam(args.get("lr", 0.01)),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])

    class Steps(tf.keras.callbacks.Callback):
        steps = 0

        def on_train_batch_end(self, batch, logs=None):
            Steps.steps += 1

    # Keras needs a step count with a distributed dataset; the feed ends first
    # (on every worker at the same step) and Keras stops there.
    hist = model.fit(dist, epochs=1, steps_per_epoch=ctx.UNTIL_END_OF_FEED, verbose=0,
                     callbacks=[Steps()])
    result = {"steps": Steps.steps, "loss": hist.history["loss"],
              "job_name": ctx.job_name, "task_index": ctx.task_index}
    if "test" in args:
        x, y = np.asarray(args["test"][0], np.float32), np.asarray(args["test"][1])
        pred = np.argmax(model.predict(x, verbose=0), axis=1)
        result["accuracy"] = float((pred == y).mean())
    with open(os.path.join(args["out"], f"node-{ctx.executor_id}.json"), "w") as f:
        json.dump(result, f)


def slow_reader(args, ctx):
    """Writes its pid, then reads the feed slowly (a consumer to kill)."""
    import time

    with open(os.path.join(args["out"], f"pid-{ctx.executor_id}"), "w") as f:
        f.write(str(os.getpid()))
    feed = ctx.get_data_feed()
    while not feed.should_stop():
        feed.next_batch(10)
        time.sleep(0.05)


def count_rows_dies_once(args, ctx):
    """count_rows, but in generation 0 worker 1 SIGKILLs itself once it read more than
    args["die_after"] rows (after a pause of args["pause"] s before its last batch, so
    that its progress report covers what it read). Writes node-<generation>-<id>.json."""
    import signal
    import time

    feed = ctx.get_data_feed(train_mode=True)
    rows, total = 0, 0.0
    dying = ctx.restart_count == 0 and ctx.task_index == 1
    while not feed.should_stop():
        if dying and rows > args["die_after"]:
            time.sleep(args.get("pause", 0))
            feed.next_batch(50)
            os.kill(os.getpid(), signal.SIGKILL)
        batch = feed.next_batch(50)
        if len(batch) == 0:
            continue
        rows += len(batch)
        total += sum(float(r[0]) for r in batch)
    with open(os.path.join(args["out"], f"node-{ctx.restart_count}-{ctx.executor_id}.json"),
              "w") as f:
        json.dump({"rows": rows, "sum": total}, f)


def squares_dies_once(args, ctx):
    """squares, but in generation 0 worker 1 SIGKILLs itself at once."""
    import signal

    if ctx.restart_count == 0 and ctx.task_index == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    squares(args, ctx)


def two_queues(args, ctx):
    """Reads the "validation" queue to its end, then "input" to its end."""
    seen = {}
    for q in ("validation", "input"):
        feed = ctx.get_data_feed(qname_in=q)
        rows, total = 0, 0.0
        while not feed.should_stop():
            batch = feed.next_batch(50)
            rows += len(batch)
            total += sum(float(r) for r in batch)
        seen[q] = [rows, total]
    with open(os.path.join(args["out"], f"node-{ctx.executor_id}.json"), "w") as f:
        json.dump(seen, f)


def reports_steps(args, ctx):
    """Reads the feed slowly (a sleep per batch), calling ctx.report every batch as a
    custom training loop would (step, loss = 1 / step); the last report forced. Writes
    its step count."""
    import time

    feed = ctx.get_data_feed(train_mode=True)
    step = 0
    while not feed.should_stop():
        batch = feed.next_batch(50)
        if len(batch) == 0:
            continue
        step += 1
        time.sleep(0.02)
        ctx.report(step, epoch=0, batch_size=50, loss=1.0 / step, note="not a number")
    ctx.report(step, epoch=0, force=True, batch_size=50, loss=1.0 / max(step, 1))
    with open(os.path.join(args["out"], f"steps-{ctx.executor_id}"), "w") as f:
        f.write(str(step))


def dump_rows(args, ctx):
    """Reads the whole feed with DataFeed.next_batch and writes every row it got, each
    value as a list or a number, to args["out"]/rows-<executor id>.json."""
    import numpy as np

    feed = ctx.get_data_feed(train_mode=True)
    got = []
    while not feed.should_stop():
        for r in feed.next_batch(args.get("batch", 100)):
            got.append([v.tolist() if isinstance(v, np.ndarray)
                        else list(v) if isinstance(v, (list, tuple))
                        else v.item() if isinstance(v, np.generic) else v for v in r])
    with open(os.path.join(args["out"], f"rows-{ctx.executor_id}.json"), "w") as f:
        json.dump(got, f)
