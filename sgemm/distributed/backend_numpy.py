"""CPU backends: NumPy blocks, float32 BLAS for the local GEMM.

``NumpyMPIBackend``: one rank per MPI process; panel broadcasts are
non-blocking ``Ibcast`` on row / column communicators made with
``comm.Split`` (so a broadcast can progress while the previous panel's GEMM
runs), the K split's reductions ``Ireduce_scatter_block`` on the column
communicator of a p x 1 grid, and the COMPUTE side waits on their requests
with a deadline.

``NumpySimBackend``: every rank of the grid in this process, broadcasts are
copies.  It checks what a real collective would need (every member of the
row/column present, same root, same size) and raises instead of hanging, so
it doubles as a strict checker of SUMMA's communication pattern in unit tests.
"""
from __future__ import annotations

import time

import numpy as np

from .backend import (COMM, COMPUTE, ROW, Backend, BcastOp, RankContext, ReduceScatterOp,
                      numpy_gemm, numpy_scale)
from .grid import ProcessGrid
from .guard import DistributedError, default_timeout, poll_until


class _NumpyOps(Backend):
    xp = np

    def gemm(self, ctx, a, b, c, *, alpha, beta, trans_a, trans_b, precision, kernel) -> None:
        numpy_gemm(a, b, c, alpha, beta, trans_a, trans_b)

    def scale(self, ctx, c, beta) -> None:
        numpy_scale(c, beta)


class _Requests:
    __slots__ = ("reqs",)

    def __init__(self, reqs):
        self.reqs = reqs


class NumpyMPIBackend(_NumpyOps):
    name = "numpy+mpi"
    multi_process = True

    def __init__(self, comm, grid: ProcessGrid, timeout: float | None = None):
        if comm.Get_size() != grid.size:
            raise DistributedError(f"grid {grid} has {grid.size} places but the "
                                   f"communicator has {comm.Get_size()} processes")
        rank = comm.Get_rank()
        r, c = grid.coords(rank)
        ctx = RankContext(rank, (r, c))
        ctx.row_comm = comm.Split(color=r, key=c)
        ctx.col_comm = comm.Split(color=c, key=r)
        ctx.state["pending"] = []
        ctx.state["wait_s"] = 0.0
        super().__init__(grid, [ctx])
        self.comm = comm
        self.timeout = timeout

    def bcast(self, ops: list[BcastOp]) -> None:
        for op in ops:
            comm = op.ctx.row_comm if op.axis == ROW else op.ctx.col_comm
            op.ctx.state["pending"].append(comm.Ibcast(op.buf, root=op.root))

    def reduce_scatter(self, ops: list[ReduceScatterOp]) -> None:
        from mpi4py import MPI
        for op in ops:
            req = op.ctx.col_comm.Ireduce_scatter_block(op.send, op.recv, op=MPI.SUM)
            op.ctx.state["pending"].append(req)

    def record(self, ctx, stream):
        if stream == COMM:
            reqs, ctx.state["pending"] = ctx.state["pending"], []
            return _Requests(reqs)
        return None          # COMPUTE work is synchronous: already done

    def wait(self, ctx, stream, event) -> None:
        if stream != COMPUTE or event is None or not event.reqs:
            return
        from mpi4py import MPI
        t0 = time.perf_counter()
        timeout = self.timeout if self.timeout is not None else default_timeout()
        reqs = event.reqs
        poll_until(lambda: MPI.Request.Testall(reqs), time.monotonic() + timeout,
                   f"communication (broadcasts, reduce-scatters) on rank {ctx.rank} "
                   f"(grid {ctx.coords})")
        event.reqs = []
        ctx.state["wait_s"] += time.perf_counter() - t0

    def extra_comm_time(self, ctx) -> float:
        t, ctx.state["wait_s"] = ctx.state["wait_s"], 0.0
        return t

    def synchronize(self, ctxs, timeout) -> None:
        for ctx in ctxs:
            if ctx.state["pending"]:
                self.wait(ctx, COMPUTE, _Requests(ctx.state["pending"]))
                ctx.state["pending"] = []

    def close(self) -> None:
        for ctx in self.ctxs:
            for name in ("row_comm", "col_comm"):
                comm = getattr(ctx, name)
                if comm is not None:
                    try:
                        comm.Free()
                    except Exception:
                        pass
                    setattr(ctx, name, None)


class NumpySimBackend(_NumpyOps):
    """All ranks of ``grid`` in this process; broadcasts are copies."""
    name = "numpy-sim"
    multi_process = False

    def __init__(self, grid: ProcessGrid):
        ctxs = [RankContext(rk, grid.coords(rk)) for rk in range(grid.size)]
        super().__init__(grid, ctxs)
        self.ops_log: list[tuple[str, int, int, int]] = []    # (axis, group, root, size)

    def reduce_scatter(self, ops: list[ReduceScatterOp]) -> None:
        if self.grid.npcol != 1:
            raise DistributedError(f"reduce-scatter needs a p x 1 grid, not {self.grid}")
        rows = sorted(op.ctx.row for op in ops)
        if rows != list(range(self.grid.nprow)):
            raise DistributedError(f"reduce-scatter: members {rows} of {self.grid.nprow} "
                                   "joined (a real collective would hang)")
        sizes = {(int(op.send.size), int(op.recv.size)) for op in ops}
        if len(sizes) != 1:
            raise DistributedError(f"reduce-scatter: sizes {sizes} disagree")
        (ns, nr), = sizes
        if ns != nr * len(ops):
            raise DistributedError(f"reduce-scatter: {ns} items sent, {nr} received per rank")
        total = np.zeros(ns, np.float32)
        for op in sorted(ops, key=lambda o: o.ctx.row):
            total += op.send.reshape(-1)
        for op in ops:
            op.recv.reshape(-1)[...] = total[op.ctx.row * nr:(op.ctx.row + 1) * nr]
        self.ops_log.append(("reduce_scatter", 0, -1, ns))

    def bcast(self, ops: list[BcastOp]) -> None:
        groups: dict[tuple[str, int], list[BcastOp]] = {}
        for op in ops:
            key = (op.axis, op.ctx.row if op.axis == ROW else op.ctx.col)
            groups.setdefault(key, []).append(op)
        for (axis, g), members in groups.items():
            expected = self.grid.npcol if axis == ROW else self.grid.nprow
            pos = [m.ctx.col if axis == ROW else m.ctx.row for m in members]
            if sorted(pos) != list(range(expected)):
                raise DistributedError(f"{axis} broadcast in group {g}: members {sorted(pos)} "
                                       f"of {expected} joined (a real collective would hang)")
            roots = {m.root for m in members}
            sizes = {int(m.buf.size) for m in members}
            if len(roots) != 1 or len(sizes) != 1:
                raise DistributedError(f"{axis} broadcast in group {g}: roots {roots}, "
                                       f"sizes {sizes} disagree")
            root = roots.pop()
            src = next(m for m, p in zip(members, pos) if p == root)
            for m in members:
                if m is not src:
                    m.buf.reshape(-1)[...] = src.buf.reshape(-1)
            self.ops_log.append((axis, g, root, sizes.pop()))
