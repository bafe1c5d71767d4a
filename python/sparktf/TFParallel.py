"""TFoS's TFParallel: independent single-node TensorFlow runs on Spark executors (for
example one model per hyper-parameter set), on sparktf's cluster runtime, so that they are
supervised, cleaned up and reported like a TFCluster's nodes."""

from __future__ import annotations

import logging
import os

logger = logging.getLogger(__name__)


def _single_node(map_fn):
    """map_fn run alone: no TF_CONFIG (TensorFlow forms no cluster), TFoS's ctx fields."""

    def run(args, ctx):
        os.environ.pop("TF_CONFIG", None)
        ctx.release_port()
        ctx.worker_num = ctx.executor_id
        ctx.num_workers = ctx._num_nodes or ctx.num_workers
        ctx.job_name, ctx.task_index, ctx.cluster_spec = "worker", ctx.executor_id, {}
        return map_fn(args, ctx)

    return run


def run(sc, map_fn, tf_args, num_executors: int, use_barrier: bool = True, timeout=259200,
        **run_options) -> None:
    """Runs ``map_fn(tf_args, ctx)`` on `num_executors` executors at once, each on its own
    (ctx.executor_id = ctx.worker_num = 0..n-1, ctx.num_workers = n). Returns when all
    returned; if one fails, raises sparktf.errors.Aborted naming the node, with its
    traceback, as TFCluster does. `use_barrier=False` is accepted: the runs always start
    together (a barrier stage), which TFoS's default does too. Other keyword arguments go
    to TFCluster.run (legacy_keras, progress_timeout, ...)."""
    from sparktf import TFCluster

    if not use_barrier:
        logger.info("sparktf: TFParallel.run(use_barrier=False): the runs start together "
                    "in a barrier stage all the same")
    cluster = TFCluster.run(sc, _single_node(map_fn), tf_args, int(num_executors),
                            **run_options)
    cluster.shutdown(timeout=timeout)
