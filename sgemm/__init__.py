"""sgemm: hand-tuned FP32 GEMM kernels for NVIDIA GPUs, compiled at run time.

    import sgemm
    c = sgemm.gemm(a, b)                  # alpha*op(a)@op(b) + beta*c
    c = sgemm.matmul(a, b)                # NumPy matmul semantics, batched
    p = sgemm.plan(a, b, c); p.execute()  # choose and compile once, run often
    sgemm.blas.sgemm("N", "T", m, n, k, 1.0, A, lda, B, ldb, 0.0, C, ldc)

Importing needs no GPU and does no CUDA work: NumPy, cuda.core and the rest
load on first use (docs/first-call.md).  The first call loads the prebuilt
kernel it runs, or compiles (and caches) it.
"""
import importlib as _importlib
import importlib.util as _importlib_util
import sys as _sys
import types as _types
from time import perf_counter as _clock

from .errors import (ArgumentError, ArgumentTypeError, CompileError, DeviceError,
                     OutOfMemoryError, SgemmError)

__version__ = "0.1.0"

__all__ = ["gemm", "gemm_batched", "matmul", "plan", "Plan", "blas", "KERNELS",
           "SgemmError", "ArgumentError", "ArgumentTypeError", "CompileError",
           "DeviceError", "OutOfMemoryError", "__version__"]

# Public names and the module defining each, imported on first access.
_LAZY = {"gemm": "api", "gemm_batched": "api", "matmul": "api", "plan": "api",
         "Plan": "plan", "KERNELS": "kernels.registry"}


# (began, ended) of the last first-use import above, or None: ``sgemm.gemm(...)``
# as a process's first call imports the API inside the call's own time, before
# the call can take its clock (the first-call bound of docs/notes/first-call.md).
_last_import = None
_FOLLOW_S = 0.05        # an import that ended this shortly before a call began it


def _call_began(now: float | None = None) -> float:
    """When the call asking at ``now`` (default: the clock now) began: the
    start of the first-use import that ended just before it
    (``sgemm.gemm(...)``'s own attribute access), else ``now``.  The first
    call to ask uses the record up, so later calls count from their own
    clocks."""
    global _last_import
    now = _clock() if now is None else now
    rec, _last_import = _last_import, None
    return rec[0] if rec is not None and 0.0 <= now - rec[1] < _FOLLOW_S else now


def __getattr__(name: str):
    """``sgemm.gemm`` and the other public names on first use; any other
    ``sgemm.<submodule>`` (``sgemm.blas``, ``sgemm.runtime``) is imported."""
    global _last_import
    if name in _LAZY:
        began = _clock()
        value = getattr(_importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        _last_import = (began, _clock())
        return value
    if not name.startswith("_") and _importlib_util.find_spec(f"{__name__}.{name}"):
        began = _clock()
        module = _importlib.import_module(f".{name}", __name__)
        _last_import = (began, _clock())
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


class _Package(_types.ModuleType):
    """``sgemm.plan`` is the function: importing the submodule sgemm.plan
    (which the import system then sets as this package's attribute) must not
    replace it.  The module stays reachable as sys.modules["sgemm.plan"]."""

    def __setattr__(self, name, value):
        if name == "plan" and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
