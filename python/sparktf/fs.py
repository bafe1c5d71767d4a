"""Files on local disks, HDFS and S3, through the native filesystem seam.

Paths are local paths or URIs: ``file:///x``, ``hdfs://namenode:8020/x``,
``hdfs:///x`` (the default filesystem of ``HADOOP_CONF_DIR``'s core-site.xml),
``s3://bucket/key`` (``s3a://`` too). Every function of sparktf that takes a path
takes these, and so do the ones here. HDFS is spoken natively (no JVM, no
libhdfs): configuration comes from ``HADOOP_CONF_DIR`` (or
``HADOOP_HOME/etc/hadoop``), the user from ``HADOOP_USER_NAME``. S3 settings come
from the usual AWS environment variables and ``~/.aws`` files
(``AWS_ENDPOINT_URL`` for an S3-compatible store). Every remote call gives up
after ``SPARKTF_FS_TIMEOUT`` seconds (default 30) with
:class:`sparktf.errors.DeadlineExceeded`.

Errors are :mod:`sparktf.errors` classes: ``NotFound`` (a ``FileNotFoundError``),
``PermissionDenied`` (a ``PermissionError``), ``Unavailable`` (a
``ConnectionError``), ``InvalidArgument`` (a ``ValueError``) for an unknown
scheme, each naming the URI.
"""

from __future__ import annotations

import os
from typing import NamedTuple, Union

from sparktf import _native

__all__ = ["FileInfo", "stat", "exists", "listdir", "glob", "makedirs", "delete", "rename",
           "read_bytes", "write_bytes", "open_input", "open_output", "default_fs", "schemes"]

PathLike = Union[str, os.PathLike]


class FileInfo(NamedTuple):
    uri: str
    size: int
    mtime_ms: int
    is_dir: bool


def stat(uri: PathLike) -> FileInfo:
    return FileInfo(*_native.fs_stat(os.fspath(uri)))


def exists(uri: PathLike) -> bool:
    return _native.fs_exists(os.fspath(uri))


def listdir(uri: PathLike) -> list[FileInfo]:
    """The direct children of a directory, sorted by URI."""
    return sorted(FileInfo(*t) for t in _native.fs_list(os.fspath(uri)))


def glob(pattern: PathLike) -> list[str]:
    """URIs matching shell wildcards (``*``, ``?``, ``[...]``) in any component."""
    return _native.fs_glob(os.fspath(pattern))


def makedirs(uri: PathLike) -> None:
    _native.fs_mkdirs(os.fspath(uri))


def delete(uri: PathLike, recursive: bool = False) -> None:
    _native.fs_delete(os.fspath(uri), recursive)


def rename(src: PathLike, dst: PathLike) -> None:
    """Moves a file, replacing ``dst`` (atomic on local disks and HDFS)."""
    _native.fs_rename(os.fspath(src), os.fspath(dst))


def read_bytes(uri: PathLike) -> bytes:
    f = _native.InputFile(os.fspath(uri))
    try:
        return f.read(-1)
    finally:
        f.close()


def write_bytes(uri: PathLike, data: bytes) -> None:
    """Writes a whole file; nothing is visible at ``uri`` until it is complete."""
    f = _native.OutputFile(os.fspath(uri))
    try:
        f.write(bytes(data))
    except BaseException:
        f.abort()
        raise
    f.close()


def open_input(uri: PathLike):
    """A reader with ``read(n=-1)``, ``read_at(offset, n)``, ``seek``, ``size``, ``close``."""
    return _native.InputFile(os.fspath(uri))


def open_output(uri: PathLike):
    """A writer with ``write``, ``close`` (commits) and ``abort`` (leaves nothing)."""
    return _native.OutputFile(os.fspath(uri))


def default_fs() -> str:
    """``fs.defaultFS`` of the Hadoop configuration, or ``""`` when there is none."""
    return _native.hadoop_default_fs()


def schemes() -> list[str]:
    return _native.fs_schemes()
