"""What tf.data.Dataset.from_generator costs a batch, alone on CPU 0: the path that
ctx.dataset() takes (a Python generator yielding a dict of numpy columns, then .map to a
tuple), for batches of 256 rows of 784 float32 and an int32 label, without and with
prefetch(2). No Spark, no feed: the floor of ctx.dataset's per-batch cost.

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

    def gen():
        for _ in range(args.batches):
            yield {"x": x.copy(), "label": y.copy()}  # a fresh batch each time, as a feed's

    sig = {"x": tf.TensorSpec((256, 784), tf.float32), "label": tf.TensorSpec((256,), tf.int32)}
    for prefetch in (False, True):
        ds = tf.data.Dataset.from_generator(gen, output_signature=sig).map(
            lambda d: (d["x"], d["label"]))
        if prefetch:
            ds = ds.prefetch(2)
        t = time.perf_counter()
        n = sum(1 for _ in ds)
        dt = time.perf_counter() - t
        print(f"prefetch={prefetch}: {n / dt:,.0f} batches/s, {dt / n * 1e3:.2f} ms a batch")


if __name__ == "__main__":
    main()
