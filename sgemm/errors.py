"""Exceptions.  Argument errors are ValueError/TypeError subclasses so that
callers who catch the builtins keep working; each message names the argument."""
from __future__ import annotations


class SgemmError(Exception):
    """Base class of every error this library raises on purpose."""


class ArgumentError(SgemmError, ValueError):
    """A bad argument: the message names it and the value involved."""


class ArgumentTypeError(SgemmError, TypeError):
    """An argument of the wrong type (dtype, array kind)."""


class DeviceError(SgemmError, RuntimeError):
    """No usable CUDA device, or arrays on different devices."""


class CompileError(SgemmError, RuntimeError):
    """NVRTC rejected a kernel; ``.log`` holds the compiler's output."""

    def __init__(self, message: str, log: str):
        super().__init__(message + ("\n--- NVRTC log ---\n" + log if log else ""))
        self.log = log


class OutOfMemoryError(SgemmError, MemoryError):
    """The device could not hold the operands or the workspace."""
