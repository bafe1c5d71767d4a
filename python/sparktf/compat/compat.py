"""TFoS's ``compat`` module (``from tensorflowonspark import compat``): the helpers its
Keras examples call, for TensorFlow 2."""

from __future__ import annotations


def export_saved_model(model, export_dir: str, is_chief: bool = False) -> None:
    """Saves `model` as a SavedModel in `export_dir` on the chief; every worker must call
    it (the others save to a temporary directory that is then removed). A Keras 2 model
    is saved as TFoS saved it (``model.save(dir, save_format="tf")``: the serving_default
    signature names its inputs and outputs after the layers, e.g. conv2d_input and
    dense_1); a Keras 3 model with ``model.export``."""
    from sparktf import node

    node.export_saved_model(model, export_dir, is_chief, keras2_as_tfos=True)


def disable_auto_shard(options) -> None:
    """Turns off tf.data's auto-sharding in `options` (a tf.data.Options)."""
    import tensorflow as tf

    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF


def is_gpu_available() -> bool:
    """Whether TensorFlow sees a GPU on this machine."""
    import tensorflow as tf

    return len(tf.config.list_physical_devices("GPU")) > 0
