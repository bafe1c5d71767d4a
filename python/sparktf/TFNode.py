"""TFoS's TFNode helpers for code running inside map_fun."""

from __future__ import annotations


def hdfs_path(ctx, path: str) -> str:
    """A fully qualified path for `path` on the cluster's default file system
    (TFoS's TFNode.hdfs_path)."""
    return ctx.absolute_path(path)


def release_port(ctx) -> None:
    ctx.release_port()
