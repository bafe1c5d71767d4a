"""Stand-ins for TFoS internals that sparktf replaces: calling one raises Unimplemented
with what to use instead."""

from __future__ import annotations

from sparktf import errors


def unavailable(what: str, instead: str):
    """A callable (also usable as a class) that raises Unimplemented("what ...: instead")."""

    def call(*args, **kwargs):
        del args, kwargs
        raise errors.Unimplemented(f"{what} is internal to TensorFlowOnSpark and has no "
                                   f"sparktf counterpart: {instead}")

    call.__name__ = what.rsplit(".", 1)[-1]
    call.__doc__ = f"Raises Unimplemented: {instead}"
    return call
