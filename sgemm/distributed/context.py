"""The user-facing object: a backend, its grid, and scatter / gemm / gather.

Under MPI (one process per rank):

    from sgemm import distributed as dist
    ctx = dist.init("cupy")                        # or "numpy"
    print(ctx.explain(m, n, k))                    # algorithm, grid, panel: the model's choice
    lay = ctx.layout(m, n, k, trans_a=False)       # A, B, C descriptors of that plan
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
from .ksplit import KSplitLayout, ksplit
from .layout import BlockCyclic
from .model import DistPlan, ksplit_plan, plan_gemm, summa_plan
from .redistribute import gather_matrix, scatter_matrix
from .summa import SummaStats, summa


class DistContext:
    def __init__(self, backend: Backend, comm=None, *, factory=None, fixed_grid: bool = False,
                 link_gbs: float | None = None, latency_us: float | None = None):
        self.backend = backend            # the backend of the grid chosen at creation
        self.comm = comm
        self.last_stats: SummaStats | None = None
        self.last_plan: DistPlan | None = None
        self.fixed_grid = fixed_grid      # a grid given at creation: SUMMA always runs on it
        self.link_gbs, self.latency_us = link_gbs, latency_us
        self._factory = factory           # ProcessGrid -> Backend, for grids the model picks
        self._backends = {backend.grid.shape: backend}
        self._hook = None
        self._plans: dict = {}
        self._layout_plans: dict = {}     # layout -> the plan it came from
        self._machines: dict = {}

    # -- who ----------------------------------------------------------------------------
    @property
    def grid(self) -> ProcessGrid:
        """The grid chosen at creation (plans may run on others: ``plan``)."""
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

    def barrier(self) -> None:
        if self.comm is not None:
            self.comm.Barrier()

    # -- backends per grid --------------------------------------------------------------------
    def backend_for(self, grid) -> Backend:
        """The backend (communicators) of ``grid`` (a ProcessGrid, a shape, or
        a layout), created on first use: collective, every rank must ask for
        the same grids in the same order (SPMD code does)."""
        grid = getattr(grid, "grid", grid)
        shape = grid.shape if isinstance(grid, ProcessGrid) else tuple(grid)
        be = self._backends.get(shape)
        if be is None:
            if self._factory is None:
                raise ArgumentError(f"this context runs on {self.grid} only, not {shape}")
            be = self._factory(ProcessGrid.create(self.size, shape))
            if self._hook is not None:
                be = self._hook(be)
            for other in self._backends.values():      # same settings as the others
                for name in ("local_gemm", "persistent"):
                    if hasattr(other, name):
                        setattr(be, name, getattr(other, name))
                break
            self._backends[shape] = be
        return be

    def backends(self) -> list[Backend]:
        return list(self._backends.values())

    def set_backend_hook(self, fn) -> None:
        """Wrap every backend, present and future, as ``fn(backend)`` (tests:
        fault injection)."""
        self._hook = fn
        self._backends = {k: fn(be) for k, be in self._backends.items()}
        self.backend = self._backends[self.backend.grid.shape]

    @property
    def local_gemm(self):
        return getattr(self.backend, "local_gemm", None)

    @local_gemm.setter
    def local_gemm(self, value) -> None:
        for be in self._backends.values():
            be.local_gemm = value

    # -- the model --------------------------------------------------------------------------
    def machine(self, precision=None):
        """The cost model's machine for this context (model.py)."""
        key = precision or "ieee"
        mach = self._machines.get(key)
        if mach is None:
            mach = self.backend.machine(precision, self.link_gbs, self.latency_us)
            self._machines[key] = mach
        return mach

    def plan(self, m: int, n: int, k: int, *, trans_a: bool = False, trans_b: bool = False,
             beta: float = 0.0, precision=None, algorithm: str = "auto", grid=None,
             mb: int | None = None, nb: int | None = None, kb: int | None = None) -> DistPlan:
        """The algorithm, grid and panel width the model picks for this GEMM
        (``model.plan_gemm``), every candidate in ``.candidates``; ``.explain()``
        gives them as text.  Under MPI rank 0 decides and broadcasts (collective on
        the first call of a shape), so every rank runs the same plan."""
        if grid is None and self.fixed_grid and algorithm != "ksplit":
            grid = self.grid.shape
        if isinstance(grid, ProcessGrid):
            grid = grid.shape
        key = (m, n, k, bool(trans_a), bool(trans_b), beta != 0.0, precision or "ieee",
               algorithm, None if grid is None else tuple(grid), mb, nb, kb)
        plan = self._plans.get(key)
        if plan is None:
            def make():
                return plan_gemm(m, n, k, self.size, self.machine(precision), trans_a=trans_a,
                                 trans_b=trans_b, beta=beta, algorithm=algorithm, grid=grid,
                                 mb=mb, nb=nb, kb=kb)
            if self.multi_process:
                plan = None
                if self.rank == 0:
                    try:
                        plan = make()
                    except Exception as e:  # noqa: BLE001 -- raised on every rank below
                        plan = e
                plan = self.comm.bcast(plan, root=0)
                if isinstance(plan, Exception):
                    raise plan
            else:
                plan = make()
            if len(self._plans) > 256:
                self._plans.clear()
                self._layout_plans.clear()
            self._plans[key] = plan
        return plan

    def explain(self, m: int, n: int, k: int, **kwargs) -> str:
        """``plan(...).explain()``: the choice and the best candidates as text."""
        return self.plan(m, n, k, **kwargs).explain()

    def layout(self, m: int, n: int, k: int, **kwargs):
        """The descriptors the model's plan runs on (``GemmLayout`` for SUMMA,
        ``KSplitLayout`` for the K split).  Keywords as ``plan``: trans_a,
        trans_b, mb, nb, kb, algorithm, grid, precision, beta."""
        plan = self.plan(m, n, k, **kwargs)
        lay = plan.layout()
        self._layout_plans[lay] = plan
        return lay

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
    def _plan_of(self, layout, precision, beta) -> DistPlan:
        """The plan ``layout`` came from, else the model's figures for it."""
        plan = self._layout_plans.get(layout)
        if plan is not None:
            return plan
        mach = self.machine(precision)
        if isinstance(layout, KSplitLayout):
            return ksplit_plan(layout.m, layout.n, layout.k, layout.grid.size, mach,
                               trans_a=layout.trans_a, trans_b=layout.trans_b, beta=beta,
                               mb=layout.mb)
        return summa_plan(layout.m, layout.n, layout.k, layout.grid, mach,
                          trans_a=layout.trans_a, trans_b=layout.trans_b, beta=beta,
                          mb=layout.mb, nb=layout.nb, kb=layout.kb)

    def gemm(self, a, b, c=None, *, layout, alpha: float = 1.0, beta: float = 0.0,
             precision=None, kernel="auto", profile: bool = False, timeout: float | None = None):
        """c = alpha * op(A) @ op(B) + beta * c on distributed local arrays
        laid out by ``layout`` (from ``layout()``/``plan().layout()``: SUMMA's
        GemmLayout or the K split's KSplitLayout, on the grid it names).
        c None (beta must be 0): allocated.  Returns c; timings, when
        ``profile``, in ``self.last_stats`` (with the plan and its predicted
        figures); the plan in ``self.last_plan``."""
        lists = not self.multi_process
        al, bl = (a, b) if lists else ([a], [b])
        be = self.backend_for(layout.grid)
        if c is None:
            if beta != 0.0:
                raise ArgumentError(f"beta={beta} needs c")
            cl = [be.empty(ctx, layout.c.local_shape(ctx.rank)) for ctx in be.ctxs]
        else:
            cl = c if lists else [c]
        run = ksplit if isinstance(layout, KSplitLayout) else summa
        self.last_stats = run(be, layout, al, bl, cl, alpha=alpha, beta=beta,
                              precision=precision, kernel=kernel, profile=profile,
                              timeout=timeout)
        self.last_plan = (self._plan_of(layout, precision, beta) if profile
                          else self._layout_plans.get(layout))
        if self.last_stats is not None:
            self.last_stats.plan = self.last_plan
            self.last_stats.timing = be.timing
        return cl if lists else cl[0]

    def gemm_global(self, a, b, c=None, *, alpha: float = 1.0, beta: float = 0.0,
                    trans_a: bool = False, trans_b: bool = False, mb=None, nb=None, kb=None,
                    precision=None, kernel="auto", root: int = 0, profile: bool = False,
                    timeout: float | None = None, algorithm: str = "auto", grid=None):
        """Whole-matrix convenience: ``a``, ``b`` (and ``c`` when beta != 0) on
        ``root``; returns C on root (``c`` updated in place when given), None
        elsewhere.  The model picks algorithm, grid and panel width unless
        given.  Scatter and gather stage through host memory."""
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
        lay = self.layout(m, n, k, trans_a=trans_a, trans_b=trans_b, mb=mb, nb=nb, kb=kb,
                          precision=precision, beta=beta, algorithm=algorithm, grid=grid)
        al = self.scatter(a, lay.a, root)
        bl = self.scatter(b, lay.b, root)
        cl = self.scatter(c, lay.c, root) if beta != 0.0 else None
        cl = self.gemm(al, bl, cl, layout=lay, alpha=alpha, beta=beta, precision=precision,
                       kernel=kernel, profile=profile, timeout=timeout)
        out = c if (c is not None and (not self.multi_process or self.rank == root)) else None
        return self.gather(cl, lay.c, root, out=out)

    def close(self) -> None:
        for be in self._backends.values():
            be.close()


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
         local_gemm: str = "sgemm", timeout: float | None = None,
         link_gbs: float | None = None, latency_us: float | None = None) -> DistContext:
    """Context for this MPI process.  backend: "numpy" (CPU, MPI collectives)
    or "cupy" (GPU, NCCL).  grid: (nprow, npcol) to run every SUMMA on; by
    default the cost model picks algorithm, grid and panel width per problem
    (model.py; link_gbs / latency_us override its link figures).  device: GPU
    of this rank, default node-local rank modulo the visible GPUs."""
    from mpi4py import MPI
    comm = comm if comm is not None else MPI.COMM_WORLD
    g = ProcessGrid.create(comm.Get_size(), grid)
    if backend == "numpy":
        from .backend_numpy import NumpyMPIBackend

        def factory(gr):
            return NumpyMPIBackend(comm, gr, timeout=timeout)
        be = factory(g)
    elif backend in ("cupy", "nccl", "gpu"):
        from .backend_cupy import cupy_mpi
        be = cupy_mpi(comm, g, device=device, local_gemm=local_gemm, timeout=timeout)
        dev = be.ctxs[0].device

        def factory(gr):
            return cupy_mpi(comm, gr, device=dev, local_gemm=local_gemm, timeout=timeout)
    else:
        raise ArgumentError(f"backend must be 'numpy' or 'cupy', got {backend!r}")
    return DistContext(be, comm, factory=factory, fixed_grid=grid is not None,
                       link_gbs=link_gbs, latency_us=latency_us)


def local(backend: str = "numpy", *, nranks: int | None = None, devices=None, grid=None,
          m: int | None = None, n: int | None = None, local_gemm: str = "sgemm",
          timeout: float | None = None, link_gbs: float | None = None,
          latency_us: float | None = None) -> DistContext:
    """Context driving every rank from this process: "cupy" (one rank per
    GPU in ``devices``, NCCL) or "numpy" (``nranks`` simulated ranks).
    grid: as ``init``."""
    kw = dict(fixed_grid=grid is not None, link_gbs=link_gbs, latency_us=latency_us)
    if backend == "numpy":
        p = nranks if nranks is not None else (len(devices) if devices is not None else 1)
        g = ProcessGrid.create(p, grid, m, n)
        from .backend_numpy import NumpySimBackend
        return DistContext(NumpySimBackend(g), factory=NumpySimBackend, **kw)
    if backend in ("cupy", "nccl", "gpu"):
        if devices is None:
            import cupy
            devices = list(range(cupy.cuda.runtime.getDeviceCount()))
        g = ProcessGrid.create(len(devices), grid, m, n)
        from .backend_cupy import cupy_local

        def factory(gr):
            return cupy_local(devices, gr, local_gemm=local_gemm, timeout=timeout)
        return DistContext(factory(g), factory=factory, **kw)
    raise ArgumentError(f"backend must be 'numpy' or 'cupy', got {backend!r}")
