"""TFoS's TFCluster module, for programs that come through sparktf.compat: sparktf's
TFCluster, with TFoS's defaults where they differ (Keras 2 on the nodes)."""

from __future__ import annotations

from sparktf import TFCluster as _core
from sparktf.TFCluster import InputMode, TFCluster  # noqa: F401 - TFoS's names

__all__ = ["InputMode", "TFCluster", "run", "tf_status"]
# TFoS kept its nodes' reported state here; sparktf's is cluster.status() (the coordinator's).
tf_status: dict = {}


def run(sc, map_fun, tf_args, num_executors, num_ps=0, tensorboard=False,
        input_mode=InputMode.TENSORFLOW, log_dir=None, driver_ps_nodes=False,
        master_node=None, reservation_timeout=600, queues=("input", "output", "error"),
        eval_node=False, release_port=True, **sparktf_options):
    """TFoS's TFCluster.run (sparktf.TFCluster.run), with tf.keras as Keras 2 on the nodes
    (legacy_keras=True; TFoS-era Keras code needs it for MultiWorkerMirroredStrategy).
    `sparktf_options`: sparktf's other arguments (restarts, progress_timeout, ...)."""
    sparktf_options.setdefault("legacy_keras", True)
    return _core.run(sc, map_fun, tf_args, num_executors, num_ps=num_ps,
                     tensorboard=tensorboard, input_mode=input_mode, log_dir=log_dir,
                     driver_ps_nodes=driver_ps_nodes, master_node=master_node,
                     reservation_timeout=reservation_timeout, queues=list(queues),
                     eval_node=eval_node, release_port=release_port, **sparktf_options)
