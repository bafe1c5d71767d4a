"""TFRecord / Example benchmarks: sparktf vs TensorFlow, side by side.

Every measurement runs in a fresh subprocess pinned to one core (taskset),
alternating sparktf and the alternative, REPEATS times; the table shows
medians and their ratio. Data is generated into --workdir (reused if present).

  write-small   1M ~100-byte records from a Python loop: sparktf TFRecordWriter.write
                vs tf.io.TFRecordWriter.write (and sparktf write_many, one call)
  write-large   10k 100-KB records, same
  read-decode   1M Examples -> columns: sparktf read_columns vs
                tf.data.TFRecordDataset.batch(1024) + tf.io.parse_example
  framing       read + CRC-check every record of a 1-GB file (10k x 100 KB),
                vs a plain read of the same file in 1-MiB chunks (the limit)

Usage: .venv/bin/python bench/records_bench.py [--repeats 5] [--workdir DIR]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SMALL_N, LARGE_N, LARGE_SIZE = 1_000_000, 10_000, 100_000


def small_example(i):
    from sparktf import records as r
    return r.encode_example({"label": i % 10, "x": [float(i % 97)] * 16})


# ---- one measurement per subprocess -------------------------------------------

def measure(kind, workdir):
    """Runs one measurement in this process; returns seconds."""
    if kind.startswith("write"):
        recs = _load_records(workdir, kind.split(":")[1])
        out = os.path.join(workdir, "out.tfrecord")
        impl = kind.split(":")[2]
        if impl == "tf":
            import tensorflow as tf
            t = time.perf_counter()
            with tf.io.TFRecordWriter(out) as w:
                for rec in recs:
                    w.write(rec)
        else:
            from sparktf import records as r
            t = time.perf_counter()
            with r.TFRecordWriter(out) as w:
                if impl == "sparktf-many":
                    w.write_many(recs)
                else:
                    write = w.write
                    for rec in recs:
                        write(rec)
        dt = time.perf_counter() - t
        os.unlink(out)
        return dt
    if kind == "read:sparktf":
        from sparktf import records as r
        schema = {"label": r.FixedLen("int64"), "x": r.FixedLen("float32", (16,))}
        t = time.perf_counter()
        cols = r.read_columns(os.path.join(workdir, "small.tfrecord"), schema)
        assert cols["x"].shape == (SMALL_N, 16)
        return time.perf_counter() - t
    if kind == "read:tf":
        import tensorflow as tf
        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf.config.threading.set_intra_op_parallelism_threads(1)
        spec = {"label": tf.io.FixedLenFeature([], tf.int64),
                "x": tf.io.FixedLenFeature([16], tf.float32)}
        opts = tf.data.Options()
        opts.threading.private_threadpool_size = 1
        opts.threading.max_intra_op_parallelism = 1
        ds = tf.data.TFRecordDataset(os.path.join(workdir, "small.tfrecord"),
                                     buffer_size=1 << 20).batch(1024)
        ds = ds.map(lambda b: tf.io.parse_example(b, spec)).with_options(opts)
        t = time.perf_counter()
        n = 0
        for batch in ds:
            n += int(batch["label"].shape[0])
        assert n == SMALL_N
        return time.perf_counter() - t
    if kind == "framing:sparktf":
        from sparktf import _native
        t = time.perf_counter()
        n = _native.count_records([os.path.join(workdir, "large.tfrecord")], "", True)
        assert n == LARGE_N
        return time.perf_counter() - t
    if kind == "framing:plain":
        buf = bytearray(1 << 20)
        t = time.perf_counter()
        with open(os.path.join(workdir, "large.tfrecord"), "rb", buffering=0) as f:
            while f.readinto(buf):
                pass
        return time.perf_counter() - t
    raise ValueError(kind)


def _load_records(workdir, which):
    from sparktf import records as r
    return list(r.iter_records(os.path.join(workdir, f"{which}.tfrecord")))


# ---- driver ---------------------------------------------------------------------

def prepare(workdir):
    from sparktf import records as r
    os.makedirs(workdir, exist_ok=True)
    small = os.path.join(workdir, "small.tfrecord")
    if not os.path.exists(small):
        with r.TFRecordWriter(small) as w:
            w.write_many([small_example(i) for i in range(SMALL_N)])
    large = os.path.join(workdir, "large.tfrecord")
    if not os.path.exists(large):
        rng = os.urandom
        with r.TFRecordWriter(large) as w:
            for _ in range(LARGE_N):
                w.write(rng(LARGE_SIZE))
    return os.path.getsize(small), os.path.getsize(large)


def run_one(kind, workdir):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    out = subprocess.run(["taskset", "-c", "0", sys.executable, __file__, "--one", kind,
                          "--workdir", workdir], capture_output=True, text=True, env=env,
                         check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{kind} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--workdir", default=os.path.join(os.path.dirname(__file__), "out"))
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps({"seconds": measure(args.one, args.workdir)}))
        return

    small_bytes, large_bytes = prepare(args.workdir)
    pairs = [
        ("write 1M x ~100 B, per-record loop", "write:small:sparktf", "write:small:tf",
         SMALL_N, small_bytes),
        ("write 1M x ~100 B, sparktf write_many", "write:small:sparktf-many",
         "write:small:tf", SMALL_N, small_bytes),
        ("write 10k x 100 KB, per-record loop", "write:large:sparktf", "write:large:tf",
         LARGE_N, large_bytes),
        ("read + decode 1M Examples to columns", "read:sparktf", "read:tf", SMALL_N,
         small_bytes),
        ("framing read 1 GB vs plain read", "framing:sparktf", "framing:plain", LARGE_N,
         large_bytes),
    ]
    print(f"one core each (taskset -c 0), {args.repeats} repeats, medians; "
          f"small file {small_bytes / 1e6:.0f} MB, large file {large_bytes / 1e9:.2f} GB")
    print("| benchmark | sparktf | alternative | alternative / sparktf time |")
    print("|---|---|---|---|")
    for label, ours, theirs, n, nbytes in pairs:
        a, b = [], []
        for _ in range(args.repeats):
            a.append(run_one(ours, args.workdir))
            b.append(run_one(theirs, args.workdir))
        ma, mb = statistics.median(a), statistics.median(b)

        def rate(s):
            return f"{s:.3f} s ({n / s / 1e6:.2f} M rec/s, {nbytes / s / 1e9:.2f} GB/s)"
        print(f"| {label} | {rate(ma)} | {theirs.split(':')[-1]}: {rate(mb)} | "
              f"**{mb / ma:.2f}x** |", flush=True)


if __name__ == "__main__":
    main()
