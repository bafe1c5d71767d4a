"""TFoS's examples/mnist/keras/mnist_tf.py, ported by its import: InputMode.TENSORFLOW.

Every node reads the whole training set itself (TFoS: tensorflow_datasets' mnist, which
cannot be downloaded here; this port: the numpy arrays mnist_data_setup.py writes), lets
MultiWorkerMirroredStrategy shard it by DATA and trains a CNN with Keras; checkpoints and
TensorBoard logs go to --model_dir, the chief exports a SavedModel.

  spark-submit examples/tfos/keras/mnist_tf.py --images_labels data/mnist/npz/train.npz
"""


def main_fun(args, ctx):
    import numpy as np
    import tensorflow as tf

    from sparktf.compat import compat

    strategy = tf.distribute.MultiWorkerMirroredStrategy()

    BUFFER_SIZE = args.buffer_size
    BATCH_SIZE = args.batch_size
    NUM_WORKERS = args.cluster_size

    def scale(image, label):  # (0, 255] to (0., 1.]
        return tf.cast(image, tf.float32) / 255, label

    with tf.io.gfile.GFile(ctx.absolute_path(args.images_labels), "rb") as f, \
            np.load(f) as data:
        datasets = tf.data.Dataset.from_tensor_slices((data["image"], data["label"]))
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    train_datasets_unbatched = datasets.with_options(options).repeat().map(scale) \
        .shuffle(BUFFER_SIZE)

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

    # tf.data's batch is the global batch under MultiWorkerMirroredStrategy.
    GLOBAL_BATCH_SIZE = BATCH_SIZE * NUM_WORKERS
    train_datasets = train_datasets_unbatched.batch(GLOBAL_BATCH_SIZE)

    tf.io.gfile.makedirs(args.model_dir)
    callbacks = [
        tf.keras.callbacks.ModelCheckpoint(filepath=args.model_dir + "/weights-{epoch:04d}",
                                           save_weights_only=True),
        tf.keras.callbacks.TensorBoard(log_dir=args.model_dir)]
    with strategy.scope():
        multi_worker_model = build_and_compile_cnn_model()
    multi_worker_model.fit(x=train_datasets, epochs=args.epochs,
                           steps_per_epoch=args.steps_per_epoch, callbacks=callbacks, verbose=2)

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
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--images_labels", help="train.npz of mnist_data_setup.py")
    parser.add_argument("--learning_rate", type=float, default=0.001)
    parser.add_argument("--model_dir", default="mnist_model")
    parser.add_argument("--export_dir", default="mnist_export")
    parser.add_argument("--steps_per_epoch", type=int, default=12)
    parser.add_argument("--tensorboard", action="store_true")
    args = parser.parse_args()
    print("args:", args)

    cluster = TFCluster.run(sc, main_fun, args, args.cluster_size, num_ps=0,
                            tensorboard=args.tensorboard,
                            input_mode=TFCluster.InputMode.TENSORFLOW, master_node="chief",
                            log_dir=args.model_dir)
    cluster.shutdown()
