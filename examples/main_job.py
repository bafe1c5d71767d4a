"""sparktf main job: distributed TensorFlow training on Spark, end to end.

On an embedded multi-executor Spark (local-cluster: a master, two worker JVMs,
separate executor processes):

1. scikit-learn's digits become a Spark DataFrame (pixels, label);
2. the executors write the training rows as 4 GZIP TFRecord shards with the
   native writer (sparktf.dfutil.saveAsTFRecords); `sparktf records inspect`
   describes them and dfutil.loadTFRecords reads them back, checked row by row;
3. TFCluster.run starts a 2-worker TensorFlow cluster on the executors
   (InputMode.TENSORFLOW): each worker reads its share of the shards and trains
   a Keras model with MultiWorkerMirroredStrategy; the driver shows progress;
4. the chief exports a SavedModel, which the driver loads to predict the
   held-out digits and print the accuracy.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

N_TRAIN = 1500


def log(msg):
    print(f"[main_job {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def train(args, ctx):
    """Runs on every node, in its own process, with TF_CONFIG set."""
    os.environ["TF_USE_LEGACY_KERAS"] = "1"  # Keras 3 lacks MultiWorkerMirroredStrategy
    import tensorflow as tf

    from sparktf import data

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    spec = {"pixels": tf.io.FixedLenFeature([64], tf.float32),
            "label": tf.io.FixedLenFeature([], tf.int64)}
    global_batch = data.global_batch_size(args["batch_per_worker"], ctx)
    ds = data.tfrecord_dataset(args["data"], ctx).repeat().shuffle(2048, seed=ctx.executor_id)
    ds = ds.batch(global_batch).map(lambda b: tf.io.parse_example(b, spec))
    ds = ds.map(lambda d: (d["pixels"], d["label"])).prefetch(2)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((64,)),
                                     tf.keras.layers.Dense(64, activation="relu"),
                                     tf.keras.layers.Dense(10)])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])

    class Progress(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if ctx.is_chief:
                with open(args["progress"], "a") as f:
                    f.write(json.dumps({"epoch": epoch + 1, "loss": logs["loss"],
                                        "accuracy": logs["accuracy"]}) + "\n")

    steps = N_TRAIN // global_batch
    model.fit(ds, epochs=args["epochs"], steps_per_epoch=steps, verbose=0,
              callbacks=[Progress()])
    ctx.export_model(model, args["export"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", default=None, help="where to write (default: a temp dir)")
    ap.add_argument("--epochs", type=int, default=8)
    args = ap.parse_args()

    import numpy as np
    from pyspark.sql import SparkSession
    from sklearn.datasets import load_digits

    from sparktf import TFCluster, dfutil
    from sparktf import records as r

    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("sparktf-main")
             .config("spark.ui.enabled", "false").getOrCreate())
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    workdir = args.workdir or tempfile.mkdtemp(prefix="sparktf-main-")
    try:
        digits = load_digits()
        x = (digits.data / 16.0).astype(np.float32)
        y = digits.target.astype(np.int64)
        rows = [(i, x[i].tolist(), int(y[i])) for i in range(N_TRAIN)]
        df = spark.createDataFrame(rows, "id long, pixels array<float>, label long")
        log(f"DataFrame: {df.count()} training digits ({len(y) - N_TRAIN} held out), "
            f"master {sc.master}")

        shards = os.path.join(workdir, "digits")
        n = dfutil.saveAsTFRecords(df, shards, num_shards=4, compression="GZIP")
        log(f"saveAsTFRecords: {n} records in 4 shards under {shards}")
        cli = os.path.join(os.path.dirname(sys.executable), "sparktf")
        print(subprocess.run([cli, "records", "inspect", shards], check=True,
                             capture_output=True, text=True).stdout, flush=True)
        back = dfutil.loadTFRecords(spark, shards,
                                    schema="id long, pixels array<float>, label long")
        got = {row["id"]: row for row in back.collect()}
        assert len(got) == len(rows) and all(
            got[i]["label"] == rows[i][2] and np.allclose(got[i]["pixels"], rows[i][1])
            for i in range(len(rows)))
        log(f"loadTFRecords: {len(got)} rows read back, every row identical")

        export = os.path.join(workdir, "model")
        progress = os.path.join(workdir, "progress.jsonl")
        t0 = time.time()
        cluster = TFCluster.run(sc, train, {"data": shards, "batch_per_worker": 32,
                                            "epochs": args.epochs, "export": export,
                                            "progress": progress},
                                num_executors=2, input_mode=TFCluster.InputMode.TENSORFLOW)
        log(f"TFCluster: {cluster.cluster_spec} ready in {time.time() - t0:.1f}s; training")
        shown = 0
        while not cluster.wait(1.0):
            lines = open(progress).read().splitlines() if os.path.exists(progress) else []
            for line in lines[shown:]:
                p = json.loads(line)
                log(f"  epoch {p['epoch']}/{args.epochs}: loss {p['loss']:.3f}, "
                    f"accuracy {p['accuracy']:.3f}")
            shown = len(lines)
        for line in open(progress).read().splitlines()[shown:]:
            p = json.loads(line)
            log(f"  epoch {p['epoch']}/{args.epochs}: loss {p['loss']:.3f}, "
                f"accuracy {p['accuracy']:.3f}")
        cluster.shutdown()
        log(f"training done in {time.time() - t0:.1f}s; SavedModel at {export}")
    finally:
        spark.stop()

    import tensorflow as tf

    model = tf.saved_model.load(export)
    logits = model.serve(x[N_TRAIN:]) if hasattr(model, "serve") else model(x[N_TRAIN:])
    pred = np.argmax(np.asarray(logits), axis=1)
    acc = float((pred == y[N_TRAIN:]).mean())
    log(f"predictions for {len(pred)} held-out digits: first ten {pred[:10].tolist()} "
        f"(true {y[N_TRAIN:N_TRAIN + 10].tolist()}); accuracy {acc:.3f}")
    if acc < 0.85:
        sys.exit("main_job: accuracy below 0.85, training did not work")
    log("done")


if __name__ == "__main__":
    main()
