"""TFoS's examples/mnist/estimator/mnist_tf.py, ported by its import: InputMode.TENSORFLOW
with an evaluator node (eval_node=True). tf.estimator's train_and_evaluate is gone from
TensorFlow 2.21; in its place the chief and workers train (custom loop under
MultiWorkerMirroredStrategy, a checkpoint every --save_checkpoints_steps) and the
evaluator evaluates each checkpoint as it appears, writing its accuracy to
MODEL_DIR/eval/results.jsonl, until it has evaluated the last one. shutdown(grace_secs)
gives it that time once the workers are done.

  spark-submit examples/tfos/estimator/mnist_tf.py --images_labels data/mnist/npz
"""


def main_fun(args, ctx):
    import json
    import shutil
    import tempfile

    import numpy as np
    import tensorflow as tf

    BUFFER_SIZE = args.buffer_size
    BATCH_SIZE = args.batch_size

    def load(split):  # tensorflow_datasets' mnist stands here (it cannot be downloaded)
        path = ctx.absolute_path(f"{args.images_labels}/{split}.npz")
        with tf.io.gfile.GFile(path, "rb") as f, np.load(f) as d:
            return d["image"].astype(np.float32) / 255.0, d["label"]

    def model_fn():
        inputs = tf.keras.Input((28, 28, 1), name="conv2d_input")
        x = tf.keras.layers.Conv2D(32, 3, activation="relu")(inputs)
        x = tf.keras.layers.MaxPooling2D()(x)
        x = tf.keras.layers.Flatten()(x)
        x = tf.keras.layers.Dense(64, activation="relu")(x)
        return tf.keras.Model(inputs, tf.keras.layers.Dense(10, name="logits")(x))

    if ctx.job_name == "evaluator":
        images, labels = load("test")
        model = model_fn()
        checkpoint = tf.train.Checkpoint(model=model)
        results = f"{args.model_dir}/eval/results.jsonl"
        tf.io.gfile.makedirs(f"{args.model_dir}/eval")
        for path in tf.train.checkpoints_iterator(args.model_dir, timeout=args.eval_timeout):
            checkpoint.restore(path).expect_partial()
            logits = model(images, training=False).numpy()
            step = int(path.rsplit("-", 1)[1])
            accuracy = float(np.mean(np.argmax(logits, axis=1) == labels))
            print(f"evaluator: step {step}: accuracy {accuracy:.3f}")
            with tf.io.gfile.GFile(results, "a") as f:
                f.write(json.dumps({"step": step, "accuracy": accuracy}) + "\n")
            if step >= args.max_steps:
                return
        return

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    train_images, train_labels = load("train")

    def input_fn(input_context):
        ds = tf.data.Dataset.from_tensor_slices((train_images, train_labels))
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        return ds.shuffle(BUFFER_SIZE).repeat().batch(BATCH_SIZE)

    with strategy.scope():
        model = model_fn()
        optimizer = tf.keras.optimizers.Adam(learning_rate=args.learning_rate)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=tf.keras.losses.Reduction.NONE)
    global_batch_size = BATCH_SIZE * ctx.num_workers

    @tf.function
    def train_step(iterator):
        def step(images, labels):
            with tf.GradientTape() as tape:
                loss = tf.nn.compute_average_loss(loss_fn(labels, model(images, training=True)),
                                                  global_batch_size=global_batch_size)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        losses = strategy.run(step, args=next(iterator))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    is_chief = ctx.job_name == "chief"
    checkpoint_dir = args.model_dir if is_chief else tempfile.mkdtemp()
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model=model, optimizer=optimizer), checkpoint_dir, max_to_keep=None)
    saved = 0
    iterator = iter(strategy.distribute_datasets_from_function(input_fn))
    while int(optimizer.iterations.numpy()) < args.max_steps:
        train_step(iterator)
        step = int(optimizer.iterations.numpy())
        if step - saved >= args.save_checkpoints_steps:  # save_checkpoints_steps
            manager.save(checkpoint_number=step)
            saved = step
    step = int(optimizer.iterations.numpy())
    if step != saved:
        manager.save(checkpoint_number=step)  # the last step's
    if is_chief:
        print(f"Exporting saved_model to {args.export_dir}")
    from sparktf.compat import compat

    compat.export_saved_model(model, args.export_dir, is_chief)
    if not is_chief:
        shutil.rmtree(checkpoint_dir, ignore_errors=True)


if __name__ == "__main__":
    import argparse

    from pyspark.conf import SparkConf
    from pyspark.context import SparkContext

    from sparktf.compat import TFCluster

    sc = SparkContext(conf=SparkConf().setAppName("mnist_estimator"))
    executors = sc._conf.get("spark.executor.instances")
    num_executors = int(executors) if executors is not None else 3

    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--buffer_size", type=int, default=10000)
    parser.add_argument("--cluster_size", type=int, default=num_executors,
                        help="nodes, the evaluator included")
    parser.add_argument("--eval_timeout", type=float, default=600,
                        help="seconds the evaluator waits for a new checkpoint")
    parser.add_argument("--images_labels", help="the npz directory of mnist_data_setup.py")
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--max_steps", type=int, default=60)
    parser.add_argument("--model_dir", default="mnist_model")
    parser.add_argument("--export_dir", default="mnist_export")
    parser.add_argument("--save_checkpoints_steps", type=int, default=100)
    parser.add_argument("--tensorboard", action="store_true")
    args = parser.parse_args()
    print("args:", args)

    cluster = TFCluster.run(sc, main_fun, args, args.cluster_size, num_ps=0,
                            tensorboard=args.tensorboard,
                            input_mode=TFCluster.InputMode.TENSORFLOW, log_dir=args.model_dir,
                            master_node="chief", eval_node=True)
    cluster.shutdown(grace_secs=60)
