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

from .backend import COMM, COMPUTE, Backend, ReduceScatterOp
from .layout import KSplitLayout, ksplit_layout  # noqa: F401 (re-exported)
from .summa import SummaStats, _check_local, check_call, run_steps


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
