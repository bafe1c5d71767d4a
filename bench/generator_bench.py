"""What tf.data.Dataset.from_generator costs a batch, alone on CPU 0: the path that
ctx.dataset() takes (a Python generator yielding a dict of numpy columns, then .map to a
tuple), for batches of 256 rows of 784 float32 and an int32 label: one batch a call,
without and with prefetch(2), as ctx.dataset did until 2026-12-03, and several batches a
call stacked (k, 256, ...) and cut apart by unbatch(), as it does now (k = 10: 8 MiB a
call). No Spark, no feed: the floor of ctx.dataset's per-batch cost.

Usage: .venv/bin/python bench/generator_bench.py [--batches 2000]
"""

import argparse
import os
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=2000)
    args = ap.parse_args()
    os.sched_setaffinity(0, {0})
    import numpy as np
    import tensorflow as tf

    x = np.random.default_rng(0).random((256, 784), dtype=np.float32)
    y = np.zeros(256, np.int32)

    def gen(k: int):
        xs, ys = (x, y) if k == 1 else (np.stack([x] * k), np.stack([y] * k))
        for _ in range(args.batches // k):
            yield {"x": xs.copy(), "label": ys.copy()}  # fresh each time, as a feed's

    for k, prefetch in ((1, False), (1, True), (10, False)):
        stacked = () if k == 1 else (k,)
        sig = {"x": tf.TensorSpec(stacked + (256, 784), tf.float32),
               "label": tf.TensorSpec(stacked + (256,), tf.int32)}
        ds = tf.data.Dataset.from_generator(lambda: gen(k), output_signature=sig)
        if k > 1:
            ds = ds.unbatch()
        ds = ds.map(lambda d: (d["x"], d["label"]))
        if prefetch:
            ds = ds.prefetch(2)
        t = time.perf_counter()
        n = sum(1 for _ in ds)
        dt = time.perf_counter() - t
        print(f"{k} batch{'es' if k > 1 else ''} a call, prefetch={prefetch}: {n / dt:,.0f} "
              f"batches/s, {dt / n * 1e3:.2f} ms a batch")

if __name__ == "__main__":
    main()
