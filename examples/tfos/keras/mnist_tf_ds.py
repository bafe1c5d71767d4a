"""TFoS's examples/mnist/keras/mnist_tf_ds.py, ported by its import: InputMode.TENSORFLOW,
each node reading the TFRecords itself (local disk, hdfs:// or s3://) with tf.data, in
TFoS's own format (--data_format tfos: image as 784 int64, label as 1 int64) or in
tensorflow_datasets' (--data_format tfds: image as a PNG, label as 1 int64).

  spark-submit examples/tfos/keras/mnist_tf_ds.py --images_labels "data/mnist/tfr/train/part-*"
"""


def main_fun(args, ctx):
    import tensorflow as tf

    from sparktf.compat import compat

    strategy = tf.distribute.MultiWorkerMirroredStrategy()

    BUFFER_SIZE = args.buffer_size
    BATCH_SIZE = args.batch_size
    NUM_WORKERS = args.cluster_size

    def parse_tfds(x):
        feature_def = {"label": tf.io.FixedLenFeature(1, tf.int64),
                       "image": tf.io.VarLenFeature(tf.string)}
        example = tf.io.parse_single_example(x, feature_def)
        image = tf.io.decode_image(example["image"].values[0]) / 255
        image.set_shape([28, 28, 1])
        return image, example["label"]

    def parse_tfos(example_proto):
        feature_def = {"label": tf.io.FixedLenFeature(1, tf.int64),
                       "image": tf.io.FixedLenFeature(28 * 28 * 1, tf.int64)}
        features = tf.io.parse_single_example(example_proto, feature_def)
        image = tf.reshape(tf.cast(features["image"], tf.float32) / 255, (28, 28, 1))
        return image, features["label"]

    image_pattern = ctx.absolute_path(args.images_labels)
    ds = tf.data.Dataset.list_files(image_pattern)
    ds = ds.repeat(args.epochs).shuffle(BUFFER_SIZE)
    ds = ds.interleave(tf.data.TFRecordDataset)
    parse = parse_tfds if args.data_format == "tfds" else parse_tfos
    train_datasets_unbatched = ds.map(parse)

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

    GLOBAL_BATCH_SIZE = BATCH_SIZE * NUM_WORKERS
    train_datasets = train_datasets_unbatched.batch(GLOBAL_BATCH_SIZE)

    tf.io.gfile.makedirs(args.model_dir)
    callbacks = [tf.keras.callbacks.ModelCheckpoint(
        filepath=args.model_dir + "/weights-{epoch:04d}", save_weights_only=True)]
    # The files are sharded between the workers (AUTO sharding by FILE): each sees about
    # 1/NUM_WORKERS of the examples per epoch.
    steps_per_epoch = args.num_examples // GLOBAL_BATCH_SIZE
    with strategy.scope():
        multi_worker_model = build_and_compile_cnn_model()
    multi_worker_model.fit(x=train_datasets, epochs=args.epochs, steps_per_epoch=steps_per_epoch,
                           callbacks=callbacks, verbose=2)

    compat.export_saved_model(multi_worker_model, args.export_dir, ctx.job_name == "chief")


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
    parser.add_argument("--buffer_size", type=int, default=10000)
    parser.add_argument("--cluster_size", type=int, default=num_executors)
    parser.add_argument("--data_format", choices=["tfos", "tfds"], default="tfos")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--images_labels", help="a glob of TFRecord files")
    parser.add_argument("--learning_rate", type=float, default=0.001)
    parser.add_argument("--model_dir", default="mnist_model")
    parser.add_argument("--export_dir", default="mnist_export")
    parser.add_argument("--num_examples", type=int, default=1500, help="examples in the files")
    parser.add_argument("--tensorboard", action="store_true")
    args = parser.parse_args()
    print("args:", args)

    cluster = TFCluster.run(sc, main_fun, args, args.cluster_size, num_ps=0,
                            tensorboard=args.tensorboard,
                            input_mode=TFCluster.InputMode.TENSORFLOW, master_node="chief")
    cluster.shutdown()
