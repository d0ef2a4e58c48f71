"""The user-facing object: a backend, its grid, and scatter / gemm / gather.

Under MPI (one process per rank):

    from sgemm import distributed as dist
    ctx = dist.init("cupy")                        # or "numpy"; grid chosen from P
    lay = ctx.layout(m, n, k, trans_a=False)       # block-cyclic A, B, C
    a = ctx.scatter(A if ctx.rank == 0 else None, lay.a)
    b = ctx.scatter(B if ctx.rank == 0 else None, lay.b)
    c = ctx.gemm(a, b, layout=lay, alpha=1.0)      # local C, in place when given
    C = ctx.gather(c, lay.c)                       # full C on rank 0, None elsewhere

or in one call on rank 0's data: ``C = ctx.gemm_global(A, B)``.

In-process (``local(...)``: every rank in this process; what
``sgemm.multi_gpu`` uses) the same methods take and return one local array
per rank, as lists in rank order.
"""
from __future__ import annotations

import numpy as np

from ..errors import ArgumentError
from .backend import Backend
from .grid import ProcessGrid
from .layout import BlockCyclic, GemmLayout, gemm_layout
from .redistribute import gather_matrix, scatter_matrix
from .summa import SummaStats, summa


class DistContext:
    def __init__(self, backend: Backend, comm=None):
        self.backend = backend
        self.comm = comm
        self.last_stats: SummaStats | None = None

    # -- who ----------------------------------------------------------------------------
    @property
    def grid(self) -> ProcessGrid:
        return self.backend.grid

    @property
    def multi_process(self) -> bool:
        return self.backend.multi_process

    @property
    def rank(self) -> int:
        """This process's rank (MPI); 0 in-process."""
        return self.comm.Get_rank() if self.comm is not None else 0

    @property
    def size(self) -> int:
        return self.grid.size

    @property
    def coords(self) -> tuple[int, int]:
        return self.grid.coords(self.rank)

    @property
    def device(self):
        return self.backend.ctxs[0].device

    def layout(self, m: int, n: int, k: int, **kwargs) -> GemmLayout:
        """``gemm_layout`` on this grid (trans_a, trans_b, mb, nb, kb)."""
        return gemm_layout(m, n, k, self.grid, **kwargs)

    def barrier(self) -> None:
        if self.comm is not None:
            self.comm.Barrier()

    # -- data ---------------------------------------------------------------------------
    def _one(self):
        if not self.multi_process:
            raise ArgumentError("in-process context: use the list form")
        return self.backend.ctxs[0]

    def empty(self, desc: BlockCyclic):
        """Uninitialised local array(s) for ``desc``."""
        out = [self.backend.empty(ctx, desc.local_shape(ctx.rank)) for ctx in self.backend.ctxs]
        return out[0] if self.multi_process else out

    def scatter(self, matrix, desc: BlockCyclic, root: int = 0):
        """Local array of ``matrix`` (given on ``root`` only, host or device)
        on this rank's device; in-process: the list for every rank."""
        be = self.backend
        if self.multi_process:
            host = scatter_matrix(self.comm, desc, matrix, root=root)
            return be.from_any(self._one(), host)
        if matrix is None or tuple(matrix.shape) != desc.shape:
            raise ArgumentError(f"scatter needs the {desc.shape} matrix")
        return [be.from_any(ctx, desc.extract(matrix, ctx.rank)) for ctx in be.ctxs]

    def gather(self, local, desc: BlockCyclic, root: int = 0, out=None):
        """The full matrix on ``root`` (host float32, or ``out`` filled in
        place), None elsewhere; in-process ``local`` is the list."""
        be = self.backend
        if self.multi_process:
            return gather_matrix(self.comm, desc, be.to_host(self._one(), local),
                                 root=root, out=out)
        if out is None:
            out = np.empty(desc.shape, dtype=np.float32)
        on_device = type(out).__module__.split(".")[0] == "cupy"
        for ctx, loc in zip(be.ctxs, local):
            if on_device:
                from .backend_cupy import to_device
                piece = to_device(loc, out.device.id)
                with out.device:
                    desc.insert(out, piece, ctx.rank)
            else:
                desc.insert(out, be.to_host(ctx, loc), ctx.rank)
        return out

    # -- compute --------------------------------------------------------------------------
    def gemm(self, a, b, c=None, *, layout: GemmLayout, alpha: float = 1.0, beta: float = 0.0,
             precision=None, kernel="auto", profile: bool = False, timeout: float | None = None):
        """c = alpha * op(A) @ op(B) + beta * c on distributed local arrays.
        c None (beta must be 0): allocated.  Returns c; timings, when
        ``profile``, in ``self.last_stats``."""
        lists = not self.multi_process
        al, bl = (a, b) if lists else ([a], [b])
        if c is None:
            if beta != 0.0:
                raise ArgumentError(f"beta={beta} needs c")
            cl = [self.backend.empty(ctx, layout.c.local_shape(ctx.rank))
                  for ctx in self.backend.ctxs]
        else:
            cl = c if lists else [c]
        self.last_stats = summa(self.backend, layout, al, bl, cl, alpha=alpha, beta=beta,
                                precision=precision, kernel=kernel, profile=profile,
                                timeout=timeout)
        return cl if lists else cl[0]

    def gemm_global(self, a, b, c=None, *, alpha: float = 1.0, beta: float = 0.0,
                    trans_a: bool = False, trans_b: bool = False, mb=None, nb=None, kb=None,
                    precision=None, kernel="auto", root: int = 0, profile: bool = False,
                    timeout: float | None = None):
        """Whole-matrix convenience: ``a``, ``b`` (and ``c`` when beta != 0) on
        ``root``; returns C on root (``c`` updated in place when given), None
        elsewhere.  Scatter and gather stage through host memory."""
        if self.multi_process:
            info = None
            if self.rank == root:
                info = _shape_info(a, b, c, trans_a, trans_b, beta)
            info = self.comm.bcast(info, root=root)
            if isinstance(info, Exception):
                raise info
        else:
            info = _shape_info(a, b, c, trans_a, trans_b, beta)
            if isinstance(info, Exception):
                raise info
        m, n, k = info
        lay = self.layout(m, n, k, trans_a=trans_a, trans_b=trans_b, mb=mb, nb=nb, kb=kb)
        al = self.scatter(a, lay.a, root)
        bl = self.scatter(b, lay.b, root)
        cl = self.scatter(c, lay.c, root) if beta != 0.0 else None
        cl = self.gemm(al, bl, cl, layout=lay, alpha=alpha, beta=beta, precision=precision,
                       kernel=kernel, profile=profile, timeout=timeout)
        out = c if (c is not None and (not self.multi_process or self.rank == root)) else None
        return self.gather(cl, lay.c, root, out=out)

    def close(self) -> None:
        self.backend.close()


def _shape_info(a, b, c, ta, tb, beta):
    """(m, n, k), or the exception to raise on every rank."""
    try:
        if a is None or b is None:
            raise ArgumentError("the root rank must pass a and b")
        if a.ndim != 2 or b.ndim != 2:
            raise ArgumentError(f"a and b must be 2-D, got shapes {a.shape} and {b.shape}")
        m, k = (a.shape[1], a.shape[0]) if ta else a.shape
        kb_, n = (b.shape[1], b.shape[0]) if tb else b.shape
        if k != kb_:
            raise ArgumentError(f"inner dimensions differ: op(a) is {m}x{k}, op(b) {kb_}x{n}")
        if beta != 0.0 and c is None:
            raise ArgumentError(f"beta={beta} needs c")
        if c is not None and tuple(c.shape) != (m, n):
            raise ArgumentError(f"c has shape {tuple(c.shape)}, expected {(m, n)}")
        return (int(m), int(n), int(k))
    except ArgumentError as e:
        return e


def init(backend: str = "numpy", *, comm=None, grid=None, device: int | None = None,
         local_gemm: str = "sgemm", timeout: float | None = None) -> DistContext:
    """Context for this MPI process.  backend: "numpy" (CPU, MPI collectives)
    or "cupy" (GPU, NCCL).  grid: (nprow, npcol), default as square as
    possible.  device: GPU of this rank, default node-local rank modulo the
    visible GPUs."""
    from mpi4py import MPI
    comm = comm if comm is not None else MPI.COMM_WORLD
    g = ProcessGrid.create(comm.Get_size(), grid)
    if backend == "numpy":
        from .backend_numpy import NumpyMPIBackend
        be = NumpyMPIBackend(comm, g, timeout=timeout)
    elif backend in ("cupy", "nccl", "gpu"):
        from .backend_cupy import cupy_mpi
        be = cupy_mpi(comm, g, device=device, local_gemm=local_gemm, timeout=timeout)
    else:
        raise ArgumentError(f"backend must be 'numpy' or 'cupy', got {backend!r}")
    return DistContext(be, comm)


def local(backend: str = "numpy", *, nranks: int | None = None, devices=None, grid=None,
          m: int | None = None, n: int | None = None, local_gemm: str = "sgemm",
          timeout: float | None = None) -> DistContext:
    """Context driving every rank from this process: "cupy" (one rank per
    GPU in ``devices``, NCCL) or "numpy" (``nranks`` simulated ranks)."""
    if backend == "numpy":
        p = nranks if nranks is not None else (len(devices) if devices is not None else 1)
        g = ProcessGrid.create(p, grid, m, n)
        from .backend_numpy import NumpySimBackend
        return DistContext(NumpySimBackend(g))
    if backend in ("cupy", "nccl", "gpu"):
        if devices is None:
            import cupy
            devices = list(range(cupy.cuda.runtime.getDeviceCount()))
        g = ProcessGrid.create(len(devices), grid, m, n)
        from .backend_cupy import cupy_local
        return DistContext(cupy_local(devices, g, local_gemm=local_gemm, timeout=timeout))
    raise ArgumentError(f"backend must be 'numpy' or 'cupy', got {backend!r}")
