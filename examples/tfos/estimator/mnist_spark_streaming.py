"""TFoS's examples/mnist/estimator/mnist_spark_streaming.py, ported by its import, with
Spark Streaming's DStream (deprecated in Spark, and not fed by sparktf) replaced by
Structured Streaming, and tf.estimator (gone from TensorFlow 2.21) by the custom loop of
estimator/mnist_spark.py: every CSV file that appears in --images_labels is read as a
micro-batch, spread over the workers and fed to the running cluster, which trains to
--max_steps, ends the feed and exports the model; shutdown(query) stops the stream then.
TFoS's ParameterServerStrategy does not carry over: TF 2's runs the workers' input
pipelines from the chief, so they cannot read a Spark feed; the workers train in step
under MultiWorkerMirroredStrategy instead.

  spark-submit examples/tfos/estimator/mnist_spark_streaming.py --images_labels stream_dir
"""


def main_fun(args, ctx):
    import shutil
    import tempfile

    import numpy as np
    import tensorflow as tf

    from sparktf.compat import TFNode, compat

    strategy = tf.distribute.MultiWorkerMirroredStrategy()

    BATCH_SIZE = args.batch_size

    tf_feed = TFNode.DataFeed(ctx.mgr)

    def rdd_generator():
        while not tf_feed.should_stop():
            batch = tf_feed.next_batch(1)
            if len(batch) == 0:
                return
            pixels, label = batch[0]
            image = np.reshape(np.asarray(pixels, np.float32) / 255.0, (28, 28, 1))
            yield image, np.reshape(np.float32(label), (1,))

    def input_fn(input_context):
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
        optimizer = tf.keras.optimizers.Adam(learning_rate=args.learning_rate)
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

    is_chief = ctx.job_name == "chief"
    checkpoint_dir = args.model_dir if is_chief else tempfile.mkdtemp()
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model=model, optimizer=optimizer), checkpoint_dir,
        max_to_keep=3)
    # A stream has no end: train to max_steps (a partial batch waits for the next files).
    saved = 0
    batches = iter(strategy.distribute_datasets_from_function(input_fn))
    while int(optimizer.iterations.numpy()) < args.max_steps:
        batch = batches.get_next_as_optional()
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
    tf_feed.terminate()

    if is_chief:
        print(f"Exporting saved_model to {args.export_dir}")
    compat.export_saved_model(model, args.export_dir, is_chief)
    if not is_chief:
        shutil.rmtree(checkpoint_dir, ignore_errors=True)


if __name__ == "__main__":
    import argparse

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from sparktf.compat import TFCluster

    spark = SparkSession.builder.appName("mnist_estimator").getOrCreate()
    sc = spark.sparkContext
    executors = sc._conf.get("spark.executor.instances")
    num_executors = int(executors) if executors is not None else 2

    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--cluster_size", type=int, default=num_executors)
    parser.add_argument("--images_labels", help="a directory that CSV files will appear in")
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--max_steps", type=int, default=1000)
    parser.add_argument("--model_dir", default="mnist_model")
    parser.add_argument("--export_dir", default="mnist_export")
    parser.add_argument("--save_checkpoints_steps", type=int, default=100)
    parser.add_argument("--tensorboard", action="store_true")
    args = parser.parse_args()
    print("args:", args)

    # TFoS: ssc.textFileStream(dir).map(parse), (pixels, label) per line.
    values = F.split("value", ",").cast("array<int>")
    stream = spark.readStream.text(args.images_labels) \
        .select(F.slice(values, 2, 784).alias("image"), values[0].alias("label")) \
        .repartition(args.cluster_size)  # every micro-batch to every worker

    cluster = TFCluster.run(sc, main_fun, args, args.cluster_size, num_ps=0,
                            tensorboard=args.tensorboard, input_mode=TFCluster.InputMode.SPARK,
                            log_dir=args.model_dir, master_node="chief")
    query = cluster.train(stream, feed_timeout=86400)  # a day for data to arrive
    print(f"streaming: feeding the files that appear in {args.images_labels}", flush=True)
    cluster.shutdown(query)
