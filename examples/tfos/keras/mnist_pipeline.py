"""TFoS's examples/mnist/keras/mnist_pipeline.py, ported by its import: Spark ML.

--mode train: a TFEstimator fits the DataFrame of (image, label) (from CSV, or from
TFRecords with dfutil.loadTFRecords): its cluster is fed the columns named in the input
mapping, trains a CNN with Keras under MultiWorkerMirroredStrategy and exports it.
--mode inference: a TFModel of the export predicts the DataFrame on the executors
(conv2d_input <- image, dense_1 -> prediction); the predictions are written as JSON.

  spark-submit examples/tfos/keras/mnist_pipeline.py --images_labels data/mnist/csv/train
  spark-submit examples/tfos/keras/mnist_pipeline.py --format tfr \
      --images_labels data/mnist/tfr/test --mode inference
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

    def rdd_generator():  # rows come with the input mapping's columns, in sorted order
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

    steps_per_epoch = args.num_examples / args.batch_size
    max_steps_per_worker = int(steps_per_epoch / ctx.num_workers * 0.9)
    multi_worker_model.fit(x=ds, epochs=args.epochs, steps_per_epoch=max_steps_per_worker,
                           callbacks=callbacks, verbose=2)

    compat.export_saved_model(multi_worker_model, args.export_dir, ctx.job_name == "chief")
    tf_feed.terminate()


if __name__ == "__main__":
    import argparse

    from pyspark.conf import SparkConf
    from pyspark.context import SparkContext
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf
    from pyspark.sql.types import IntegerType

    from sparktf.compat import dfutil
    from sparktf.compat.pipeline import TFEstimator, TFModel

    sc = SparkContext(conf=SparkConf().setAppName("mnist_keras"))
    spark = SparkSession(sc)
    executors = sc._conf.get("spark.executor.instances")
    num_executors = int(executors) if executors is not None else 2

    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--cluster_size", type=int, default=num_executors)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--format", choices=["csv", "tfr"], default="csv")
    parser.add_argument("--images_labels", help="the images, as --format says")
    parser.add_argument("--learning_rate", type=float, default=0.001)
    parser.add_argument("--mode", choices=["train", "inference"], default="train")
    parser.add_argument("--model_dir", default="mnist_model")
    parser.add_argument("--export_dir", default="mnist_export")
    parser.add_argument("--num_examples", type=int, default=1500, help="rows to train on")
    parser.add_argument("--output", type=str, default="predictions")
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
            .setOutputMapping({"dense_1": "prediction"}) \
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
