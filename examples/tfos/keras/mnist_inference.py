"""TFoS's examples/mnist/keras/mnist_inference.py, ported by its import: TFParallel runs
one independent inference process per executor; each loads the exported SavedModel,
predicts its shard of the TFRecord files and writes "label prediction" lines to
OUTPUT/part-NNNNN.

  spark-submit examples/tfos/keras/mnist_inference.py --images_labels data/mnist/tfr/test \
      --export_dir mnist_export --output predictions
"""

import argparse

import numpy as np


def inference(args, ctx):
    import tensorflow as tf

    saved_model = tf.saved_model.load(args.export_dir, tags="serve")
    predict = saved_model.signatures["serving_default"]

    def parse_tfr(example_proto):
        feature_def = {"label": tf.io.FixedLenFeature(1, tf.int64),
                       "image": tf.io.FixedLenFeature(784, tf.int64)}
        features = tf.io.parse_single_example(serialized=example_proto, features=feature_def)
        image = tf.reshape(tf.cast(features["image"], dtype=tf.float32) / 255.0, [28, 28, 1])
        return image, tf.cast(features["label"], dtype=tf.float32)

    ds = tf.data.Dataset.list_files(f"{args.images_labels}/part-*", shuffle=False)
    ds = ds.shard(ctx.num_workers, ctx.worker_num)
    ds = ds.interleave(tf.data.TFRecordDataset).map(parse_tfr).batch(10)

    tf.io.gfile.makedirs(args.output)
    with tf.io.gfile.GFile(f"{args.output}/part-{ctx.worker_num:05d}", mode="w") as out:
        for images, labels in ds:
            predictions = predict(conv2d_input=images)
            labels = np.reshape(labels, -1).astype(int)  # TFoS: np.int, gone from numpy
            preds = np.argmax(predictions["dense_1"], axis=1)
            for label, pred in zip(labels, preds):
                out.write(f"{label} {pred}\n")


if __name__ == "__main__":
    from pyspark.conf import SparkConf
    from pyspark.context import SparkContext

    from sparktf.compat import TFParallel

    sc = SparkContext(conf=SparkConf().setAppName("mnist_inference"))
    executors = sc._conf.get("spark.executor.instances")
    num_executors = int(executors) if executors is not None else 2

    parser = argparse.ArgumentParser()
    parser.add_argument("--cluster_size", type=int, default=num_executors)
    parser.add_argument("--images_labels", type=str, help="directory of TFRecord files")
    parser.add_argument("--export_dir", type=str, default="mnist_export")
    parser.add_argument("--output", type=str, default="predictions")
    args, _ = parser.parse_known_args()
    print(f"args: {args}")

    TFParallel.run(sc, inference, args, args.cluster_size)
