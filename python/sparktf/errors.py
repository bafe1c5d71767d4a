"""Typed exceptions raised by the native core.

Each subclasses the builtin a caller would already catch, so
``except IOError`` still sees a corrupt file and ``except ValueError`` a bad
argument.
"""


class SparktfError(Exception):
    """Base class of every error the native core raises."""


class InvalidArgument(SparktfError, ValueError):
    """The caller passed something malformed."""


class NotFound(SparktfError, FileNotFoundError):
    """A named file or feature does not exist."""


class DataLoss(SparktfError, IOError):
    """Stored data is corrupt or truncated; the message names file and offset."""


class OutOfRange(SparktfError, EOFError):
    """Read past the end of a stream."""


class IOFailure(SparktfError, OSError):
    """The operating system refused an operation."""


class DeadlineExceeded(SparktfError, TimeoutError):
    """A wait ran out of time; the message says what was awaited."""


class Unavailable(SparktfError, ConnectionError):
    """A peer could not be reached."""


class Unauthenticated(SparktfError, PermissionError):
    """A peer did not present the cluster's token."""


class ResourceExhausted(SparktfError, MemoryError):
    """A limit was hit (frame too large, queue full)."""


class Aborted(SparktfError, RuntimeError):
    """The operation was stopped, e.g. because another node failed."""


class Cancelled(SparktfError, RuntimeError):
    """The operation was cancelled on purpose."""


class Internal(SparktfError, RuntimeError):
    """A bug in sparktf: please report it."""


class Unimplemented(SparktfError, NotImplementedError):
    """Valid input that this path does not handle."""


class PermissionDenied(SparktfError, PermissionError):
    """The store refused the caller (file permissions, HDFS ACLs, an S3 policy)."""


class AlreadyExists(SparktfError, FileExistsError):
    """The target exists and the operation would not replace it."""


# Indexed by the core's StatusCode values (cpp/src/sparktf/common/status.h).
_BY_CODE = {
    1: InvalidArgument,
    2: NotFound,
    3: DataLoss,
    4: OutOfRange,
    5: IOFailure,
    6: DeadlineExceeded,
    7: Unavailable,
    8: Unauthenticated,
    9: ResourceExhausted,
    10: Aborted,
    11: Cancelled,
    12: Internal,
    13: Unimplemented,
    14: PermissionDenied,
    15: AlreadyExists,
}


def exception_class(code: int) -> type:
    """The exception class for a native status code (used by the extension)."""
    return _BY_CODE.get(code, Internal)
