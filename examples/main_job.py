"""sparktf main job (records stage): Spark DataFrame -> TFRecords -> TensorFlow.

Runs on an embedded multi-executor Spark (local-cluster: a master, two worker
JVMs, separate executor processes):

1. scikit-learn's digits become a Spark DataFrame (pixels, label);
2. executors write it as 4 GZIP TFRecord shards with the native writer
   (sparktf.dfutil.saveAsTFRecords);
3. `sparktf records inspect` describes the shards;
4. dfutil.loadTFRecords reads them back as a DataFrame and checks every row;
5. TensorFlow reads the shards with tf.data and trains a small Keras model,
   then reports accuracy on held-out digits.

The cluster runtime (TFCluster, distributed training) replaces step 5 later.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def log(msg):
    print(f"[main_job {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", default=None, help="where to write shards (default: a temp dir)")
    ap.add_argument("--epochs", type=int, default=15)
    args = ap.parse_args()

    import numpy as np
    from pyspark.sql import SparkSession
    from sklearn.datasets import load_digits

    from sparktf import dfutil
    from sparktf import records as r

    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("sparktf-main")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    workdir = args.workdir or tempfile.mkdtemp(prefix="sparktf-main-")
    try:
        digits = load_digits()
        x = (digits.data / 16.0).astype(np.float32)
        y = digits.target.astype(np.int64)
        rows = [(i, x[i].tolist(), int(y[i])) for i in range(len(y))]
        df = spark.createDataFrame(rows, "id long, pixels array<float>, label long")
        log(f"DataFrame: {df.count()} digits, {df.rdd.getNumPartitions()} partitions, "
            f"master {spark.sparkContext.master}")

        out = os.path.join(workdir, "digits")
        t0 = time.time()
        n = dfutil.saveAsTFRecords(df, out, num_shards=4, compression="GZIP")
        log(f"saveAsTFRecords: {n} records in 4 shards under {out} ({time.time() - t0:.1f}s)")

        cli = os.path.join(os.path.dirname(sys.executable), "sparktf")
        print(subprocess.run([cli, "records", "inspect", out], check=True,
                             capture_output=True, text=True).stdout, flush=True)

        back = dfutil.loadTFRecords(spark, out, schema="id long, pixels array<float>, "
                                                       "label long")
        got = {row["id"]: row for row in back.collect()}
        assert len(got) == len(rows), (len(got), len(rows))
        assert all(got[i]["label"] == rows[i][2] and
                   np.allclose(got[i]["pixels"], rows[i][1]) for i in range(len(rows)))
        log(f"loadTFRecords: {len(got)} rows read back, every row identical")
    finally:
        spark.stop()

    import tensorflow as tf

    files = r.list_files(out)
    train_files, test_files = files[:3], files[3:]
    spec = {"pixels": tf.io.FixedLenFeature([64], tf.float32),
            "label": tf.io.FixedLenFeature([], tf.int64)}

    def dataset(paths, shuffle):
        ds = tf.data.TFRecordDataset(paths, compression_type="GZIP")
        if shuffle:
            ds = ds.shuffle(2048, seed=1)
        ds = ds.batch(64).map(lambda b: tf.io.parse_example(b, spec))
        return ds.map(lambda d: (d["pixels"], d["label"])).prefetch(2)

    tf.keras.utils.set_random_seed(1)
    model = tf.keras.Sequential([tf.keras.Input((64,)),
                                 tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(10)])
    model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    hist = model.fit(dataset(train_files, True), epochs=args.epochs, verbose=0)
    loss = hist.history["loss"]
    _, acc = model.evaluate(dataset(test_files, False), verbose=0)
    log(f"trained {args.epochs} epochs on {len(train_files)} shards: loss {loss[0]:.3f} -> "
        f"{loss[-1]:.3f}; held-out accuracy {acc:.3f} on shard {os.path.basename(test_files[0])}")
    if not (loss[-1] < loss[0] and acc > 0.85):
        sys.exit("main_job: training did not converge as expected")
    log("done")


if __name__ == "__main__":
    main()
