"""Remote storage benchmarks: the same records read from local disk, HDFS and S3, side by
side in one run, and sparktf's HDFS reads against Hadoop's own `hdfs dfs -cat`.

The servers run on this machine, on loopback: HDFS is Hadoop's minicluster (a NameNode
and 2 DataNodes in one JVM, scripts/minicluster.py), S3 is moto's server
(scripts/s3server.py). Each measurement is a fresh process. Read + decode runs twice:
with the reading process pinned to core 0 (taskset; its client threads then share that
core with decoding, while the servers may use both cores), and free to use both cores
(as an executor reading from remote DataNodes would). Kinds are interleaved, REPEATS
times; the tables show medians and ratios.

  read-decode  the records benchmark's file (1M ~100-byte Examples, 109 MB) to columns
               with sparktf.records.read_columns, from local disk, hdfs:// and s3://
  hdfs-read    a 512 MiB file read whole: sparktf (fs.open_input, 4 MiB reads; the
               process timed from start to exit) vs `hdfs dfs -cat FILE > /dev/null`
               (Hadoop's Java client on the minicluster's jars, also start to exit)
  tf-input     the same 1M Examples through a TensorFlow input pipeline
               (TFRecordDataset -> batch(1024) -> parse_example, AUTOTUNE, prefetch),
               TensorFlow reading hdfs:// and s3:// through sparktf's filesystem plugin,
               vs the same pipeline on local disk; and sparktf.data.tfrecord_dataset
               (one worker's share) vs tf.data.TFRecordDataset on HDFS. Reader free on
               both cores, as in a training process; the time excludes TF's import.

Usage: .venv/bin/python bench/storage_bench.py [--repeats 5] [--workdir DIR]
                                               [--sections read-decode,hdfs-read,tf-input]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "scripts"))
sys.path.insert(0, str(HERE))

RAW_SIZE = 512 << 20


def measure(kind, uri):
    """One measurement in this process; returns seconds."""
    from sparktf import fs, records as r

    if kind == "read-decode":
        schema = {"label": r.FixedLen("int64"), "x": r.FixedLen("float32", (16,))}
        t = time.perf_counter()
        cols = r.read_columns(uri, schema)
        dt = time.perf_counter() - t
        assert cols["x"].shape == (1_000_000, 16)
        return dt
    if kind == "raw-read":
        t = time.perf_counter()
        f = fs.open_input(uri)
        n = 0
        while chunk := f.read(4 << 20):
            n += len(chunk)
        f.close()
        assert n == RAW_SIZE
        return time.perf_counter() - t
    if kind in ("tf-input", "stf-input"):
        import types

        import tensorflow as tf

        import sparktf.tf  # noqa: F401 - hdfs:// and s3:// for TensorFlow
        from sparktf import data

        spec = {"label": tf.io.FixedLenFeature([], tf.int64),
                "x": tf.io.FixedLenFeature([16], tf.float32)}
        t = time.perf_counter()
        if kind == "tf-input":
            ds = tf.data.TFRecordDataset(uri)
        else:
            one_worker = types.SimpleNamespace(num_workers=1, job_name="worker", task_index=0,
                                               cluster_spec={"worker": ["localhost:0"]})
            ds = data.tfrecord_dataset(uri, one_worker)
        ds = ds.batch(1024).map(lambda b: tf.io.parse_example(b, spec),
                                num_parallel_calls=tf.data.AUTOTUNE).prefetch(4)
        n = 0
        for batch in ds:
            n += int(batch["label"].shape[0])
        dt = time.perf_counter() - t
        assert n == 1_000_000, n
        return dt
    raise ValueError(kind)


def run_one(kind, uri, env, pinned=True):
    pin = ["taskset", "-c", "0"] if pinned else []
    out = subprocess.run(pin + [sys.executable, __file__, "--one", kind, "--uri", uri],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{kind} {uri} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def timed_process(cmd, env):
    t = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--workdir", default=str(HERE / "out"))
    ap.add_argument("--sections", default="read-decode,hdfs-read,tf-input")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--uri", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps({"seconds": measure(args.one, args.uri)}))
        return

    import records_bench
    from minicluster import HdfsMiniCluster
    from s3server import MotoS3Server

    sections = args.sections.split(",")
    work = Path(args.workdir)
    small_bytes, _ = records_bench.prepare(str(work))
    local = str(work / "small.tfrecord")
    raw_local = work / "raw-512m.bin"
    if "hdfs-read" in sections and (not raw_local.exists() or
                                    raw_local.stat().st_size != RAW_SIZE):
        raw_local.write_bytes(os.urandom(RAW_SIZE))

    env_dir = work / "storage-env"
    hdfs = HdfsMiniCluster(env_dir / "hadoop-conf", datanodes=2, data_dir=env_dir / "hdfs-data",
                           block_size=128 << 20).start()
    s3 = MotoS3Server(env_dir / "aws").start()
    try:
        env = dict(os.environ, HADOOP_CONF_DIR=str(hdfs.conf_dir), **s3.env(),
                   TF_CPP_MIN_LOG_LEVEL="3")
        os.environ.update(env)
        from sparktf import fs

        uploads = [("hdfs:///bench/small.tfrecord", local),
                   (f"s3://{s3.bucket}/bench/small.tfrecord", local)]
        if "hdfs-read" in sections:
            uploads.append(("hdfs:///bench/raw-512m.bin", str(raw_local)))
        for uri, src in uploads:
            fs.write_bytes(uri, Path(src).read_bytes())

        uris = {"local": local, "hdfs": "hdfs:///bench/small.tfrecord",
                "s3": f"s3://{s3.bucket}/bench/small.tfrecord"}
        for pinned in (True, False) if "read-decode" in sections else ():
            times = {k: [] for k in uris}
            for _ in range(args.repeats):
                for k, uri in uris.items():
                    times[k].append(run_one("read-decode", uri, env, pinned))
            med = {k: statistics.median(v) for k, v in times.items()}
            where = "reader pinned to core 0" if pinned else "reader free on both cores"
            print(f"\nread + decode of {small_bytes / 1e6:.0f} MB (1M Examples) to columns, "
                  f"{where}, {args.repeats} repeats, medians")
            print("| source | median | rate | local time / this time | all runs (s) |")
            print("|---|---|---|---|---|")
            for k in uris:
                print(f"| {k} | {med[k]:.3f} s | {small_bytes / med[k] / 1e6:.0f} MB/s | "
                      f"**{med['local'] / med[k]:.2f}** | "
                      f"{', '.join(f'{x:.3f}' for x in times[k])} |", flush=True)

        if "tf-input" in sections:
            tf_input(uris, env, args.repeats, small_bytes)
        if "hdfs-read" in sections:
            hdfs_read(hdfs, env, args.repeats)
    finally:
        s3.stop()
        hdfs.stop()


def tf_input(uris, env, repeats, size):
    runs = [("tf.data.TFRecordDataset", k, "tf-input") for k in uris]
    runs.append(("sparktf.data.tfrecord_dataset", "hdfs", "stf-input"))
    times = {r: [] for r in runs}
    for _ in range(repeats):
        for r in runs:
            times[r].append(run_one(r[2], uris[r[1]], env, pinned=False))
    med = {r: statistics.median(v) for r, v in times.items()}
    local = med[runs[0]]
    print(f"\nTensorFlow input pipeline (batch 1024 + parse_example) over {size / 1e6:.0f} MB "
          f"(1M Examples), reader free on both cores, {repeats} repeats, medians")
    print("| reader | source | median | records/s | local time / this time | all runs (s) |")
    print("|---|---|---|---|---|---|")
    for r in runs:
        print(f"| {r[0]} | {r[1]} | {med[r]:.3f} s | {1e6 / med[r] / 1e3:.0f} k | "
              f"**{local / med[r]:.2f}** | {', '.join(f'{x:.3f}' for x in times[r])} |",
              flush=True)
    tf_hdfs = med[("tf.data.TFRecordDataset", "hdfs", "tf-input")]
    stf_hdfs = med[("sparktf.data.tfrecord_dataset", "hdfs", "stf-input")]
    print(f"sparktf.data.tfrecord_dataset / tf.data.TFRecordDataset on HDFS, time ratio "
          f"(tf / sparktf): **{tf_hdfs / stf_hdfs:.2f}**", flush=True)


def hdfs_read(hdfs, env, repeats):
    ours, theirs = [], []
    raw_uri = f"{hdfs.url}/bench/raw-512m.bin"
    java_cmd = ["taskset", "-c", "0", "java", "-Xmx512m", "-cp",
                __import__("minicluster").classpath(hdfs.conf_dir),
                "org.apache.hadoop.fs.FsShell", "-cat", raw_uri]
    py_cmd = ["taskset", "-c", "0", sys.executable, __file__, "--one", "raw-read",
              "--uri", raw_uri]
    for _ in range(repeats):
        ours.append(timed_process(py_cmd, env))
        theirs.append(timed_process(java_cmd, env))
    mo, mt = statistics.median(ours), statistics.median(theirs)
    print(f"\nHDFS read of 512 MiB, whole process from start to exit, pinned to core 0, "
          f"{repeats} repeats, medians")
    print("| reader | median | rate | hdfs dfs -cat time / this time | all runs (s) |")
    print("|---|---|---|---|---|")
    for name, m, v in [("sparktf (fs.open_input)", mo, ours),
                       ("hdfs dfs -cat (Hadoop 3.5.0 Java client)", mt, theirs)]:
        print(f"| {name} | {m:.3f} s | {RAW_SIZE / m / 1e6:.0f} MB/s | **{mt / m:.2f}** | "
              f"{', '.join(f'{x:.3f}' for x in v)} |", flush=True)


if __name__ == "__main__":
    main()
