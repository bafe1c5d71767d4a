"""TFoS's examples/mnist/estimator/mnist_pipeline.py, ported by its import: Spark ML with
the estimator-style training of estimator/mnist_spark.py (tf.estimator is gone from
TensorFlow 2.21) as the TFEstimator's main_fun, and a TFModel that predicts with the
export's conv2d_input -> logits.

  spark-submit examples/tfos/estimator/mnist_pipeline.py --images_labels data/mnist/csv/train
  spark-submit examples/tfos/estimator/mnist_pipeline.py --format tfr \
      --images_labels data/mnist/tfr/test --mode inference
"""


def main_fun(args, ctx):
    import shutil
    import tempfile

    import numpy as np
    import tensorflow as tf

    from sparktf.compat import TFNode, compat

    strategy = tf.distribute.MultiWorkerMirroredStrategy()

    BATCH_SIZE = args.batch_size
    LEARNING_RATE = args.learning_rate

    tf_feed = TFNode.DataFeed(ctx.mgr)

    def rdd_generator():
        while not tf_feed.should_stop():
            batch = tf_feed.next_batch(1)
            if len(batch) == 0:
                return
            pixels, label = batch[0]
            image = np.reshape(np.asarray(pixels, np.float32) / 255.0, (28, 28, 1))
            yield image, np.reshape(np.float32(label), (1,))

    def input_fn(input_context):  # this worker's own feed: no sharding
        ds = tf.data.Dataset.from_generator(
            rdd_generator, (tf.float32, tf.float32),
            (tf.TensorShape([28, 28, 1]), tf.TensorShape([1])))
        return ds.batch(BATCH_SIZE)

    def model_fn():
        inputs = tf.keras.Input((28, 28, 1), name="conv2d_input")
        x = tf.keras.layers.Conv2D(32, 3, activation="relu")(inputs)
        x = tf.keras.layers.MaxPooling2D()(x)
        x = tf.keras.layers.Flatten()(x)
        x = tf.keras.layers.Dense(64, activation="relu")(x)
        return tf.keras.Model(inputs, tf.keras.layers.Dense(10, name="logits")(x))

    with strategy.scope():
        model = model_fn()
        optimizer = tf.keras.optimizers.Adam(learning_rate=LEARNING_RATE)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=tf.keras.losses.Reduction.NONE)
    global_batch_size = BATCH_SIZE * ctx.num_workers

    @tf.function
    def train_step(images, labels):
        def step(images, labels):
            with tf.GradientTape() as tape:
                loss = tf.nn.compute_average_loss(loss_fn(labels, model(images, training=True)),
                                                  global_batch_size=global_batch_size)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        losses = strategy.run(step, args=(images, labels))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    # Checkpoints: the chief's in model_dir, the other workers' (which MWMS needs them to
    # write too) in a directory of their own that is dropped.
    is_chief = ctx.job_name == "chief"
    checkpoint_dir = args.model_dir if is_chief else tempfile.mkdtemp()
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model=model, optimizer=optimizer), checkpoint_dir,
        max_to_keep=3)

    # Synchronous training: stop at 90% of the steps the fed rows allow (TFoS's example).
    steps = args.num_examples * args.epochs / BATCH_SIZE
    max_steps_per_worker = int(steps / ctx.num_workers * 0.9)
    saved = 0
    batches = iter(strategy.distribute_datasets_from_function(input_fn))
    while int(optimizer.iterations.numpy()) < max_steps_per_worker:
        batch = batches.get_next_as_optional()  # the same answer on every worker
        if not batch.has_value():
            break
        train_step(*batch.get_value())
        step = int(optimizer.iterations.numpy())
        if step - saved >= args.save_checkpoints_steps:  # save_checkpoints_steps
            manager.save(checkpoint_number=step)
            saved = step
    step = int(optimizer.iterations.numpy())
    if step != saved:
        manager.save(checkpoint_number=step)  # the last step's
    print(f"{ctx.job_name}:{ctx.task_index}: trained {int(optimizer.iterations.numpy())} steps")
    tf_feed.terminate()  # the StopFeedHook

    compat.export_saved_model(model, args.export_dir, is_chief)
    if not is_chief:
        shutil.rmtree(checkpoint_dir, ignore_errors=True)


if __name__ == "__main__":
    import argparse

    from pyspark.conf import SparkConf
    from pyspark.context import SparkContext
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf
    from pyspark.sql.types import IntegerType

    from sparktf.compat import dfutil
    from sparktf.compat.pipeline import TFEstimator, TFModel

    sc = SparkContext(conf=SparkConf().setAppName("mnist_estimator"))
    spark = SparkSession(sc)
    executors = sc._conf.get("spark.executor.instances")
    num_executors = int(executors) if executors is not None else 2

    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--cluster_size", type=int, default=num_executors)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--format", choices=["csv", "tfr"], default="csv")
    parser.add_argument("--images_labels", help="the images, as --format says")
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--mode", choices=["train", "inference"], default="train")
    parser.add_argument("--model_dir", default="mnist_model")
    parser.add_argument("--export_dir", default="mnist_export")
    parser.add_argument("--num_examples", type=int, default=1500, help="rows to train on")
    parser.add_argument("--output", type=str, default="predictions")
    parser.add_argument("--save_checkpoints_steps", type=int, default=100)
    parser.add_argument("--tensorboard", action="store_true")
    args = parser.parse_args()
    print("args:", args)

    if args.format == "tfr":
        df = dfutil.loadTFRecords(sc, args.images_labels)
    else:
        def parse(ln):
            vec = [int(x) for x in ln.split(",")]
            return (vec[1:], vec[0])

        images_labels = sc.textFile(args.images_labels).map(parse)
        df = spark.createDataFrame(images_labels, ["image", "label"])
    df.show(3)

    if args.mode == "train":
        estimator = TFEstimator(main_fun, args) \
            .setInputMapping({"image": "image", "label": "label"}) \
            .setModelDir(args.model_dir) \
            .setExportDir(args.export_dir) \
            .setClusterSize(args.cluster_size) \
            .setTensorboard(args.tensorboard) \
            .setEpochs(args.epochs) \
            .setBatchSize(args.batch_size) \
            .setGraceSecs(60)
        model = estimator.fit(df)
    else:
        model = TFModel(args) \
            .setInputMapping({"image": "conv2d_input"}) \
            .setOutputMapping({"logits": "prediction"}) \
            .setSignatureDefKey("serving_default") \
            .setExportDir(args.export_dir) \
            .setBatchSize(args.batch_size)

        def argmax_fn(scores):
            return max(range(len(scores)), key=lambda i: scores[i])

        argmax = udf(argmax_fn, IntegerType())
        # The pixels go in as they are (0..255) though training scaled them, as in TFoS.
        preds = model.transform(df).withColumn("argmax", argmax("prediction"))
        preds.show(3)
        preds.write.json(args.output)
