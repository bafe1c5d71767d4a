"""Which Keras a node's ``tf.keras`` is, and the check that Keras 3 is not asked to train
across workers.

TensorFlow 2.16+ makes ``tf.keras`` Keras 3, which cannot train under
MultiWorkerMirroredStrategy (``model.fit`` fails deep inside Keras with a ``PerReplica``
error). ``TF_USE_LEGACY_KERAS=1``, set before TensorFlow is imported, makes ``tf.keras``
Keras 2 (the ``tf_keras`` package), which can. ``TFCluster.run(..., legacy_keras=...)``
chooses it for the node processes: ``sparktf.compat`` (TFoS programs) chooses Keras 2;
sparktf's own default leaves Keras 3 and, on the nodes, makes ``fit``, ``evaluate`` and
``predict`` of a Keras 3 model under a multi-worker strategy raise at once with the cause
and the switch.
"""

from __future__ import annotations

import functools
import os

from sparktf import errors

LEGACY_ENV = "TF_USE_LEGACY_KERAS"
# Set on the nodes when Keras 3 was left in place: install the check there.
CHECK_ENV = "SPARKTF_KERAS3_CHECK"
KERAS3_TRAINER = "keras.src.backend.tensorflow.trainer"


def node_env(legacy_keras: bool | None) -> dict:
    """The environment variables a node process needs for `legacy_keras` (TFCluster.run's
    argument). None: Keras 2 if the driver has TF_USE_LEGACY_KERAS=1; otherwise the
    executors' own setting stands (spark.executorEnv), with the Keras 3 check."""
    if legacy_keras is None and os.environ.get(LEGACY_ENV, "").lower() in ("1", "true", "yes"):
        legacy_keras = True
    if legacy_keras:
        return {LEGACY_ENV: "1"}
    return {CHECK_ENV: "1"} if legacy_keras is None else {LEGACY_ENV: "0", CHECK_ENV: "1"}


def _multi_worker(strategy) -> int:
    """Workers of `strategy` if it is a MultiWorkerMirroredStrategy over several, else 0."""
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return 0
    workers = getattr(strategy.extended, "_num_workers", 2)
    return workers if workers > 1 else 0


def refuse_multi_worker(trainer_module) -> None:
    """Wraps Keras 3's TensorFlow trainer so that fit/evaluate/predict under a multi-worker
    MultiWorkerMirroredStrategy raise Unimplemented before any step runs."""
    cls = trainer_module.TensorFlowTrainer
    for name in ("fit", "evaluate", "predict"):
        method = getattr(cls, name)

        @functools.wraps(method)
        def checked(self, *args, __method=method, __name=name, **kwargs):
            workers = _multi_worker(self.distribute_strategy)
            if workers:
                import keras

                raise errors.Unimplemented(
                    f"model.{__name}() with Keras {keras.__version__} under "
                    f"MultiWorkerMirroredStrategy ({workers} workers): Keras 3, which is "
                    "tf.keras in TensorFlow 2.16+, cannot train across workers. Use Keras 2: "
                    "TFCluster.run(..., legacy_keras=True) (the default of sparktf.compat), or "
                    "set TF_USE_LEGACY_KERAS=1 before TensorFlow is imported; either makes "
                    "tf.keras the tf_keras package (pip install tf_keras). Code that imports "
                    "keras itself should import tf_keras instead.")
            return __method(self, *args, **kwargs)

        setattr(cls, name, checked)
