"""SUMMA (van de Geijn & Watts, 1997), written once for every backend.

For each K panel t (kb wide, the last one possibly shorter):

* the grid column that owns A's panel t broadcasts it along each grid row
  (every process of row r receives the op(A) rows of its C rows);
* the grid row that owns B's panel t broadcasts it along each grid column;
* every process accumulates  C_loc = alpha * A_t @ B_t + (beta if t == 0 else 1) * C_loc.

Pipelining: panels are double-buffered.  Broadcasts run on the COMM stream,
GEMMs on the COMPUTE stream; step t's GEMM waits for the event "panel t
received", and the broadcast that refills a buffer waits for the event
"GEMM t-2 done" (the last reader of that buffer).  The broadcast for panel
t+1 is issued before the GEMM for panel t, so it overlaps it.

Transposes need no extra communication: the layout stores A^T / B^T
transposed over the grid (see layout.py), the panel is then a row block
instead of a column block, and the local GEMM runs with trans_a / trans_b.

A root whose panel is already contiguous in its local array broadcasts it
in place; otherwise it first copies it into the panel buffer (on the COMM
stream).  With one process along an axis there is nothing to broadcast and
the local array slice is used directly when the local GEMM takes strided
views.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..errors import ArgumentError
from .backend import COL, COMM, COMPUTE, ROW, Backend, BcastOp
from .layout import GemmLayout


@dataclass
class RankStats:
    rank: int
    device: int | None
    steps: int
    total_s: float          # first event to last GEMM, this rank
    compute_s: float        # sum of local GEMM times
    comm_s: float           # sum of panel copy + broadcast times
    exposed_comm_s: float   # total - compute: time not covered by GEMMs


@dataclass
class SummaStats:
    """Per-rank timings of one distributed GEMM (SUMMA or the K split), and
    the plan it ran with: the model's predicted figures beside the measured."""
    ranks: list[RankStats]
    flops: int
    algorithm: str = "summa"
    plan: object = None             # model.DistPlan, set by DistContext.gemm
    timing: str = ""                # "cuda events" or "host timers"

    @property
    def total_s(self) -> float:
        return max(r.total_s for r in self.ranks)

    @property
    def compute_s(self) -> float:
        return max(r.compute_s for r in self.ranks)

    @property
    def comm_s(self) -> float:
        return max(r.comm_s for r in self.ranks)

    @property
    def exposed_comm_s(self) -> float:
        return max(r.exposed_comm_s for r in self.ranks)

    @property
    def predicted_exposed_comm_s(self) -> float | None:
        return self.plan.exposed_comm_s if self.plan is not None else None

    def as_dict(self) -> dict:
        return {"algorithm": self.algorithm, "total_s": self.total_s,
                "compute_s": self.compute_s, "comm_s": self.comm_s,
                "exposed_comm_s": self.exposed_comm_s, "measured_with": self.timing,
                "flops": self.flops, "ranks": [asdict(r) for r in self.ranks],
                "plan": self.plan.as_dict() if self.plan is not None else None,
                "predicted": self.plan.predicted() if self.plan is not None else None}


def _check_local(name, arr, shape, xp):
    if arr is None:
        raise ArgumentError(f"{name}: local array missing")
    if tuple(arr.shape) != tuple(shape):
        raise ArgumentError(f"{name}: local array has shape {tuple(arr.shape)}, the layout "
                            f"gives this rank {tuple(shape)}")
    if arr.dtype != np.float32:
        raise ArgumentError(f"{name}: local array must be float32, got {arr.dtype}")


def summa(backend: Backend, layout: GemmLayout, a_locs, b_locs, c_locs, *,
          alpha: float = 1.0, beta: float = 0.0, precision=None, kernel="auto",
          profile: bool = False, timeout: float | None = None) -> SummaStats | None:
    """C_loc = alpha * op(A) @ op(B) + beta * C_loc on every rank of ``backend``.

    a_locs, b_locs, c_locs: one local array per rank the backend drives (in
    ``backend.ctxs`` order), shaped by ``layout``; c is updated in place (with
    beta == 0 it is not read).  Returns per-rank timings when ``profile``.
    Blocks until done (or raises DistributedTimeoutError after ``timeout`` s).
    """
    ctxs = check_call(backend, layout, a_locs, b_locs, c_locs)
    alpha, beta = float(alpha), float(beta)
    grid, ta, tb = layout.grid, layout.trans_a, layout.trans_b
    kax_a, kax_b = layout.k_axis_a, layout.k_axis_b
    nsteps = layout.nsteps
    kb = layout.kb

    st = []   # per-ctx state
    for i, ctx in enumerate(ctxs):
        _check_local("a", a_locs[i], layout.a.local_shape(ctx.rank), backend.xp)
        _check_local("b", b_locs[i], layout.b.local_shape(ctx.rank), backend.xp)
        _check_local("c", c_locs[i], layout.c.local_shape(ctx.rank), backend.xp)
        m_loc, n_loc = layout.c.local_shape(ctx.rank)
        st.append({"m": m_loc, "n": n_loc, "a": a_locs[i], "b": b_locs[i], "c": c_locs[i],
                   "abuf": [None, None], "bbuf": [None, None],
                   "panels": [None, None], "recv": [None, None], "done": [None, None],
                   "comm_t": 0.0, "compute_t": 0.0, "marks": []})

    def panel_buffer(ctx, s, which, i, shape):
        """A contiguous (shape) view of ctx's panel buffer ``which`` number i."""
        size = int(np.prod(shape))
        key = which + "buf"
        if s[key][i] is None:
            full = (s["m"] * kb) if which == "a" else (kb * s["n"])
            s[key][i] = backend.buffer(ctx, f"panel-{which}{i}", full)
        return s[key][i][:size].reshape(shape)

    def a_panel_src(s, t):
        off, w = kax_a.local_offset(t), kax_a.block_len(t)
        return s["a"][off:off + w, :] if ta else s["a"][:, off:off + w]

    def b_panel_src(s, t):
        off, w = kax_b.local_offset(t), kax_b.block_len(t)
        return s["b"][:, off:off + w] if tb else s["b"][off:off + w, :]

    def issue_comm(t):
        i = t % 2
        w = kax_a.block_len(t)
        root_a, root_b = kax_a.owner(t), kax_b.owner(t)
        ops = []
        for ctx, s in zip(ctxs, st):
            backend.wait(ctx, COMM, s["done"][i])
            if profile:
                t0 = backend.timer(ctx, COMM)
            a_shape = (w, s["m"]) if ta else (s["m"], w)
            b_shape = (s["n"], w) if tb else (w, s["n"])
            # A panel along the grid row.
            if grid.npcol == 1:
                pa = a_panel_src(s, t)
                if not backend.accepts_strided and not backend.is_contiguous(pa):
                    buf = panel_buffer(ctx, s, "a", i, a_shape)
                    backend.copy(ctx, buf, pa)
                    pa = buf
            else:
                if ctx.col == root_a:
                    src = a_panel_src(s, t)
                    if backend.is_contiguous(src):
                        pa = src
                    else:
                        pa = panel_buffer(ctx, s, "a", i, a_shape)
                        backend.copy(ctx, pa, src)
                else:
                    pa = panel_buffer(ctx, s, "a", i, a_shape)
                if pa.size:
                    ops.append(BcastOp(ctx, ROW, pa, root_a))
            # B panel along the grid column.
            if grid.nprow == 1:
                pb = b_panel_src(s, t)
                if not backend.accepts_strided and not backend.is_contiguous(pb):
                    buf = panel_buffer(ctx, s, "b", i, b_shape)
                    backend.copy(ctx, buf, pb)
                    pb = buf
            else:
                if ctx.row == root_b:
                    src = b_panel_src(s, t)
                    if backend.is_contiguous(src):
                        pb = src
                    else:
                        pb = panel_buffer(ctx, s, "b", i, b_shape)
                        backend.copy(ctx, pb, src)
                else:
                    pb = panel_buffer(ctx, s, "b", i, b_shape)
                if pb.size:
                    ops.append(BcastOp(ctx, COL, pb, root_b))
            s["panels"][i] = (pa, pb)
            if profile:
                s["_comm_t0"] = t0
        backend.bcast(ops)          # one NCCL group for every rank and both axes
        for ctx, s in zip(ctxs, st):
            s["recv"][i] = backend.record(ctx, COMM)
            if profile:
                s["marks"].append(("comm", s.pop("_comm_t0"), backend.timer(ctx, COMM)))

    def issue_compute(t):
        i = t % 2
        beta_t = beta if t == 0 else 1.0
        for ctx, s in zip(ctxs, st):
            backend.wait(ctx, COMPUTE, s["recv"][i])
            pa, pb = s["panels"][i]
            if profile:
                t0 = backend.timer(ctx, COMPUTE)
            if s["c"].size:
                backend.gemm(ctx, pa, pb, s["c"], alpha=alpha, beta=beta_t, trans_a=ta,
                             trans_b=tb, precision=precision, kernel=kernel)
            if profile:
                s["marks"].append(("compute", t0, backend.timer(ctx, COMPUTE)))
            s["done"][i] = backend.record(ctx, COMPUTE)
            s["panels"][i] = None

    def steps():
        if nsteps == 0:
            for ctx, s in zip(ctxs, st):
                if s["c"].size:
                    backend.scale(ctx, s["c"], beta)
            return
        issue_comm(0)
        for t in range(nsteps):
            if t + 1 < nsteps:
                issue_comm(t + 1)
            issue_compute(t)

    return run_steps(backend, st, steps, nsteps, layout.flops, "summa", profile, timeout)


def check_call(backend: Backend, layout, a_locs, b_locs, c_locs) -> list:
    """The ranks ``backend`` drives, after checking that ``layout`` is on its
    grid and there is one local array of each operand per rank."""
    if layout.grid != backend.grid:
        raise ArgumentError(f"layout grid {layout.grid} differs from the backend's {backend.grid}")
    ctxs = backend.ctxs
    if not (len(a_locs) == len(b_locs) == len(c_locs) == len(ctxs)):
        raise ArgumentError(f"need one local array per rank driven here ({len(ctxs)}), got "
                            f"{len(a_locs)}, {len(b_locs)}, {len(c_locs)}")
    return ctxs


def run_steps(backend: Backend, st: list, steps, nsteps: int, flops: int, algorithm: str,
              profile: bool, timeout) -> SummaStats | None:
    """Order every rank's streams after the caller's work, run ``steps()``
    (which issues the algorithm's work and appends ("comm" | "compute", t0,
    t1) timer pairs to ``st[i]["marks"]`` when profiling), order the caller
    after it, wait (with the deadline), and collect per-rank timings."""
    ctxs = backend.ctxs
    begin_marks, end_marks = [], []
    try:
        for ctx in ctxs:
            backend.begin(ctx)
            if profile:
                t_begin = backend.timer(ctx, COMPUTE)
                backend.wait(ctx, COMM, t_begin)   # COMM starts no earlier than the timer
                begin_marks.append(t_begin)
        steps()
        for ctx in ctxs:
            if profile:
                end_marks.append(backend.timer(ctx, COMPUTE))
            backend.end(ctx)
        backend.synchronize(ctxs, timeout)
    finally:
        backend.release()

    if not profile:
        return None
    ranks = []
    for ctx, s, t_begin, t_end in zip(ctxs, st, begin_marks, end_marks):
        comm_s = sum(backend.elapsed(a, b) for kind, a, b in s["marks"] if kind == "comm")
        comm_s += backend.extra_comm_time(ctx)
        compute_s = sum(backend.elapsed(a, b) for kind, a, b in s["marks"] if kind == "compute")
        total_s = backend.elapsed(t_begin, t_end)
        ranks.append(RankStats(ctx.rank, ctx.device, nsteps, total_s, compute_s, comm_s,
                               max(0.0, total_s - compute_s)))
    return SummaStats(ranks, flops, algorithm=algorithm)
