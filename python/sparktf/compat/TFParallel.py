"""TFoS's TFParallel (sparktf.TFParallel), with tf.keras as Keras 2 on the nodes."""

from __future__ import annotations

from sparktf import TFParallel as _core


def run(sc, map_fn, tf_args, num_executors, use_barrier=True, **sparktf_options):
    """TFoS's TFParallel.run: independent single-node runs (sparktf.TFParallel.run)."""
    sparktf_options.setdefault("legacy_keras", True)
    return _core.run(sc, map_fn, tf_args, num_executors, use_barrier, **sparktf_options)
