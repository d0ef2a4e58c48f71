"""Several GPUs of this machine from one process: the same algorithms as
``sgemm.distributed`` (SUMMA on a P x Q grid, or the K split for deep
products), every rank driven in lockstep from this thread.

    import sgemm.multi_gpu
    print(sgemm.multi_gpu.explain(m, n, k, devices=[0, 1, 2, 3]))   # the model's choice
    c = sgemm.multi_gpu.gemm(a, b, devices=[0, 1, 2, 3])

One rank per device; the cost model (sgemm/distributed/model.py) picks the
algorithm, grid and panel width per shape.  NCCL communicators per grid row
and column from ``NcclCommunicator.initAll`` (cached per device list and
grid: the first call on a grid pays their creation); each step issues every
device's panel copies, then all collectives in one ``groupStart``/
``groupEnd``, then every device's local GEMM, all asynchronous on
per-device streams.  NCCL_NVLS_ENABLE=0 is set before the first
communicator is created.

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


def _context(backend, devices, nranks, grid, local_gemm, link_gbs, latency_us):
    from .distributed.context import local
    p = len(devices) if devices is not None else nranks
    key = (backend, tuple(devices) if devices is not None else p,
           None if grid is None else tuple(grid), local_gemm, link_gbs, latency_us)
    ctx = _contexts.get(key)
    if ctx is None:
        ctx = local(backend, nranks=p, devices=devices, grid=grid, local_gemm=local_gemm,
                    link_gbs=link_gbs, latency_us=latency_us)
        _contexts[key] = ctx
    return ctx


def close() -> None:
    """Destroy the cached NCCL communicators."""
    while _contexts:
        _, ctx = _contexts.popitem()
        ctx.close()


def _shapes(a, b, c, trans_a, trans_b, beta):
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
    return int(m), int(n), int(k)


def _blocks(block):
    if block is None:
        return None, None, None
    try:
        mb, nb, kb = block
    except (TypeError, ValueError):
        raise ArgumentError(f"block must be (mb, nb, kb), got {block!r}") from None
    return mb, nb, kb


def _devices(backend, devices, nranks):
    if backend == "cupy" and devices is None:
        import cupy
        devices = list(range(cupy.cuda.runtime.getDeviceCount()))
        if not devices:
            raise ArgumentError("no GPU visible")
    if backend == "numpy":
        return None, (nranks if nranks is not None else
                      (len(devices) if devices is not None else 1))
    return devices, len(devices)


def plan(m: int, n: int, k: int, *, devices=None, nranks: int | None = None,
         backend: str = "cupy", trans_a: bool = False, trans_b: bool = False,
         beta: float = 0.0, precision=None, algorithm: str = "auto", grid=None, block=None,
         link_gbs: float | None = None, latency_us: float | None = None):
    """What ``gemm`` would run for an m x n x k product: the model's choice of
    algorithm ("summa" or "ksplit"), grid, panel width and its predicted
    compute / communication, every candidate in ``.candidates``
    (``sgemm.distributed.model``).  Creates no communicator; ``explain``
    prints it."""
    from .distributed.model import cpu_machine, gpu_machine, plan_gemm
    devices, p = _devices(backend, devices, nranks)
    if backend == "cupy":
        dev = None
        try:
            from .runtime import device as devmod
            dev = devmod.info(devices[0])
        except Exception:  # noqa: BLE001 -- no driver: the described H100
            dev = None
        mach = gpu_machine(dev, precision, link_gbs, latency_us)
    else:
        mach = cpu_machine(link_gbs, latency_us)
    mb, nb, kb = _blocks(block)
    return plan_gemm(m, n, k, p, mach, trans_a=trans_a, trans_b=trans_b, beta=beta,
                     algorithm=algorithm, grid=grid, mb=mb, nb=nb, kb=kb)


def explain(m: int, n: int, k: int, **kwargs) -> str:
    """``plan(...).explain()``: the choice and the best candidates, as text."""
    return plan(m, n, k, **kwargs).explain()


def gemm(a, b, c=None, *, devices=None, alpha: float = 1.0, beta: float = 0.0,
         trans_a: bool = False, trans_b: bool = False, grid=None, block=None,
         kernel="auto", precision=None, local_gemm: str = "sgemm", backend: str = "cupy",
         nranks: int | None = None, timeout: float | None = None, return_stats: bool = False,
         algorithm: str = "auto", link_gbs: float | None = None,
         latency_us: float | None = None):
    """alpha * op(a) @ op(b) + beta * c over several GPUs.

    devices: GPU ids (default: every visible GPU); one rank each.
    algorithm: "auto" (the cost model picks SUMMA on a P x Q grid or the K
      split, and the panel width: ``plan``/``explain`` show the choice),
      "summa" or "ksplit".
    grid: (nprow, npcol) for SUMMA; block: (mb, nb, kb) distribution/panel
      sizes (either one means SUMMA; mb is also the K split's rows per rank
      per chunk with algorithm="ksplit").
    link_gbs, latency_us: the model's link figures (defaults in model.py).
    kernel, precision: passed to the local ``sgemm.gemm`` (through
      ``sgemm.plan``: the planner picks the local kernel in that precision);
      local_gemm="cublas" uses cuBLAS for the local products instead.
    backend: "cupy" (GPUs, NCCL) or "numpy" (simulates ``nranks`` ranks on the
      CPU: same algorithms, for tests).
    c: updated in place when given (must be given when beta != 0).
    return_stats: also return the timings (``SummaStats``: measured compute,
      communication and exposed communication per rank, the plan and its
      predicted figures).
    """
    m, n, k = _shapes(a, b, c, trans_a, trans_b, beta)
    mb, nb, kb = _blocks(block)
    devices, p = _devices(backend, devices, nranks)
    ctx = _context(backend, devices, p, grid, local_gemm, link_gbs, latency_us)
    lay = ctx.layout(m, n, k, trans_a=trans_a, trans_b=trans_b, mb=mb, nb=nb, kb=kb,
                     precision=precision, beta=beta, algorithm=algorithm)

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
