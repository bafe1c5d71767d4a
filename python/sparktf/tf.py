"""TensorFlow on hdfs:// and s3:// (and s3a://), through sparktf's filesystems.

TensorFlow 2.x dropped HDFS and S3 from its core (tensorflow-io carried them up to TF
2.16). sparktf ships a TensorFlow filesystem plugin built on the same native clients
as the rest of sparktf (``docs/storage.md``), so ``tf.data.TFRecordDataset``,
``tf.io.gfile``, checkpoints and SavedModels work on these URIs again::

    import sparktf.tf            # registers the plugin in this process
    tf.data.TFRecordDataset("hdfs:///data/train/part-00000.tfrecord")

Node processes of a sparktf cluster register it by themselves as soon as they import
TensorFlow, before ``map_fun`` uses it.

Files written through the plugin behave as TensorFlow's local files do: they exist from
the start and readers see what a flush pushed (TensorBoard follows an event file while
it is written); TensorFlow itself writes checkpoints under temporary names and renames
them. On S3 a file appears when it is closed.

Which filesystem wins a scheme: TensorFlow refuses a second registration of a scheme,
so the first one registered serves it. TensorFlow 2.21 itself has none for these
schemes; if tensorflow-io registered them first in a process, its filesystems stay
and :func:`register_filesystems` says so.
"""

from __future__ import annotations

import os
import threading

from sparktf import errors

__all__ = ["register_filesystems", "plugin_path", "SCHEMES"]

SCHEMES = ("hdfs", "s3", "s3a")
_lock = threading.Lock()
_registered = False


def plugin_path() -> str:
    """The plugin library: $SPARKTF_TF_PLUGIN if set, else the one inside the package."""
    return os.environ.get("SPARKTF_TF_PLUGIN") or os.path.join(
        os.path.dirname(__file__), "libsparktf_tf_filesystem.so")


def register_filesystems() -> None:
    """Registers the plugin with TensorFlow (importing it); safe to call again."""
    global _registered
    with _lock:
        if _registered:
            return
        path = plugin_path()
        if not os.path.exists(path):
            raise errors.NotFound(
                f"{path}: sparktf was built without TensorFlow's C headers, so it has no "
                "TensorFlow filesystem plugin; install tensorflow before sparktf")
        import tensorflow as tf

        try:
            tf.experimental.register_filesystem_plugin(path)
        except tf.errors.AlreadyExistsError as e:
            raise errors.AlreadyExists(
                f"TensorFlow already has a filesystem for one of {', '.join(SCHEMES)} "
                f"(was tensorflow-io imported first?); it keeps serving it: {e}") from e
        except (tf.errors.FailedPreconditionError, tf.errors.InvalidArgumentError) as e:
            raise errors.Unimplemented(
                f"TensorFlow {tf.__version__} refused sparktf's filesystem plugin "
                f"(built for another plugin ABI? rebuild sparktf against this "
                f"TensorFlow): {e}") from e
        _registered = True


register_filesystems()
