"""The cost model (sgemm/distributed/model.py) and the K split (ksplit.py) in
one process: pipelines, the choice of algorithm / grid / panel for tall,
wide, deep and square shapes on the CPU and GPU machine models, the model's
communication volume against what the simulated ranks really move, the K
split against NumPy for every case and rank count, and the plan reported by
``multi_gpu`` and ``DistContext``."""
import math

import numpy as np
import pytest

from sgemm import multi_gpu
from sgemm.distributed import (DistributedError, ProcessGrid, ReduceScatterOp, choose_grid,
                               cpu_machine, gpu_machine, ksplit, ksplit_layout, local,
                               plan_gemm, summa)
from sgemm.distributed.backend_numpy import NumpySimBackend
from sgemm.distributed.model import (KSPLIT_MARGIN, ksplit_pipeline, ksplit_plan,
                                     summa_pipeline, summa_plan)
from sgemm.distributed.selftest import CASES, SHAPES, error, make_operands
from sgemm.errors import ArgumentError


# -- pipelines ----------------------------------------------------------------------------
def test_summa_pipeline_uniform_steps():
    """S equal steps: the first broadcast, then max(compute, comm) per step."""
    for comm, comp, s in [(1.0, 3.0, 5), (3.0, 1.0, 5), (2.0, 2.0, 1), (0.0, 1.0, 4)]:
        t = summa_pipeline([comm] * s, [comp] * s)
        assert t == pytest.approx(comm + (s - 1) * max(comp, comm) + comp)
    assert summa_pipeline([], []) == 0.0


def test_ksplit_pipeline_overlaps_reduction_with_next_chunk():
    # compute-bound: every reduction but the last hides behind the next chunk's
    # GEMM (G0 G1 A0 G2 A1 | RS2 | A2; A1 runs during RS2)
    assert ksplit_pipeline([4.0] * 3, [1.0] * 3, [0.5] * 3) == pytest.approx(
        3 * 4 + 0.5 + 1.0 + 0.5)
    # one chunk: nothing to overlap
    assert ksplit_pipeline([4.0], [2.0], [1.0]) == pytest.approx(7.0)
    # communication-bound: the reductions queue on the comm stream
    assert ksplit_pipeline([1.0] * 3, [5.0] * 3, [0.0] * 3) == pytest.approx(1 + 15)


# -- choices ---------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [2, 4, 8])
def test_cpu_model_choices_by_shape(p):
    """The selftest's tall / wide / deep / square problems: P x 1, 1 x P, the
    K split, the squarest grid (what the MPI runs check they ran)."""
    mach = cpu_machine()
    want = {"tall": ("summa", (p, 1)), "wide": ("summa", (1, p)), "deep": ("ksplit", (p, 1)),
            "square": ("summa", choose_grid(p))}
    for name, (m, n, k) in SHAPES.items():
        plan = plan_gemm(m, n, k, p, mach)
        assert (plan.algorithm, plan.grid) == want[name], (name, plan.explain())


def test_gpu_model_choices():
    """The GPU model (the planner's local-GEMM times on the described H100,
    NVLink figures): the measured configuration where it was measured, and
    the shape rules on 8 GPUs."""
    g = gpu_machine()
    sq4 = plan_gemm(32768, 32768, 32768, 4, g)
    assert (sq4.algorithm, sq4.grid) == ("summa", (2, 2))
    assert 2048 <= sq4.kb <= 8192                       # measured: 4096 (K/8)
    assert plan_gemm(32768, 32768, 32768, 8, g).grid == (2, 4)
    assert plan_gemm(32768, 32768, 32768, 2, g).grid == (1, 2)
    tall = plan_gemm(262144, 2048, 8192, 8, g)
    wide = plan_gemm(2048, 262144, 8192, 8, g)
    deep = plan_gemm(1024, 1024, 1 << 22, 8, g)
    assert (tall.algorithm, tall.grid) == ("summa", (8, 1))
    assert (wide.algorithm, wide.grid) == ("summa", (1, 8))
    assert deep.algorithm == "ksplit" and deep.grid == (8, 1)
    # SUMMA hides its panels behind the compute on NVLink at 2048 x 2048 x 1M
    # (its exposed communication is a small part of its time; whether it or
    # the K split is faster there turns on the local GEMMs' calibration), not
    # behind a network 20x slower: there the K split wins
    mid = (2048, 2048, 1 << 20)
    fast = plan_gemm(*mid, 8, g)
    summa = min((c for c in fast.candidates if c.algorithm == "summa"), key=lambda c: c.total_s)
    assert summa.exposed_comm_s < 0.15 * summa.total_s
    slow = plan_gemm(*mid, 8, gpu_machine(link_gbs=12.5))
    assert slow.algorithm == "ksplit"
    slow_summa = min(c.total_s for c in slow.candidates if c.algorithm == "summa")
    assert slow_summa > 1.5 * slow.total_s


def test_choice_rules_tie_and_margin():
    mach = cpu_machine()
    plan = plan_gemm(384, 384, 384, 4, mach)
    summas = [c for c in plan.candidates if c.algorithm == "summa"]
    splits = [c for c in plan.candidates if c.algorithm == "ksplit"]
    # the K split is a little faster here, but not by the margin
    assert splits[0].total_s < summas[0].total_s
    assert splits[0].total_s > (1 - KSPLIT_MARGIN) * summas[0].total_s
    assert plan.algorithm == "summa" and plan.grid == (2, 2)
    assert plan.total_s <= summas[0].total_s * 1.03    # a tie with the fastest grid
    assert plan.candidates == tuple(sorted(plan.candidates, key=lambda c: (c.total_s, c.steps)))


def test_forced_choices_and_errors():
    mach = cpu_machine()
    assert plan_gemm(384, 384, 384, 4, mach, algorithm="ksplit").algorithm == "ksplit"
    p = plan_gemm(384, 384, 384, 4, mach, grid=(4, 1), kb=64)
    assert (p.algorithm, p.grid, p.kb, p.steps, p.why) == ("summa", (4, 1), 64, 6, "forced")
    assert plan_gemm(16, 16, 32768, 4, mach, mb=4).algorithm == "summa"   # blocks: SUMMA
    one = plan_gemm(100, 100, 100, 1, mach)
    assert (one.algorithm, one.grid, one.kb, one.comm_bytes) == ("summa", (1, 1), 100, 0)
    with pytest.raises(ArgumentError, match="algorithm"):
        plan_gemm(4, 4, 4, 2, mach, algorithm="cannon")
    with pytest.raises(ArgumentError, match="places"):
        plan_gemm(4, 4, 4, 4, mach, grid=(3, 1))
    with pytest.raises(ArgumentError):
        plan_gemm(-1, 4, 4, 2, mach)


def test_panel_buffers_within_cap():
    g = gpu_machine()
    for p in (2, 4, 8):
        for c in plan_gemm(65536, 65536, 65536, p, g).candidates:
            if c.algorithm == "summa":
                m_l, n_l = math.ceil(65536 / c.grid[0]), math.ceil(65536 / c.grid[1])
                assert 8 * (m_l + n_l) * c.kb <= g.panel_bytes_max
            else:
                assert 4 * 2 * (c.nprocs + 1) * c.mb * c.n <= g.panel_bytes_max


def test_explain_and_as_dict():
    plan = plan_gemm(16, 16, 32768, 4, cpu_machine())
    text = plan.explain()
    for word in ("ksplit on 4x1", "predicted per rank", "exposed communication", "candidates",
                 "summa", "MB recv"):
        assert word in text, text
    d = plan.as_dict(candidates=True)
    assert d["algorithm"] == "ksplit" and d["grid"] == [4, 1] and d["panel"] == plan.panel
    assert len(d["candidates"]) == len(plan.candidates)
    assert set(plan.predicted()) == {"total_s", "compute_s", "comm_s", "exposed_comm_s",
                                     "comm_bytes_per_rank"}


# -- the model's volume is what the ranks move --------------------------------------------------
@pytest.mark.parametrize("grid", [(1, 4), (2, 2), (4, 1), (2, 3)], ids=str)
def test_summa_volume_matches_simulated_traffic(grid):
    m, n, k = 48, 36, 40
    g = ProcessGrid(*grid)
    plan = summa_plan(m, n, k, g, cpu_machine(), kb=8)
    lay = plan.layout()
    be = NumpySimBackend(g)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    summa(be, lay, [lay.a.extract(a, r) for r in range(g.size)],
          [lay.b.extract(b, r) for r in range(g.size)],
          [np.empty(lay.c.local_shape(r), np.float32) for r in range(g.size)])
    # every rank takes part in one row and one column broadcast per step
    got = sum(size for axis, grp, _, size in be.ops_log if grp == 0) * 4
    assert got == plan.comm_bytes


@pytest.mark.parametrize("p", [2, 3, 4])
def test_ksplit_volume_matches_simulated_traffic(p):
    m, n, k = 37, 9, 50
    plan = ksplit_plan(m, n, k, p, cpu_machine(), mb=3)
    be = NumpySimBackend(ProcessGrid(p, 1))
    _run_ksplit_sim((m, n, k, False, False, 1.0, 0.0, 3, None, None), p, be=be)
    sent = sum(size for kind, *_, size in be.ops_log if kind == "reduce_scatter")
    assert 4 * sent * (p - 1) / p == pytest.approx(plan.comm_bytes)
    assert len(be.ops_log) == plan.steps == math.ceil(m / (p * 3))


# -- the K split on simulated ranks ------------------------------------------------------------
def _run_ksplit_sim(case, p, seed=0, be=None):
    m, n, k, ta, tb, alpha, beta, mb, nb, kb = case
    a, b, c0 = make_operands(case, seed)
    g = ProcessGrid(p, 1)
    lay = ksplit_layout(m, n, k, g, trans_a=ta, trans_b=tb, mb=mb)
    be = be or NumpySimBackend(g)
    cl = [lay.c.extract(c0, r) if c0 is not None else
          np.full(lay.c.local_shape(r), np.nan, np.float32) for r in range(p)]
    stats = ksplit(be, lay, [lay.a.extract(a, r) for r in range(p)],
                   [lay.b.extract(b, r) for r in range(p)], cl, alpha=alpha, beta=beta,
                   profile=True)
    out = np.empty((m, n), np.float32)
    for r in range(p):
        lay.c.insert(out, cl[r], r)
    return a, b, c0, out, lay, stats


@pytest.mark.parametrize("p", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("ci", range(len(CASES)))
def test_sim_ksplit_matches_numpy(p, ci):
    case = CASES[ci]
    a, b, c0, out, lay, stats = _run_ksplit_sim(case, p, seed=ci)
    assert error(case, a, b, c0, out) < 2e-5
    assert stats.algorithm == "ksplit" and len(stats.ranks) == p
    # the K slices partition K; A's and B's blocks hold the same slice
    for r in range(p):
        s, e = lay.k_range(r)
        assert lay.a.local_shape(r)[0 if lay.trans_a else 1] == e - s
        assert lay.b.local_shape(r)[1 if lay.trans_b else 0] == e - s


def test_ksplit_layout_rejects_2d_grid():
    with pytest.raises(ArgumentError, match="p x 1"):
        ksplit_layout(8, 8, 8, ProcessGrid(2, 2))


def test_sim_backend_rejects_incomplete_reduce_scatter():
    be = NumpySimBackend(ProcessGrid(3, 1))
    send = [np.zeros(6, np.float32) for _ in range(3)]
    recv = [np.zeros(2, np.float32) for _ in range(3)]
    with pytest.raises(DistributedError, match="would hang"):
        be.reduce_scatter([ReduceScatterOp(be.ctxs[i], send[i], recv[i]) for i in range(2)])
    with pytest.raises(DistributedError, match="received"):
        be.reduce_scatter([ReduceScatterOp(be.ctxs[i], send[i], recv[i][:1])
                           for i in range(3)])


# -- the choice as the APIs report it ------------------------------------------------------------
def test_multi_gpu_picks_and_reports_the_plan():
    rng = np.random.default_rng(1)
    for (m, n, k), want in [((16, 16, 32768), "ksplit"), ((4096, 16, 256), "summa")]:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        out, st = multi_gpu.gemm(a, b, backend="numpy", nranks=4, return_stats=True)
        np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-3, atol=1e-3)
        plan = multi_gpu.plan(m, n, k, backend="numpy", nranks=4)
        assert st.algorithm == plan.algorithm == want
        assert st.plan == plan
        d = st.as_dict()
        assert d["algorithm"] == want and d["plan"]["grid"] == list(plan.grid)
        assert d["predicted"]["exposed_comm_s"] == plan.exposed_comm_s
        assert d["measured_with"] == "host timers" and d["exposed_comm_s"] >= 0
    assert "chosen: summa on 4x1" in multi_gpu.explain(4096, 16, 256, backend="numpy",
                                                       nranks=4)
    # no GPU here: the described H100 stands in for the device
    assert "H100" in multi_gpu.explain(1024, 1024, 1 << 22, devices=[0, 1, 2, 3])
    multi_gpu.close()


def test_context_plans_layouts_and_grids():
    ctx = local("numpy", nranks=4)
    lay = ctx.layout(16, 16, 32768)
    assert type(lay).__name__ == "KSplitLayout" and lay.grid == ProcessGrid(4, 1)
    assert ctx.layout(4096, 16, 256).grid == ProcessGrid(4, 1)
    assert ctx.layout(16, 4096, 256).grid == ProcessGrid(1, 4)
    assert ctx.plan(16, 16, 32768) is ctx.plan(16, 16, 32768)          # cached
    rng = np.random.default_rng(2)
    a = rng.standard_normal((16, 32768)).astype(np.float32)
    b = rng.standard_normal((32768, 16)).astype(np.float32)
    c = ctx.gather(ctx.gemm(ctx.scatter(a, lay.a), ctx.scatter(b, lay.b), layout=lay,
                            profile=True), lay.c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-3, atol=1e-3)
    assert ctx.last_plan.algorithm == "ksplit" and ctx.last_stats.plan is ctx.last_plan
    # communicators of a grid are made when a GEMM first runs on it
    assert {be.grid.shape for be in ctx.backends()} == {(2, 2), (4, 1)}
    # a grid fixed at creation: SUMMA on it, whatever the shape
    fixed = local("numpy", nranks=4, grid=(2, 2))
    assert fixed.plan(16, 16, 32768).grid == (2, 2)
    assert fixed.plan(16, 16, 32768).algorithm == "summa"
    assert "chosen: summa on 2x2" in fixed.explain(16, 16, 32768)
