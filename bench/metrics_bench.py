"""What reporting training metrics costs a node: sparktf's Keras callback
(ctx.metrics_callback()) and custom-loop hook (ctx.report), next to the same training
without them, in one process (the node's status pipe is /dev/null here, as cheap as the
agent's pipe: the reports leave at most every 0.5 s).

    .venv/bin/python bench/metrics_bench.py [--rounds 5] [--steps 3000]

Prints the median cost of one ctx.report call (throttled, as every step calls it), and
the median steps/s of a small Keras model (16 -> 32 -> 1, batch 32, tf_keras as the
nodes run it) fit with and without the callback, rounds interleaved, with the overhead as
a share of the step time (target: at most 1% at about 1000 steps/s)."""

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["SPARKTF_STATUS_FD"] = str(os.open(os.devnull, os.O_WRONLY))


def node_context():
    from sparktf.node import NodeContext

    return NodeContext({"executor_id": 0, "worker_num": 0, "job_name": "worker",
                        "task_index": 0, "cluster_spec": {}, "num_workers": 1})


def report_cost(ctx, calls: int) -> float:
    """Seconds per ctx.report call, with a loss that is a tensor (as a loop has)."""
    import tensorflow as tf

    loss = tf.constant(0.5)
    t0 = time.perf_counter()
    for step in range(calls):
        ctx.report(step, loss=loss)
    return (time.perf_counter() - t0) / calls


def callback_cost(ctx, calls: int) -> float:
    """Seconds per on_train_batch_end of the Keras callback, with the logs Keras passes
    (tensors: _supports_tf_logs)."""
    import tensorflow as tf

    cb = ctx.metrics_callback()
    logs = {"loss": tf.constant(0.5), "mae": tf.constant(0.25)}
    cb.on_epoch_begin(0)
    t0 = time.perf_counter()
    for step in range(calls):
        cb.on_train_batch_end(step, logs)
    return (time.perf_counter() - t0) / calls


def dispatch_cost(ctx, calls: int, with_callback: bool) -> float:
    """Seconds per step that Keras's own CallbackList spends on the batch hooks, as fit
    builds it (History added, no progress bar), with or without the metrics callback:
    the difference is all that the callback adds to a step, Keras's side included."""
    import tensorflow as tf
    from tf_keras.src.callbacks import CallbackList

    model = tf.keras.Sequential([tf.keras.Input((16,)), tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    callbacks = CallbackList([ctx.metrics_callback()] if with_callback else [],
                             add_history=True, add_progbar=False, model=model, verbose=0,
                             epochs=1, steps=calls)
    logs = {"loss": tf.constant(0.5)}
    callbacks.on_train_begin()
    callbacks.on_epoch_begin(0)
    t0 = time.perf_counter()
    for step in range(calls):
        callbacks.on_train_batch_begin(step)
        callbacks.on_train_batch_end(step, logs)
    return (time.perf_counter() - t0) / calls


def fit_rate(ctx, steps: int, with_callback: bool) -> float:
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = rng.random((steps * 32, 16), dtype=np.float32)
    y = x.sum(axis=1, keepdims=True)
    model = tf.keras.Sequential([tf.keras.Input((16,)), tf.keras.layers.Dense(32, "relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(x[:3200], y[:3200], batch_size=32, epochs=1, verbose=0)  # traced, warm
    callbacks = [ctx.metrics_callback()] if with_callback else []
    t0 = time.perf_counter()
    model.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=callbacks)
    return steps / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=3000)
    args = ap.parse_args()
    ctx = node_context()
    per_call = statistics.median(report_cost(ctx, 200000) for _ in range(args.rounds))
    per_batch = statistics.median(callback_cost(ctx, 200000) for _ in range(args.rounds))
    dispatch = {False: [], True: []}
    for _ in range(args.rounds):
        for with_callback in (False, True):
            dispatch[with_callback].append(dispatch_cost(ctx, 100000, with_callback))
    keras_added = statistics.median(dispatch[True]) - statistics.median(dispatch[False])
    rates = {False: [], True: []}
    for _ in range(args.rounds):
        for with_callback in (False, True):
            rates[with_callback].append(fit_rate(ctx, args.steps, with_callback))
    plain, reported = statistics.median(rates[False]), statistics.median(rates[True])
    print(f"ctx.report: {per_call * 1e6:.2f} us per call; the callback's "
          f"on_train_batch_end: {per_batch * 1e6:.2f} us (medians of {args.rounds})")
    print(f"Keras fit, {args.steps} steps, medians of {args.rounds} rounds: "
          f"{plain:,.0f} steps/s without the callback, {reported:,.0f} with")
    print(f"  per round without: {', '.join(f'{r:,.0f}' for r in rates[False])}")
    print(f"  per round with:    {', '.join(f'{r:,.0f}' for r in rates[True])}")
    print(f"Keras's CallbackList per step (medians of {args.rounds} x 100,000): "
          f"{statistics.median(dispatch[False]) * 1e6:.2f} us without the callback, "
          f"{statistics.median(dispatch[True]) * 1e6:.2f} us with: "
          f"{keras_added * 1e6:.2f} us added")
    step = 1 / plain
    print(f"all the callback adds to a step (Keras's dispatch included), at 1,000 steps/s: "
          f"{keras_added / 1e-3 * 100:.2f}% (target: at most 1%)")
    print(f"overhead per step at {plain:,.0f} steps/s: callback {per_batch / step * 100:.2f}%, "
          f"ctx.report {per_call / step * 100:.2f}% (target: at most 1%); fit with the "
          f"callback vs without: {(1 / reported - step) / step * 100:+.1f}% (noise)")


if __name__ == "__main__":
    main()
