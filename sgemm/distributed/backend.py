"""What SUMMA needs from a backend, and the per-rank state it drives.

A backend drives one or more *ranks* from this process:

* multi-process backends (``NumpyMPIBackend``, ``CupyBackend`` from
  ``cupy_mpi``) drive exactly one rank: the MPI process's own;
* in-process backends (``NumpySimBackend``, ``CupyBackend`` from
  ``cupy_local``) drive every rank of the grid in lockstep from one thread
  (NCCL group calls, or plain copies on the CPU).

SUMMA is written once against this interface; it loops over ``backend.ctxs``.
The K split (ksplit.py) uses the same interface plus ``reduce_scatter`` and
``accumulate``.  Streams are named ``COMPUTE`` and ``COMM``; events returned
by ``record`` are opaque to the algorithms (CUDA events on the GPU, MPI
requests on the CPU).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np

from .grid import ProcessGrid

COMPUTE = "compute"
COMM = "comm"
ROW = "row"      # a broadcast among the processes of one grid row (root = a grid column)
COL = "col"      # a broadcast among the processes of one grid column (root = a grid row)


@dataclass(eq=False)
class RankContext:
    rank: int                         # world rank = grid.rank_of(*coords)
    coords: tuple[int, int]           # (grid row, grid column)
    device: int | None = None         # CUDA device (GPU backends)
    streams: dict = field(default_factory=dict)
    row_comm: object = None           # communicator of this grid row (rank in it = column)
    col_comm: object = None           # communicator of this grid column (rank in it = row)
    state: dict = field(default_factory=dict)

    @property
    def row(self) -> int:
        return self.coords[0]

    @property
    def col(self) -> int:
        return self.coords[1]


@dataclass(eq=False)
class BcastOp:
    """Broadcast ``buf`` (contiguous; holds the data on the root) from
    ``root`` (rank within the row or column communicator) to its peers."""
    ctx: RankContext
    axis: str                         # ROW or COL
    buf: object
    root: int


@dataclass(eq=False)
class ReduceScatterOp:
    """Sum ``send`` (contiguous, p x len(recv) items) over every rank of the
    grid's column communicator (the whole p x 1 grid) and leave part i of the
    sum in ``recv`` of the rank in row i."""
    ctx: RankContext
    send: object
    recv: object


class Backend:
    """Interface (and CPU-neutral defaults).  Every method taking a ctx acts
    on that rank's device and streams."""
    name = "base"
    xp = np
    multi_process = False             # True: one rank per process under MPI
    timing = "host timers"            # what profile=True measures with

    def __init__(self, grid: ProcessGrid, ctxs: list[RankContext]):
        self.grid = grid
        self.ctxs = ctxs

    # -- placement ------------------------------------------------------------------
    def scope(self, ctx):
        """Context manager making ctx's device current."""
        return contextlib.nullcontext()

    def empty(self, ctx, shape):
        return np.empty(shape, dtype=np.float32)

    def zeros(self, ctx, shape):
        return np.zeros(shape, dtype=np.float32)

    def from_any(self, ctx, arr):
        """A copy/view of ``arr`` (host or any device) on ctx's device, float32, C-contiguous."""
        return np.ascontiguousarray(np.asarray(arr), dtype=np.float32)

    def to_host(self, ctx, arr) -> np.ndarray:
        return np.asarray(arr)

    @staticmethod
    def is_contiguous(arr) -> bool:
        return bool(arr.flags.c_contiguous)

    # Local GEMM takes views with one unit stride (e.g. a column slice) in place.
    accepts_strided = True

    # -- streams and events -------------------------------------------------------------
    def begin(self, ctx) -> None:
        """Order ctx's COMPUTE and COMM streams after the caller's work."""

    def end(self, ctx) -> None:
        """Order the caller's stream after ctx's COMPUTE stream."""

    def record(self, ctx, stream):
        return None

    def wait(self, ctx, stream, event) -> None:
        """Make ``stream`` of ctx wait for ``event`` (None: nothing to wait for)."""

    def timer(self, ctx, stream):
        import time
        return time.perf_counter()

    def elapsed(self, t0, t1) -> float:
        return float(t1 - t0)

    def extra_comm_time(self, ctx) -> float:
        """Communication time not bracketed by COMM-stream timers (CPU: blocked in waits)."""
        return 0.0

    def synchronize(self, ctxs, timeout: float | None) -> None:
        """Block until every queued operation of ``ctxs`` is done (or time out)."""

    # -- operations ----------------------------------------------------------------------
    def copy(self, ctx, dst, src) -> None:
        """dst[...] = src on ctx's COMM stream."""
        dst[...] = src

    def bcast(self, ops: list[BcastOp]) -> None:
        raise NotImplementedError

    def reduce_scatter(self, ops: list[ReduceScatterOp]) -> None:
        """On the COMM stream; p x 1 grids only (the column communicator)."""
        raise NotImplementedError

    def accumulate(self, ctx, dst, src, beta) -> None:
        """dst = src + beta * dst on the COMPUTE stream (beta == 0: dst = src)."""
        numpy_accumulate(dst, src, beta)

    def gemm(self, ctx, a, b, c, *, alpha, beta, trans_a, trans_b, precision, kernel) -> None:
        """c = alpha * op(a) @ op(b) + beta * c on ctx's COMPUTE stream (beta == 0:
        c is not read)."""
        raise NotImplementedError

    def scale(self, ctx, c, beta) -> None:
        """c *= beta on the COMPUTE stream (beta == 0: c = 0, NaN-free)."""
        raise NotImplementedError

    # Keep panel buffers (and, on the GPU, local-GEMM plans) between SUMMA
    # calls: repeated GEMMs with one layout then do no setup work per call.
    # Off by default: the caches hold device memory until close().
    persistent = False

    def buffer(self, ctx, key, nelems: int):
        """A flat float32 scratch buffer of at least ``nelems`` on ctx's device,
        the same one for the same (rank, key) within a call (and across calls
        when ``persistent``)."""
        cache = self.__dict__.setdefault("_buffers", {})
        buf = cache.get((ctx.rank, key))
        if buf is None or buf.size < nelems:
            buf = self.empty(ctx, (max(int(nelems), 1),))
            cache[(ctx.rank, key)] = buf
        return buf

    def release(self) -> None:
        """End of a SUMMA call: drop per-call caches unless ``persistent``."""
        if not self.persistent:
            self.__dict__.get("_buffers", {}).clear()

    def close(self) -> None:
        """Free communicators."""

    def machine(self, precision=None, link_gbs=None, latency_us=None):
        """The cost model's machine (model.py) for this backend's ranks."""
        from .model import cpu_machine
        return cpu_machine(link_gbs, latency_us)


def numpy_gemm(a, b, c, alpha, beta, trans_a, trans_b) -> None:
    """Reference local GEMM in float32 (BLAS through NumPy)."""
    opa = a.T if trans_a else a
    opb = b.T if trans_b else b
    if c.size == 0:
        return
    if opa.shape[1] == 0 or alpha == 0.0:
        numpy_scale(c, beta)
        return
    if beta == 0.0:
        np.matmul(opa, opb, out=c)
        if alpha != 1.0:
            c *= np.float32(alpha)
        return
    prod = opa @ opb
    if alpha != 1.0:
        prod *= np.float32(alpha)
    if beta != 1.0:
        c *= np.float32(beta)
    c += prod


def numpy_accumulate(dst, src, beta) -> None:
    if beta == 0.0:
        dst[...] = src
    else:
        if beta != 1.0:
            dst *= np.float32(beta)
        dst += src


def numpy_scale(c, beta) -> None:
    if beta == 0.0:
        c[...] = 0
    elif beta != 1.0:
        c *= np.float32(beta)
