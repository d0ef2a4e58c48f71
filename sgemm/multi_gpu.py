"""Several GPUs of this machine from one process: the same SUMMA as
``sgemm.distributed``, every rank driven in lockstep from this thread.

    import sgemm.multi_gpu
    c = sgemm.multi_gpu.gemm(a, b, devices=[0, 1, 2, 3])

One grid rank per device; NCCL communicators per grid row and column from
``NcclCommunicator.initAll`` (cached per device list and grid: the first call
pays their creation); each SUMMA step issues every device's panel copies,
then all broadcasts in one ``groupStart``/``groupEnd``, then every device's
local GEMM, all asynchronous on per-device streams.  NCCL_NVLS_ENABLE=0 is
set before the first communicator is created.

Operands are whole matrices: NumPy (host; the result comes back as NumPy)
or CuPy on any device (the result is a CuPy array on ``a``'s device).  They
are cut into block-cyclic pieces, copied to their devices, multiplied, and
C is assembled again: this call moves every operand once, which costs far
more than the GEMM for small problems.  For data that lives on the GPUs,
use ``sgemm.distributed.local(...)`` with ``scatter``/``gemm``/``gather``
and keep the local arrays.
"""
from __future__ import annotations

import numpy as np

from .errors import ArgumentError

_contexts: dict = {}


def _context(backend, devices, nranks, grid, m, n, local_gemm):
    from .distributed.context import local
    from .distributed.grid import ProcessGrid
    p = len(devices) if devices is not None else nranks
    g = ProcessGrid.create(p, grid, m, n)
    key = (backend, tuple(devices) if devices is not None else p, g.shape, local_gemm)
    ctx = _contexts.get(key)
    if ctx is None:
        ctx = local(backend, nranks=p, devices=devices, grid=g.shape, local_gemm=local_gemm)
        _contexts[key] = ctx
    return ctx


def close() -> None:
    """Destroy the cached NCCL communicators."""
    while _contexts:
        _, ctx = _contexts.popitem()
        ctx.close()


def gemm(a, b, c=None, *, devices=None, alpha: float = 1.0, beta: float = 0.0,
         trans_a: bool = False, trans_b: bool = False, grid=None, block=None,
         kernel="auto", precision=None, local_gemm: str = "sgemm", backend: str = "cupy",
         nranks: int | None = None, timeout: float | None = None, return_stats: bool = False):
    """alpha * op(a) @ op(b) + beta * c over several GPUs (SUMMA).

    devices: GPU ids (default: every visible GPU); one grid rank each.
    grid: (nprow, npcol), default chosen from len(devices) and C's shape.
    block: (mb, nb, kb) distribution/panel sizes, default one C block per
      device per axis and kb about K/8.
    kernel, precision: passed to the local ``sgemm.gemm``; local_gemm="cublas"
      uses cuBLAS for the local products instead (for comparison).
    backend: "cupy" (GPUs, NCCL) or "numpy" (simulates ``nranks`` ranks on the
      CPU: same algorithm, for tests).
    c: updated in place when given (must be given when beta != 0).
    return_stats: also return the SUMMA timings (``SummaStats``).
    """
    for name, x in (("a", a), ("b", b)):
        if getattr(x, "ndim", None) != 2:
            raise ArgumentError(f"{name} must be a 2-D array, got {type(x).__name__} "
                                f"with shape {getattr(x, 'shape', None)}")
    m, k = (a.shape[1], a.shape[0]) if trans_a else a.shape
    k2, n = (b.shape[1], b.shape[0]) if trans_b else b.shape
    if k != k2:
        raise ArgumentError(f"inner dimensions differ: op(a) is {m}x{k}, op(b) is {k2}x{n}")
    if c is not None and tuple(c.shape) != (m, n):
        raise ArgumentError(f"c has shape {tuple(c.shape)}, expected {(m, n)}")
    if beta != 0.0 and c is None:
        raise ArgumentError(f"beta={beta} needs c")
    mb = nb = kb = None
    if block is not None:
        try:
            mb, nb, kb = block
        except (TypeError, ValueError):
            raise ArgumentError(f"block must be (mb, nb, kb), got {block!r}") from None
    if backend == "cupy" and devices is None:
        import cupy
        devices = list(range(cupy.cuda.runtime.getDeviceCount()))
        if not devices:
            raise ArgumentError("no GPU visible")
    if backend == "numpy" and nranks is None:
        nranks = len(devices) if devices is not None else 1
    if backend == "numpy":
        devices = None
    ctx = _context(backend, devices, nranks, grid, m, n, local_gemm)
    lay = ctx.layout(m, n, k, trans_a=trans_a, trans_b=trans_b, mb=mb, nb=nb, kb=kb)

    al = ctx.scatter(a, lay.a)
    bl = ctx.scatter(b, lay.b)
    cl = ctx.scatter(c, lay.c) if beta != 0.0 else None
    cl = ctx.gemm(al, bl, cl, layout=lay, alpha=alpha, beta=beta, precision=precision,
                  kernel=kernel, profile=return_stats, timeout=timeout)

    host = type(a).__module__.split(".")[0] != "cupy"
    if c is not None:
        out = c
    elif host:
        out = np.empty((m, n), dtype=np.float32)
    else:
        import cupy
        with a.device:
            out = cupy.empty((m, n), dtype=np.float32)
    ctx.gather(cl, lay.c, out=out)
    return (out, ctx.last_stats) if return_stats else out
