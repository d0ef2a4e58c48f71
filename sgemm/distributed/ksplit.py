"""The K split: for deep products (k >> m, n), where SUMMA would move far more
panel data than C has.

Rank r of p holds a K slice of both operands (A: all m rows, columns
[r ks, (r+1) ks); B: those rows, all n columns; ks = ceil(k/p)) and computes
the whole m x n partial product of its slice, one C row chunk at a time
(h = p mb rows).  Each chunk's partials are summed by a reduce-scatter over
all ranks (NCCL on the GPU, ``Ireduce_scatter_block`` on the CPU), which
leaves rows [r mb, (r+1) mb) of the chunk on rank r: C is distributed in
row blocks of mb dealt cyclically to a p x 1 grid, the layout the
reduce-scatter produces, so no data moves afterwards.

Order (the compute and communication streams of backend.py):

    compute:  G0  G1  A0  G2  A1 ... G_{J-1}  A_{J-2}  A_{J-1}
    comm:         RS0     RS1     ...         RS_{J-1}

G_j: W[j % 2] = alpha op(A)[chunk j] op(B) (beta = 0, this rank's slice);
RS_j waits for G_j, then reduce-scatters W[j % 2] into R[j % 2];
A_j waits for RS_j, then C_blk = R + beta C_blk.  RS_j overlaps G_{j+1};
G_{j+2} reuses W[j % 2] after A_j (which waited for RS_j) in stream order,
and RS_{j+2} reuses R[j % 2] after G_{j+2}, hence after A_j.  The rows of
the last chunk past m are zero in W.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ArgumentError
from .backend import COMM, COMPUTE, Backend, ReduceScatterOp
from .grid import ProcessGrid
from .layout import BlockCyclic, _cdiv, _check_int
from .summa import SummaStats, _check_local, check_call, run_steps


@dataclass(frozen=True)
class KSplitLayout:
    """A, B split along K over p ranks; C in mb-row blocks over a p x 1 grid."""
    m: int
    n: int
    k: int
    grid: ProcessGrid               # p x 1
    mb: int                         # C rows per rank per chunk
    trans_a: bool = False
    trans_b: bool = False
    a: BlockCyclic = field(init=False)
    b: BlockCyclic = field(init=False)
    c: BlockCyclic = field(init=False)
    algorithm = "ksplit"

    def __post_init__(self):
        for name in ("m", "n", "k"):
            _check_int(name, getattr(self, name), 0)
        _check_int("mb", self.mb, 1)
        if self.grid.npcol != 1:
            raise ArgumentError(f"the K split runs on a p x 1 grid, got {self.grid}")
        p = self.grid.size
        rows, cols = ProcessGrid(p, 1), ProcessGrid(1, p)
        m1, n1, ks = max(self.m, 1), max(self.n, 1), self.ks
        a = (BlockCyclic((self.k, self.m), (ks, m1), rows) if self.trans_a
             else BlockCyclic((self.m, self.k), (m1, ks), cols))
        b = (BlockCyclic((self.n, self.k), (n1, ks), cols) if self.trans_b
             else BlockCyclic((self.k, self.n), (ks, n1), rows))
        c = BlockCyclic((self.m, self.n), (self.mb, n1), rows)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "c", c)

    @property
    def ks(self) -> int:
        """K slice per rank (the last rank's may be shorter or empty)."""
        return max(1, _cdiv(self.k, self.grid.size))

    @property
    def chunk(self) -> int:
        """C rows per chunk (p x mb)."""
        return self.grid.size * self.mb

    @property
    def nsteps(self) -> int:
        return _cdiv(self.m, self.chunk) if self.m and self.n else 0

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    def k_range(self, rank: int) -> tuple[int, int]:
        s = min(rank * self.ks, self.k)
        return s, min(s + self.ks, self.k)

    def local_shapes(self, rank: int) -> dict:
        return {"a": self.a.local_shape(rank), "b": self.b.local_shape(rank),
                "c": self.c.local_shape(rank)}


def ksplit_layout(m: int, n: int, k: int, grid: ProcessGrid, *, trans_a: bool = False,
                  trans_b: bool = False, mb: int | None = None) -> KSplitLayout:
    """Descriptors for the K split on ``grid`` (p x 1).  mb default: one chunk."""
    m, n, k = (_check_int(x, v, 0) for x, v in (("m", m), ("n", n), ("k", k)))
    if mb is None:
        mb = max(1, _cdiv(m, grid.size))
    return KSplitLayout(m, n, k, grid, mb, bool(trans_a), bool(trans_b))


def ksplit(backend: Backend, layout: KSplitLayout, a_locs, b_locs, c_locs, *,
           alpha: float = 1.0, beta: float = 0.0, precision=None, kernel="auto",
           profile: bool = False, timeout: float | None = None) -> SummaStats | None:
    """C_loc = alpha op(A) op(B) + beta C_loc on every rank of ``backend``
    (a p x 1 grid), local arrays shaped by ``layout``; as ``summa``."""
    ctxs = check_call(backend, layout, a_locs, b_locs, c_locs)
    alpha, beta = float(alpha), float(beta)
    p, mb, n, m = layout.grid.size, layout.mb, layout.n, layout.m
    h, nsteps = layout.chunk, layout.nsteps
    ta, tb = layout.trans_a, layout.trans_b
    skip = layout.k == 0 or alpha == 0.0          # the same on every rank: no communication

    st = []
    for i, ctx in enumerate(ctxs):
        for name, arr, desc in (("a", a_locs[i], layout.a), ("b", b_locs[i], layout.b),
                                ("c", c_locs[i], layout.c)):
            _check_local(name, arr, desc.local_shape(ctx.rank), backend.xp)
        st.append({"a": a_locs[i], "b": b_locs[i], "c": c_locs[i], "w": [None, None],
                   "r": [None, None], "gemm": [None, None], "rs": [None, None], "marks": []})

    def buf(ctx, s, which, i, nelems):
        if s[which][i] is None:
            full = (h if which == "w" else mb) * n
            s[which][i] = backend.buffer(ctx, f"ksplit-{which}{i}", full)
        return s[which][i][:nelems]

    def gemm(j):
        i = j % 2
        r0, r1 = j * h, min((j + 1) * h, m)
        for ctx, s in zip(ctxs, st):
            w = buf(ctx, s, "w", i, h * n).reshape(h, n)
            a = s["a"][:, r0:r1] if ta else s["a"][r0:r1, :]
            if profile:
                t0 = backend.timer(ctx, COMPUTE)
            backend.gemm(ctx, a, s["b"], w[:r1 - r0], alpha=alpha, beta=0.0, trans_a=ta,
                         trans_b=tb, precision=precision, kernel=kernel)
            if r1 - r0 < h:
                backend.scale(ctx, w[r1 - r0:], 0.0)      # rows past m: zeros
            if profile:
                s["marks"].append(("compute", t0, backend.timer(ctx, COMPUTE)))
            s["gemm"][i] = backend.record(ctx, COMPUTE)

    def reduce(j):
        i = j % 2
        ops = []
        for ctx, s in zip(ctxs, st):
            backend.wait(ctx, COMM, s["gemm"][i])
            if profile:
                s["_t0"] = backend.timer(ctx, COMM)
            w = buf(ctx, s, "w", i, h * n)
            r = buf(ctx, s, "r", i, mb * n)
            if p == 1:
                backend.copy(ctx, r, w)
            else:
                ops.append(ReduceScatterOp(ctx, w, r))
        if ops:
            backend.reduce_scatter(ops)           # one NCCL group for every rank
        for ctx, s in zip(ctxs, st):
            s["rs"][i] = backend.record(ctx, COMM)
            if profile:
                s["marks"].append(("comm", s.pop("_t0"), backend.timer(ctx, COMM)))

    def accumulate(j):
        i = j % 2
        for ctx, s in zip(ctxs, st):
            backend.wait(ctx, COMPUTE, s["rs"][i])
            b = j * p + ctx.row                          # C block index of this rank
            rows = layout.c.rows.block_len(b) if b < layout.c.rows.nblocks else 0
            if profile:
                t0 = backend.timer(ctx, COMPUTE)
            if rows and n:
                off = layout.c.rows.local_offset(b)
                r = buf(ctx, s, "r", i, mb * n).reshape(mb, n)
                backend.accumulate(ctx, s["c"][off:off + rows], r[:rows], beta)
            if profile:
                s["marks"].append(("compute", t0, backend.timer(ctx, COMPUTE)))

    def steps():
        if skip or nsteps == 0:
            for ctx, s in zip(ctxs, st):
                if s["c"].size:
                    backend.scale(ctx, s["c"], beta)
            return
        for j in range(nsteps):
            gemm(j)
            reduce(j)
            if j >= 1:
                accumulate(j - 1)
        accumulate(nsteps - 1)

    done = 0 if skip else nsteps
    return run_steps(backend, st, steps, done, layout.flops, "ksplit", profile, timeout)
