"""MNIST-shaped data for the TensorFlowOnSpark-style examples, made from the handwritten
digits that scikit-learn ships (MNIST itself cannot be downloaded here).

Each 8x8 digit (values 0..16) is scaled up 3x to 24x24, framed to 28x28 and stretched to
0..255, so that every example reads it exactly as TFoS's examples read MNIST:

  OUTPUT/csv/{train,test}/part-*   text, one image a line: label,784 comma-separated pixels
  OUTPUT/tfr/{train,test}/part-*   TFRecords of tf.train.Example: image (784 int64),
                                   label (1 int64), as TFoS's mnist_data_setup.py writes
  OUTPUT/npz/{train,test}.npz      numpy arrays image (N, 28, 28, 1) uint8 and label (N,),
                                   standing in for tensorflow_datasets' mnist (mnist_tf.py)

The first TRAIN_DIGITS digits are the training set (repeated --repeat times), the others
the test set.

  spark-submit examples/tfos/mnist_data_setup.py --output data/mnist
"""

import argparse
import os

import numpy as np

TRAIN_DIGITS = 1500


def mnist_shaped_digits():
    """(images (1797, 28, 28) uint8 in 0..255, labels (1797,) int64)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    big = np.kron(digits.images, np.ones((3, 3)))           # (N, 24, 24), 0..16
    framed = np.pad(big, ((0, 0), (2, 2), (2, 2)))          # (N, 28, 28)
    return np.round(framed * (255.0 / 16.0)).astype(np.uint8), digits.target.astype(np.int64)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", default="data/mnist", help="directory to write under")
    parser.add_argument("--num_partitions", type=int, default=4, help="files per split")
    parser.add_argument("--repeat", type=int, default=1, help="copies of the training set")
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    from sparktf import dfutil

    spark = SparkSession.builder.appName("mnist_data_setup").getOrCreate()
    images, labels = mnist_shaped_digits()
    splits = {"train": (np.tile(images[:TRAIN_DIGITS], (args.repeat, 1, 1)),
                        np.tile(labels[:TRAIN_DIGITS], args.repeat)),
              "test": (images[TRAIN_DIGITS:], labels[TRAIN_DIGITS:])}
    os.makedirs(os.path.join(args.output, "npz"), exist_ok=True)
    for name, (x, y) in splits.items():
        np.savez(os.path.join(args.output, "npz", f"{name}.npz"), image=x[..., None], label=y)
        rows = [(int(label), image.reshape(784).astype(int).tolist())
                for image, label in zip(x, y)]
        text = spark.sparkContext.parallelize(rows, args.num_partitions).map(
            lambda r: ",".join(map(str, [r[0], *r[1]])))
        text.saveAsTextFile(os.path.join(args.output, "csv", name))
        df = spark.createDataFrame(rows, "label bigint, image array<bigint>")
        dfutil.saveAsTFRecords(df.repartition(args.num_partitions),
                               os.path.join(args.output, "tfr", name))
        print(f"mnist_data_setup: {name}: {len(rows)} images")
    spark.stop()


if __name__ == "__main__":
    main()
