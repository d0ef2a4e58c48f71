"""GPU backend: CuPy arrays, NCCL broadcasts, the local GEMM from sgemm.gemm
(or cuBLAS for comparison).

Each rank owns two non-blocking streams on its device: COMPUTE (local GEMMs)
and COMM (panel copies, NCCL broadcasts and the K split's reduce-scatters, at
the highest stream priority so that their small kernels get SMs as soon as
GEMM blocks retire).  Ordering between them is by CUDA events only, so the
broadcast of panel t+1 overlaps the GEMM of panel t.

The local GEMM is ``sgemm.plan(..., kernel=, precision=)``: the public path,
whose kernel="auto" choice is the tuned table, else the planner's cost model
(sgemm/planner.py), in the precision the caller asked for.

Two constructors:

* ``cupy_mpi(comm, grid)``: one process per GPU under MPI.  Row and column
  NCCL communicators are created with ``NcclCommunicator(n, uid, rank)``; the
  unique id is made by the first process of each row/column and broadcast over
  the matching MPI sub-communicator.  The device is the node-local rank
  modulo the visible device count.
* ``cupy_local(devices, grid)``: one process driving several GPUs of this
  machine in lockstep; communicators from ``NcclCommunicator.initAll`` per
  grid row and column; every step's broadcasts of all devices go in one
  ``groupStart``/``groupEnd``.
"""
from __future__ import annotations

import time

import numpy as np

from .backend import COMM, COMPUTE, ROW, Backend, BcastOp, RankContext, ReduceScatterOp
from .grid import ProcessGrid
from .guard import (DistributedError, default_timeout, ensure_nccl_env, poll_until,
                    register_abort_hook, unregister_abort_hook)

LOCAL_GEMMS = ("sgemm", "cublas")


def _cupy():
    import cupy
    return cupy


def _make_stream(cupy, high_priority: bool):
    """A non-blocking stream; high_priority: the device's highest priority
    (CUDA clamps an out-of-range priority to the valid range)."""
    if high_priority:
        prio = -100
        rng = getattr(cupy.cuda.runtime, "deviceGetStreamPriorityRange", None)
        if rng is not None:
            try:
                prio = rng()[1]
            except Exception:
                pass
        try:
            return cupy.cuda.Stream(non_blocking=True, priority=prio)
        except TypeError:         # CuPy without stream priorities
            pass
    return cupy.cuda.Stream(non_blocking=True)


class CupyBackend(Backend):
    name = "cupy+nccl"
    timing = "cuda events"

    def __init__(self, grid: ProcessGrid, ctxs: list[RankContext], *, multi_process: bool,
                 local_gemm: str = "sgemm", timeout: float | None = None):
        if local_gemm not in LOCAL_GEMMS:
            raise DistributedError(f"local_gemm must be one of {LOCAL_GEMMS}, got {local_gemm!r}")
        super().__init__(grid, ctxs)
        cupy = _cupy()
        self.xp = cupy
        self.multi_process = multi_process
        self.local_gemm = local_gemm
        self.timeout = timeout
        self._plans: dict = {}
        self.name = f"cupy+nccl ({'mpi' if multi_process else 'single process'}, {local_gemm})"
        for ctx in ctxs:
            with cupy.cuda.Device(ctx.device):
                ctx.streams[COMPUTE] = _make_stream(cupy, False)
                ctx.streams[COMM] = _make_stream(cupy, True)
        register_abort_hook(self._abort_comms)

    # -- placement ------------------------------------------------------------------
    def scope(self, ctx):
        return self.xp.cuda.Device(ctx.device)

    def empty(self, ctx, shape):
        with self.scope(ctx):
            return self.xp.empty(shape, dtype=np.float32)

    def zeros(self, ctx, shape):
        with self.scope(ctx):
            return self.xp.zeros(shape, dtype=np.float32)

    def from_any(self, ctx, arr):
        return to_device(arr, ctx.device)

    def to_host(self, ctx, arr) -> np.ndarray:
        if isinstance(arr, np.ndarray):
            return arr
        with self.scope(ctx):
            return self.xp.asnumpy(arr)

    # -- streams and events -----------------------------------------------------------
    def begin(self, ctx) -> None:
        cupy = self.xp
        with self.scope(ctx):
            ev = cupy.cuda.Event(disable_timing=True)
            ev.record(cupy.cuda.get_current_stream())
            ctx.streams[COMPUTE].wait_event(ev)
            ctx.streams[COMM].wait_event(ev)

    def end(self, ctx) -> None:
        cupy = self.xp
        with self.scope(ctx):
            ev = cupy.cuda.Event(disable_timing=True)
            ev.record(ctx.streams[COMPUTE])
            cupy.cuda.get_current_stream().wait_event(ev)

    def record(self, ctx, stream):
        with self.scope(ctx):
            ev = self.xp.cuda.Event(disable_timing=True)
            ev.record(ctx.streams[stream])
            return ev

    def wait(self, ctx, stream, event) -> None:
        if event is not None:
            with self.scope(ctx):
                ctx.streams[stream].wait_event(event)

    def timer(self, ctx, stream):
        with self.scope(ctx):
            ev = self.xp.cuda.Event()
            ev.record(ctx.streams[stream])
            return ev

    def elapsed(self, t0, t1) -> float:
        return self.xp.cuda.get_elapsed_time(t0, t1) / 1e3

    def synchronize(self, ctxs, timeout) -> None:
        timeout = timeout if timeout is not None else (
            self.timeout if self.timeout is not None else default_timeout())
        deadline = time.monotonic() + timeout
        events = []
        for ctx in ctxs:
            events.append((ctx, self.record(ctx, COMPUTE), self.record(ctx, COMM)))

        def check():
            for ctx, _, _ in events:
                for comm in (ctx.row_comm, ctx.col_comm):
                    if comm is not None:
                        comm.check_async_error()

        for ctx, e1, e2 in events:
            poll_until(lambda: e1.done and e2.done, deadline,
                       f"GPU work of rank {ctx.rank} (device {ctx.device}, grid {ctx.coords})",
                       check)

    # -- operations --------------------------------------------------------------------
    def copy(self, ctx, dst, src) -> None:
        with self.scope(ctx), ctx.streams[COMM]:
            self.xp.copyto(dst, src)

    def _group(self, ops, issue) -> None:
        """``issue(nccl, op)`` for every op under its rank's device, in one NCCL
        group when there are several (one thread driving several ranks must)."""
        if not ops:
            return
        from cupy.cuda import nccl
        group = len(ops) > 1
        if group:
            nccl.groupStart()
        try:
            for op in ops:
                with self.scope(op.ctx):
                    issue(nccl, op)
        finally:
            if group:
                nccl.groupEnd()

    def bcast(self, ops: list[BcastOp]) -> None:
        def issue(nccl, op):
            comm = op.ctx.row_comm if op.axis == ROW else op.ctx.col_comm
            ptr = op.buf.data.ptr
            comm.broadcast(ptr, ptr, op.buf.size, nccl.NCCL_FLOAT32, op.root,
                           op.ctx.streams[COMM].ptr)
        self._group(ops, issue)

    def reduce_scatter(self, ops: list[ReduceScatterOp]) -> None:
        def issue(nccl, op):
            op.ctx.col_comm.reduceScatter(op.send.data.ptr, op.recv.data.ptr, op.recv.size,
                                          nccl.NCCL_FLOAT32, nccl.NCCL_SUM,
                                          op.ctx.streams[COMM].ptr)
        self._group(ops, issue)

    def accumulate(self, ctx, dst, src, beta) -> None:
        with self.scope(ctx), ctx.streams[COMPUTE]:
            if beta == 0.0:
                self.xp.copyto(dst, src)
            else:
                if beta != 1.0:
                    dst *= np.float32(beta)
                dst += src

    def machine(self, precision=None, link_gbs=None, latency_us=None):
        """The cost model's GPU machine: this rank's device (the described
        H100 where it cannot be queried) and the requested precision."""
        from .model import gpu_machine
        dev = None
        try:
            from ..runtime import device as devmod
            dev = devmod.info(self.ctxs[0].device)
        except Exception:  # noqa: BLE001 -- no driver (fake GPUs in tests): the default
            dev = None
        return gpu_machine(dev, precision, link_gbs, latency_us)

    def gemm(self, ctx, a, b, c, *, alpha, beta, trans_a, trans_b, precision, kernel) -> None:
        if c.size == 0:
            return
        stream = ctx.streams[COMPUTE]
        if self.local_gemm == "cublas":
            import cupy.cublas
            with self.scope(ctx), stream:
                if (a.shape[0] * a.shape[1]) == 0:
                    self.scale(ctx, c, beta)
                else:
                    cupy.cublas.gemm("T" if trans_a else "N", "T" if trans_b else "N",
                                     a, b, out=c, alpha=alpha, beta=beta)
            return
        key = (ctx.rank, a.data.ptr, a.shape, a.strides, b.data.ptr, b.shape, b.strides,
               c.data.ptr, float(alpha), float(beta), bool(trans_a), bool(trans_b),
               precision, kernel)
        plan = self._plans.get(key)
        with self.scope(ctx):
            if plan is None:
                import sgemm
                plan = sgemm.plan(a, b, c, alpha=alpha, beta=beta, trans_a=trans_a,
                                  trans_b=trans_b, kernel=kernel, precision=precision,
                                  stream=stream)
                if len(self._plans) >= self.MAX_PLANS:
                    self._plans.pop(next(iter(self._plans)))
                self._plans[key] = plan
            plan.execute(stream)

    def scale(self, ctx, c, beta) -> None:
        with self.scope(ctx), ctx.streams[COMPUTE]:
            if beta == 0.0:
                c.fill(0)
            elif beta != 1.0:
                c *= np.float32(beta)

    MAX_PLANS = 512

    def release(self) -> None:
        super().release()
        if not self.persistent:
            self._plans.clear()

    def _abort_comms(self) -> None:
        for ctx in self.ctxs:
            for name in ("row_comm", "col_comm"):
                comm = getattr(ctx, name)
                if comm is not None:
                    try:
                        comm.abort()
                    except Exception:
                        pass

    def close(self) -> None:
        unregister_abort_hook(self._abort_comms)
        self._plans.clear()
        self.__dict__.get("_buffers", {}).clear()
        for ctx in self.ctxs:
            for name in ("row_comm", "col_comm"):
                comm = getattr(ctx, name)
                if comm is not None:
                    try:
                        comm.destroy()
                    except Exception:
                        pass
                    setattr(ctx, name, None)
            for name in ("row_mpi", "col_mpi"):
                sub = ctx.state.pop(name, None)
                if sub is not None:
                    try:
                        sub.Free()
                    except Exception:
                        pass


def to_device(arr, device: int):
    """A C-contiguous float32 CuPy copy of ``arr`` (NumPy, or CuPy on any
    device) on ``device``; ``arr`` itself when it already is one."""
    cupy = _cupy()
    if isinstance(arr, cupy.ndarray):
        src_dev = arr.device.id
        if src_dev == device and arr.flags.c_contiguous and arr.dtype == np.float32:
            return arr
        with cupy.cuda.Device(src_dev):
            src = cupy.ascontiguousarray(arr, dtype=np.float32)
        if src_dev == device:
            return src
        with cupy.cuda.Device(device):
            dst = cupy.empty(src.shape, dtype=np.float32)
        if src.nbytes:
            cupy.cuda.Device(src_dev).synchronize()
            with cupy.cuda.Device(device):
                dst.data.copy_from_device(src.data, src.nbytes)   # peer copy
                cupy.cuda.Device(device).synchronize()
        return dst
    with cupy.cuda.Device(device):
        out = cupy.asarray(np.ascontiguousarray(arr, dtype=np.float32))
        cupy.cuda.Device(device).synchronize()
    return out


def _nccl_from_mpi(sub):
    """An NCCL communicator over the processes of an MPI sub-communicator."""
    from cupy.cuda import nccl
    uid = nccl.get_unique_id() if sub.Get_rank() == 0 else None
    uid = sub.bcast(uid, root=0)
    return nccl.NcclCommunicator(sub.Get_size(), uid, sub.Get_rank())


def local_device_index(comm) -> tuple[int, int]:
    """(node-local rank, node-local size) of this process."""
    from mpi4py import MPI
    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    try:
        return node.Get_rank(), node.Get_size()
    finally:
        node.Free()


def cupy_mpi(comm, grid: ProcessGrid, *, device: int | None = None, local_gemm: str = "sgemm",
             timeout: float | None = None) -> CupyBackend:
    """One process per GPU under MPI (see the module docstring)."""
    ensure_nccl_env()
    cupy = _cupy()
    if comm.Get_size() != grid.size:
        raise DistributedError(f"grid {grid} has {grid.size} places but the communicator "
                               f"has {comm.Get_size()} processes")
    rank = comm.Get_rank()
    r, c = grid.coords(rank)
    ndev = cupy.cuda.runtime.getDeviceCount()
    if ndev == 0:
        raise DistributedError("no CUDA device visible to this process")
    lrank, lsize = local_device_index(comm)          # collective: every rank calls it
    if device is None and ndev == 1:
        device = 0      # one visible GPU per process (CUDA_VISIBLE_DEVICES set by the launcher)
    if device is None:
        if lsize > ndev:
            raise DistributedError(
                f"{lsize} processes on this node but only {ndev} visible GPU(s): NCCL "
                "cannot put two ranks of one communicator on the same GPU; start one "
                "process per GPU")
        device = lrank % ndev
    cupy.cuda.Device(device).use()
    ctx = RankContext(rank, (r, c), device=device)
    ctx.state["row_mpi"] = comm.Split(color=r, key=c)
    ctx.state["col_mpi"] = comm.Split(color=c, key=r)
    # Same order (rows, then columns) on every process: no init deadlock.
    if grid.npcol > 1:
        ctx.row_comm = _nccl_from_mpi(ctx.state["row_mpi"])
    if grid.nprow > 1:
        ctx.col_comm = _nccl_from_mpi(ctx.state["col_mpi"])
    backend = CupyBackend(grid, [ctx], multi_process=True, local_gemm=local_gemm,
                          timeout=timeout)
    backend.comm = comm
    return backend


def cupy_local(devices, grid: ProcessGrid, *, local_gemm: str = "sgemm",
               timeout: float | None = None) -> CupyBackend:
    """Every rank of ``grid`` in this process, rank i on ``devices[i]``."""
    ensure_nccl_env()
    cupy = _cupy()
    from cupy.cuda import nccl
    devices = [int(d) for d in devices]
    if len(devices) != grid.size:
        raise DistributedError(f"{len(devices)} devices for a {grid} grid")
    if len(set(devices)) != len(devices):
        raise DistributedError(f"devices {devices} repeat a GPU (NCCL needs distinct GPUs)")
    ndev = cupy.cuda.runtime.getDeviceCount()
    bad = [d for d in devices if not 0 <= d < ndev]
    if bad:
        raise DistributedError(f"devices {bad} do not exist ({ndev} visible)")
    ctxs = [RankContext(rk, grid.coords(rk), device=devices[rk]) for rk in range(grid.size)]
    if grid.npcol > 1:
        for r in range(grid.nprow):
            ranks = grid.row_ranks(r)
            comms = nccl.NcclCommunicator.initAll([devices[x] for x in ranks])
            for x, cm in zip(ranks, comms):
                ctxs[x].row_comm = cm
    if grid.nprow > 1:
        for c in range(grid.npcol):
            ranks = grid.col_ranks(c)
            comms = nccl.NcclCommunicator.initAll([devices[x] for x in ranks])
            for x, cm in zip(ranks, comms):
                ctxs[x].col_comm = cm
    return CupyBackend(grid, ctxs, multi_process=False, local_gemm=local_gemm, timeout=timeout)
