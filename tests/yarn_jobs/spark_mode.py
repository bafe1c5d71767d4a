"""A job for tests/test_yarn.py: InputMode.SPARK on YARN. A 2-worker MultiWorkerMirrored
Keras model trains on scikit-learn's digits fed from an RDD, the chief exports it to
HDFS; a second cluster loads it and answers cluster.inference for the held-out digits.
Every node records where it runs (container, session, ancestors, the sessions of the
TensorBoard its agent started: the chief runs one) to HDFS. Prints a JSON
line starting with RESULT."""

import argparse
import json
import time

from pyspark.sql import SparkSession

from sparktf import TFCluster


def where_am_i(ctx, out_uri):
    """Records this TF process's container and whether YARN's process tree of it holds us:
    the session leader (what YARN adopts orphans into) is the container's launch process."""
    import os
    import socket

    from sparktf import fs

    container = os.environ.get("CONTAINER_ID", "")
    sid = os.getsid(0)
    with open(f"/proc/{sid}/cmdline", "rb") as f:
        leader = f.read().decode(errors="replace")
    ancestors, pid = [], os.getppid()
    while pid > 1 and len(ancestors) < 12:
        with open(f"/proc/{pid}/comm") as f:
            ancestors.append(f.read().strip())
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    info = {"container": container, "host": socket.gethostname(), "pid": os.getpid(),
            "session": sid,
            "session_is_container": bool(container) and container in leader,
            "ancestors": ancestors, "job_name": ctx.job_name, "task_index": ctx.task_index,
            "tensorboard_sessions": tensorboard_sessions(os.getppid(), ctx.is_chief)}
    fs.write_bytes(f"{out_uri}/{ctx.executor_id}.json", json.dumps(info).encode())


def tensorboard_sessions(agent_pid, expected, wait=30.0):
    """Session ids of the TensorBoard processes that this node's agent started (waiting up
    to `wait` s for one where one is `expected`)."""
    import os

    deadline = time.monotonic() + wait
    while True:
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read()
                if ppid == agent_pid and b"tensorboard" in cmdline:
                    found.append(os.getsid(int(pid)))
            except OSError:
                continue
        if found or not expected or time.monotonic() >= deadline:
            return found
        time.sleep(0.5)


def fetch(url, wait=60.0):
    """HTTP status of `url`, retried while TensorBoard starts."""
    import urllib.request

    deadline = time.monotonic() + wait
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return r.status
        except OSError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(1)


def train(args, ctx):
    import os

    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tensorflow as tf

    where_am_i(ctx, args["where"] + "/train")
    tf.keras.utils.set_random_seed(0)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    dist = strategy.distribute_datasets_from_function(lambda _: ctx.dataset(args["batch"]))
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((64,)),
                                     tf.keras.layers.Dense(64, activation="relu"),
                                     tf.keras.layers.Dense(10)])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(dist, epochs=1, steps_per_epoch=ctx.UNTIL_END_OF_FEED, verbose=0)
    ctx.export_model(model, args["export"])


def infer(args, ctx):
    import numpy as np
    import tensorflow as tf

    where_am_i(ctx, args["where"] + "/infer")
    model = tf.saved_model.load(args["export"])
    serve = model.signatures["serving_default"]
    feed = ctx.get_data_feed(train_mode=False)
    while not feed.should_stop():
        batch = feed.next_batch(64)
        if len(batch):
            x = tf.constant(np.asarray(batch, np.float32))
            logits = list(serve(x).values())[0].numpy()
            feed.batch_results([int(i) for i in np.argmax(logits, axis=1)])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base", required=True, help="an hdfs:// directory for the job")
    p.add_argument("--epochs", type=int, default=8)
    a = p.parse_args()
    import numpy as np
    from sklearn.datasets import load_digits

    from sparktf import fs

    spark = SparkSession.builder.appName("sparktf-spark-mode").getOrCreate()
    sc = spark.sparkContext
    d = load_digits()
    x, y = (d.data / 16.0).astype(np.float32), d.target.astype(np.int64)
    tx, ty = x[1500:], y[1500:]
    args = {"batch": 32, "where": f"{a.base}/where", "export": f"{a.base}/export"}
    t0 = time.monotonic()
    cluster = TFCluster.run(sc, train, args, 2, input_mode=TFCluster.InputMode.SPARK,
                            tensorboard=True, log_dir=f"{a.base}/tensorboard")
    tensorboard = {"url": cluster.tensorboard_url()}
    tensorboard["status"] = fetch(tensorboard["url"]) if tensorboard["url"] else None
    cluster.train(sc.parallelize(list(zip(x[:1500].tolist(), y[:1500].tolist())), 4),
                  num_epochs=a.epochs)
    cluster.shutdown(timeout=600)
    trained = time.monotonic() - t0
    cluster = TFCluster.run(sc, infer, args, 2, input_mode=TFCluster.InputMode.SPARK)
    test = sc.parallelize(tx.tolist(), 3)
    predictions = cluster.inference(test).collect()
    cluster.shutdown(timeout=300)
    where = {stage: [json.loads(fs.read_bytes(u)) for u in sorted(
        fs.glob(f"{a.base}/where/{stage}/*.json"))] for stage in ("train", "infer")}
    result = {"trained_seconds": trained, "predictions": len(predictions),
              "test_rows": len(tx), "accuracy": float((np.asarray(predictions) == ty).mean()),
              "where": where, "tensorboard": tensorboard}
    print("RESULT " + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
