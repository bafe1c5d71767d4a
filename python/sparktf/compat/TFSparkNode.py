"""TFoS's TFSparkNode: the node context class (``TFNodeContext``, what map_fun's ctx is)
and TFoS's internal node functions, which sparktf's node agent replaces."""

from __future__ import annotations

import os

from sparktf.compat._moved import unavailable
from sparktf.node import NodeContext


class TFNodeContext(NodeContext):
    """A node context built from TFoS's constructor arguments (tests, TFParallel-style
    code). `mgr` and `tmp_socket` are the node's own (ctx.mgr, ctx.tmp_socket), not
    arguments."""

    def __init__(self, executor_id=0, job_name="", task_index=0, cluster_spec=None,
                 defaultFS="file://", working_dir=".", mgr=None, tmp_socket=None):
        del mgr, tmp_socket
        spec = dict(cluster_spec or {})
        workers = sum(len(v) for k, v in spec.items() if k in ("master", "chief", "worker"))
        super().__init__({"executor_id": executor_id, "worker_num": executor_id,
                          "job_name": job_name, "task_index": task_index,
                          "cluster_spec": spec, "num_workers": workers},
                         defaultFS=defaultFS, working_dir=os.path.abspath(working_dir))


_INSTEAD = "TFCluster.run/train/inference/shutdown run the nodes (the native node agent)"
TFSparkNode = unavailable("TFSparkNode.TFSparkNode", _INSTEAD)
run = unavailable("TFSparkNode.run", _INSTEAD)
train = unavailable("TFSparkNode.train", _INSTEAD)
inference = unavailable("TFSparkNode.inference", _INSTEAD)
shutdown = unavailable("TFSparkNode.shutdown", _INSTEAD)
