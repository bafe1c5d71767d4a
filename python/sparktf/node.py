"""The node side: the context ``map_fun(args, ctx)`` receives, and the entry
point of the TF process that the node agent starts (``python -m sparktf.node``).

The agent passes everything through the environment: ``TF_CONFIG``,
``SPARKTF_CLUSTER_INFO`` (role, cluster spec), ``SPARKTF_PORT_FD`` (the
reserved port, held open until :meth:`NodeContext.release_port`),
``SPARKTF_ERROR_FILE`` (where a traceback goes), ``SPARKTF_COORDINATOR`` and
``SPARKTF_TOKEN`` (for barriers).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import traceback


class NodeContext:
    """What a node knows about itself, with TFoS's attribute names.

    executor_id   this node's index among the cluster's nodes (0..N-1)
    worker_num    its position in role order (TFoS's worker_num)
    job_name      'ps', 'chief'/'master', 'evaluator' or 'worker'
    task_index    index within its job
    cluster_spec  {job: [host:port, ...]} for every job
    num_workers   workers plus the chief/master
    defaultFS     the cluster's default file system URI ('file://' locally)
    working_dir   the node's working directory
    """

    def __init__(self, info: dict, defaultFS: str = "file://", working_dir: str | None = None):
        self.executor_id = int(info["executor_id"])
        self.worker_num = int(info["worker_num"])
        self.job_name = info["job_name"]
        self.task_index = int(info["task_index"])
        self.cluster_spec = info["cluster_spec"]
        self.num_workers = int(info["num_workers"])
        self.defaultFS = defaultFS
        self.working_dir = working_dir or os.getcwd()
        self._port_fd = int(os.environ.get("SPARKTF_PORT_FD", "-1"))
        self._coordinator = os.environ.get("SPARKTF_COORDINATOR", "")
        self._token = os.environ.get("SPARKTF_TOKEN", "")
        self._num_nodes = int(info.get("num_nodes", 0))

    @classmethod
    def from_env(cls, defaultFS: str = "file://") -> "NodeContext":
        info = os.environ.get("SPARKTF_CLUSTER_INFO")
        if not info:
            raise RuntimeError("not running under a sparktf node agent (no SPARKTF_CLUSTER_INFO)")
        return cls(json.loads(info), defaultFS=defaultFS)

    @property
    def is_chief(self) -> bool:
        """The node that writes exports and summaries: the chief/master, or
        worker 0 when there is none."""
        if self.job_name in ("chief", "master"):
            return True
        has_chief = "chief" in self.cluster_spec or "master" in self.cluster_spec
        return self.job_name == "worker" and self.task_index == 0 and not has_chief

    def absolute_path(self, path: str) -> str:
        """A fully qualified URI for `path` (TFoS's ctx.absolute_path)."""
        if "://" in path:
            return path
        if not path.startswith("/"):
            path = os.path.join(self.working_dir, path)
        if self.defaultFS.startswith("file:"):
            return "file://" + path
        return self.defaultFS.rstrip("/") + path

    def release_port(self) -> None:
        """Releases the port reserved for this node so TensorFlow can bind it.
        Called before map_fun unless run(..., release_port=False)."""
        if self._port_fd >= 0:
            os.close(self._port_fd)
            self._port_fd = -1

    def barrier(self, name: str, timeout: float = 600.0) -> None:
        """Waits until every node of the cluster reached the barrier `name`."""
        from sparktf import _native

        _native.barrier(self._coordinator, self._token, name, self.executor_id, 0, timeout)

    def export_model(self, model, export_dir: str) -> str | None:
        """Exports a SavedModel. Every worker must call it (saving may run
        collective ops); only the chief writes to `export_dir`, the others to a
        temporary directory that is then removed. Returns the path written by
        this node's export, or None on non-chief nodes."""
        target = export_dir if self.is_chief else tempfile.mkdtemp(prefix="sparktf-export-")
        try:
            if hasattr(model, "export"):
                model.export(target)  # Keras 3: an inference SavedModel
            else:
                import tensorflow as tf

                tf.saved_model.save(model, target)
        finally:
            if not self.is_chief:
                shutil.rmtree(target, ignore_errors=True)
        return export_dir if self.is_chief else None

    def get_data_feed(self, *args, **kwargs):
        raise NotImplementedError("get_data_feed() needs InputMode.SPARK, which this version "
                                  "of sparktf does not provide yet")

    def __repr__(self) -> str:
        return (f"NodeContext(executor_id={self.executor_id}, job_name={self.job_name!r}, "
                f"task_index={self.task_index}, num_workers={self.num_workers})")


def _write_error(text: str) -> None:
    path = os.environ.get("SPARKTF_ERROR_FILE")
    if path:
        with open(path, "w") as f:
            f.write(text)


def main(argv: list[str]) -> int:
    """Entry point of the TF process: loads (map_fun, args, options) from the
    payload file the node task wrote, deletes it, and runs map_fun."""
    if len(argv) != 1:
        print("usage: python -m sparktf.node PAYLOAD", file=sys.stderr)
        return 2
    try:
        import pickle  # imports whichever cloudpickle module wrote the payload

        with open(argv[0], "rb") as f:
            map_fun, tf_args, options = pickle.load(f)
        os.unlink(argv[0])
        ctx = NodeContext.from_env(defaultFS=options.get("defaultFS", "file://"))
        if options.get("release_port", True):
            ctx.release_port()
        map_fun(tf_args, ctx)
        ctx.release_port()
        return 0
    except BaseException as e:  # noqa: BLE001 - everything is reported, then we exit
        if isinstance(e, SystemExit) and e.code in (0, None):
            return 0
        text = traceback.format_exc()
        _write_error(text)
        sys.stderr.write(text)
        sys.stderr.flush()
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
