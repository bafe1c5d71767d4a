"""TFoS's TFNode helpers for code running inside map_fun.

Works as in TFoS: ``DataFeed``, ``hdfs_path``, ``release_port``. TensorFlow 1 helpers
(``start_cluster_server``, ``export_saved_model(sess, ...)``) and the module-level feed
functions that TFoS itself had deprecated raise Unimplemented, naming what to use.
"""

from __future__ import annotations

import getpass
import os

from sparktf import errors


def DataFeed(mgr, train_mode: bool = True, qname_in: str = "input", qname_out: str = "output",
             input_mapping: dict | None = None):
    """TFoS's ``TFNode.DataFeed(ctx.mgr, train_mode, qname_in, qname_out, input_mapping)``:
    the node's feed of queue `qname_in` (sparktf.node.DataFeed: next_batch, should_stop,
    batch_results, terminate). With input_mapping {column: tensor}, next_batch returns
    {tensor: array}."""
    ctx = getattr(mgr, "ctx", None)
    if ctx is None:
        raise errors.InvalidArgument(
            f"TFNode.DataFeed needs ctx.mgr (the map_fun's ctx), got {type(mgr).__name__}")
    return ctx.get_data_feed(train_mode, qname_in, qname_out, input_mapping)


def hdfs_path(ctx, path: str) -> str:
    """A fully qualified URI for `path`, as TFoS's hdfs_path resolves it from
    ``ctx.defaultFS`` and ``ctx.working_dir``: URIs stay as they are; absolute paths go on
    the default filesystem; relative paths go under the user's home on HDFS (/user/NAME)
    and under the working directory on a local default filesystem."""
    if "://" in path:
        return path
    default_fs = ctx.defaultFS or "file://"
    if default_fs.endswith("/") and not default_fs.endswith("://"):
        default_fs = default_fs[:-1]  # "hdfs://nn:8020/" -> "hdfs://nn:8020"
    if default_fs.startswith("file:"):
        if not path.startswith("/"):
            path = os.path.join(ctx.working_dir, path)
        return "file://" + path
    if not path.startswith("/"):
        user = os.environ.get("HADOOP_USER_NAME") or getpass.getuser()
        path = f"/user/{user}/{path}"
    return default_fs + path


def release_port(ctx) -> None:
    """Releases the port reserved for this node (TFoS: closes ``ctx.tmp_socket``)."""
    ctx.release_port()


def start_cluster_server(ctx, num_gpus: int = 1, rdma: bool = False):
    del ctx, num_gpus, rdma
    raise errors.Unimplemented(
        "TFNode.start_cluster_server builds a TensorFlow 1 tf.train.Server. On TensorFlow 2 "
        "the node's TF_CONFIG is already set: create a tf.distribute strategy "
        "(MultiWorkerMirroredStrategy, or ParameterServerStrategy with "
        "tf.distribute.cluster_resolver.TFConfigClusterResolver) instead")


def export_saved_model(sess, export_dir, tag_set, signatures):
    del sess, export_dir, tag_set, signatures
    raise errors.Unimplemented(
        "TFNode.export_saved_model exports a TensorFlow 1 session. On TensorFlow 2 use "
        "ctx.export_model(model, export_dir) or compat.export_saved_model(model, export_dir, "
        "is_chief) (every worker calls it; the chief writes)")


def _deprecated_feed_call(name: str):
    def call(mgr, *args, **kwargs):
        del mgr, args, kwargs
        raise errors.Unimplemented(
            f"TFNode.{name}(mgr, ...) was deprecated by TFoS itself; use "
            f"TFNode.DataFeed(ctx.mgr, train_mode).{name}(...)")

    call.__name__ = name
    return call


next_batch = _deprecated_feed_call("next_batch")
batch_results = _deprecated_feed_call("batch_results")
terminate = _deprecated_feed_call("terminate")
