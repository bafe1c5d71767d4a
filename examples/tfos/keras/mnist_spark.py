"""TFoS's examples/mnist/keras/mnist_spark.py, ported by its import: InputMode.SPARK.

Spark reads the CSV images (label,784 pixels a line) as an RDD of (pixels, label); every
worker pulls single rows through TFNode.DataFeed(ctx.mgr) into a tf.data generator and
trains a CNN with Keras under MultiWorkerMirroredStrategy; the chief exports a SavedModel
(signature input conv2d_input, output dense_1).

  spark-submit examples/tfos/keras/mnist_spark.py --images_labels data/mnist/csv/train \
      --model_dir mnist_model --export_dir mnist_export
"""


def main_fun(args, ctx):
    import numpy as np
    import tensorflow as tf

    from sparktf.compat import TFNode, compat

    strategy = tf.distribute.MultiWorkerMirroredStrategy()

    def build_and_compile_cnn_model():
        model = tf.keras.Sequential([
            tf.keras.layers.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(10, activation="softmax")])
        model.compile(loss=tf.keras.losses.sparse_categorical_crossentropy,
                      optimizer=tf.keras.optimizers.Adam(learning_rate=args.learning_rate),
                      metrics=["accuracy"])
        return model

    tf_feed = TFNode.DataFeed(ctx.mgr, False)

    def rdd_generator():
        while not tf_feed.should_stop():
            batch = tf_feed.next_batch(1)
            if len(batch) == 0:
                return
            pixels, label = batch[0]
            image = np.reshape(np.asarray(pixels, np.float32) / 255.0, (28, 28, 1))
            yield image, np.reshape(np.float32(label), (1,))

    ds = tf.data.Dataset.from_generator(
        rdd_generator, (tf.float32, tf.float32),
        (tf.TensorShape([28, 28, 1]), tf.TensorShape([1]))).batch(args.batch_size)

    tf.io.gfile.makedirs(args.model_dir)
    callbacks = [tf.keras.callbacks.ModelCheckpoint(
        filepath=args.model_dir + "/weights-{epoch:04d}", save_weights_only=True)]
    with strategy.scope():
        multi_worker_model = build_and_compile_cnn_model()

    # MultiWorkerMirroredStrategy is synchronous: stop at 90% of the steps the fed rows
    # allow, so that no worker runs out of data before the others (as TFoS's example does).
    steps_per_epoch = args.num_examples / args.batch_size
    max_steps_per_worker = int(steps_per_epoch / ctx.num_workers * 0.9)
    multi_worker_model.fit(x=ds, epochs=args.epochs, steps_per_epoch=max_steps_per_worker,
                           callbacks=callbacks, verbose=2)

    compat.export_saved_model(multi_worker_model, args.export_dir, ctx.job_name == "chief")
    tf_feed.terminate()  # Spark skips the partitions that are still to be fed


if __name__ == "__main__":
    import argparse

    from pyspark.conf import SparkConf
    from pyspark.context import SparkContext

    from sparktf.compat import TFCluster

    sc = SparkContext(conf=SparkConf().setAppName("mnist_keras"))
    executors = sc._conf.get("spark.executor.instances")
    num_executors = int(executors) if executors is not None else 2

    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--cluster_size", type=int, default=num_executors)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--images_labels", help="the CSV images (mnist_data_setup.py)")
    parser.add_argument("--learning_rate", type=float, default=0.001)
    parser.add_argument("--model_dir", default="mnist_model")
    parser.add_argument("--export_dir", default="mnist_export")
    parser.add_argument("--num_examples", type=int, default=1500, help="rows in images_labels")
    parser.add_argument("--tensorboard", action="store_true")
    args = parser.parse_args()
    print("args:", args)

    def parse(ln):
        vec = [int(x) for x in ln.split(",")]
        return (vec[1:], vec[0])

    images_labels = sc.textFile(args.images_labels).map(parse)

    cluster = TFCluster.run(sc, main_fun, args, args.cluster_size, num_ps=0,
                            tensorboard=args.tensorboard,
                            input_mode=TFCluster.InputMode.SPARK, master_node="chief")
    cluster.train(images_labels, args.epochs)
    cluster.shutdown()
