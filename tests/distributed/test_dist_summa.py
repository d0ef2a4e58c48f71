"""SUMMA in one process: every rank simulated by NumpySimBackend (which
checks each collective like NCCL would need it), sgemm.multi_gpu's API on
it, the GPU backend's code run on a fake CuPy, the failure guard, and the
benchmark/plot scripts end to end on the fake."""
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from sgemm import multi_gpu
from sgemm.distributed import (BcastOp, DistributedError, DistributedTimeoutError, ProcessGrid,
                               gemm_layout, guard, summa)
from sgemm.distributed.backend import COL, ROW
from sgemm.distributed.backend_numpy import NumpySimBackend
from sgemm.distributed.selftest import CASES, error, make_operands
from sgemm.errors import ArgumentError

import fake_cupy  # tests/distributed is on sys.path (no __init__.py here)

REPO = Path(__file__).resolve().parents[2]
GRIDS = [(1, 1), (1, 2), (2, 1), (1, 3), (2, 2), (2, 3), (3, 2), (4, 1), (1, 5)]


def run_sim(case, grid, seed=0):
    m, n, k, ta, tb, alpha, beta, mb, nb, kb = case
    a, b, c0 = make_operands(case, seed)
    g = ProcessGrid(*grid)
    lay = gemm_layout(m, n, k, g, trans_a=ta, trans_b=tb, mb=mb, nb=nb, kb=kb)
    be = NumpySimBackend(g)
    al = [lay.a.extract(a, r) for r in range(g.size)]
    bl = [lay.b.extract(b, r) for r in range(g.size)]
    cl = [lay.c.extract(c0, r) if c0 is not None else
          np.full(lay.c.local_shape(r), np.nan, np.float32) for r in range(g.size)]
    stats = summa(be, lay, al, bl, cl, alpha=alpha, beta=beta, profile=True)
    out = np.empty((m, n), np.float32)
    for r in range(g.size):
        lay.c.insert(out, cl[r], r)
    return a, b, c0, out, lay, be, stats


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: f"{g[0]}x{g[1]}")
@pytest.mark.parametrize("ci", range(len(CASES)))
def test_sim_summa_matches_numpy(grid, ci):
    case = CASES[ci]
    a, b, c0, out, lay, be, stats = run_sim(case, grid, seed=ci)
    assert error(case, a, b, c0, out) < 2e-5      # beta == 0 also ignores the NaN in c
    assert stats.ranks and len(stats.ranks) == lay.grid.size


@pytest.mark.parametrize("grid", [(2, 3), (3, 2), (1, 4), (2, 2)], ids=str)
def test_sim_communication_pattern(grid):
    """One row and one column broadcast per step, rooted at the owners of the
    panel, each carrying exactly the panel: the volume SUMMA should move."""
    case = (37, 53, 29, False, True, 1.0, 0.0, 5, 7, 4)
    *_, lay, be, _ = run_sim(case, grid)
    g = lay.grid
    expect = []
    for t in range(lay.nsteps):
        w = lay.k_axis_a.block_len(t)
        if g.npcol > 1:
            for r in range(g.nprow):
                m_loc = lay.c.local_shape(g.rank_of(r, 0))[0]
                if m_loc:
                    expect.append((ROW, r, t % g.npcol, m_loc * w))
        if g.nprow > 1:
            for c in range(g.npcol):
                n_loc = lay.c.local_shape(g.rank_of(0, c))[1]
                if n_loc:
                    expect.append((COL, c, t % g.nprow, n_loc * w))
    assert sorted(be.ops_log) == sorted(expect)


def test_sim_backend_rejects_incomplete_collective():
    g = ProcessGrid(1, 3)
    be = NumpySimBackend(g)
    bufs = [np.zeros(4, np.float32) for _ in range(3)]
    with pytest.raises(DistributedError, match="would hang"):
        be.bcast([BcastOp(be.ctxs[i], ROW, bufs[i], 0) for i in range(2)])
    with pytest.raises(DistributedError, match="disagree"):
        be.bcast([BcastOp(be.ctxs[i], ROW, bufs[i], i % 2) for i in range(3)])


def test_summa_checks_local_shapes():
    g = ProcessGrid(1, 2)
    lay = gemm_layout(4, 4, 4, g, mb=2, nb=2, kb=2)
    be = NumpySimBackend(g)
    z = lambda s: np.zeros(s, np.float32)  # noqa: E731
    with pytest.raises(ArgumentError, match="shape"):
        summa(be, lay, [z((4, 2)), z((4, 3))], [z((4, 2))] * 2, [z((4, 2))] * 2)
    with pytest.raises(ArgumentError, match="float32"):
        summa(be, lay, [np.zeros((4, 2))] * 2, [z((4, 2))] * 2, [z((4, 2))] * 2)


# -- sgemm.multi_gpu on simulated ranks ------------------------------------------------------
def test_multi_gpu_numpy_backend_api():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((29, 37)).astype(np.float32)     # stored A^T
    b = rng.standard_normal((29, 53)).astype(np.float32)
    c = rng.standard_normal((37, 53)).astype(np.float32)
    ref = 0.5 * (a.T.astype(np.float64) @ b) + 2.0 * c
    out, stats = multi_gpu.gemm(a, b, c, backend="numpy", nranks=6, alpha=0.5, beta=2.0,
                                trans_a=True, block=(4, 5, 3), return_stats=True)
    assert out is c                                          # updated in place
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)
    assert len(stats.ranks) == 6 and stats.flops == 2 * 37 * 53 * 29
    with pytest.raises(ArgumentError, match="beta"):
        multi_gpu.gemm(a.T.copy(), b, backend="numpy", nranks=2, beta=1.0)
    with pytest.raises(ArgumentError, match="inner"):
        multi_gpu.gemm(a, b, backend="numpy", nranks=2)
    multi_gpu.close()


# -- the GPU backend's code on a fake CuPy ---------------------------------------------------------
@pytest.fixture
def fake(monkeypatch):
    cupy = fake_cupy.install(monkeypatch)
    yield cupy
    multi_gpu.close()


@pytest.mark.parametrize("ndev", [1, 2, 3, 4])
def test_cupy_backend_on_fake_devices(fake, ndev):
    cupy = fake
    for ci in (0, 1, 2, 3, 6, 7, 8, 9):
        case = CASES[ci]
        m, n, k, ta, tb, alpha, beta, mb, nb, kb = case
        a, b, c0 = make_operands(case, ci)
        with cupy.cuda.Device(ndev - 1):        # operands on the last device
            ga, gb = cupy.asarray(a), cupy.asarray(b)
            gc = None if c0 is None else cupy.asarray(c0)
        out, stats = multi_gpu.gemm(ga, gb, gc, devices=list(range(ndev)), alpha=alpha,
                                    beta=beta, trans_a=ta, trans_b=tb, block=(mb, nb, kb),
                                    local_gemm="cublas", return_stats=True)
        assert isinstance(out, cupy.ndarray) and out.device.id == ndev - 1
        if gc is not None:
            assert out is gc
        assert error(case, a, b, c0, cupy.asnumpy(out)) < 2e-5, case
        assert stats.total_s >= 0 and len(stats.ranks) == ndev


@pytest.mark.parametrize("algorithm", ["summa", "ksplit"])
def test_local_gemms_take_the_public_planner_path(fake, monkeypatch, algorithm):
    """Every local GEMM of the GPU backend is ``sgemm.plan(..., kernel=,
    precision=)`` (the public path: tuned table, else the planner's cost
    model) with the precision the caller asked for."""
    fake_cupy.patch_sgemm(monkeypatch)
    monkeypatch.setattr(fake_cupy.FakePlan, "calls", [])
    a, b, _ = make_operands(CASES[0], 0)
    for precision in ("tf32x3", None):
        fake_cupy.FakePlan.calls.clear()
        multi_gpu.gemm(a, b, devices=[0, 1, 2], precision=precision, algorithm=algorithm)
        assert fake_cupy.FakePlan.calls, "no local GEMM went through sgemm.plan"
        assert set(fake_cupy.FakePlan.calls) == {("auto", precision)}


def test_cupy_backend_sets_nvls_off(fake, monkeypatch):
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    multi_gpu.gemm(np.ones((4, 4), np.float32), np.ones((4, 4), np.float32), devices=[0, 1],
                   local_gemm="cublas")
    import os
    assert os.environ["NCCL_NVLS_ENABLE"] == "0"


def test_cupy_backend_rejects_repeated_device(fake):
    with pytest.raises(DistributedError, match="repeat"):
        multi_gpu.gemm(np.ones((4, 4), np.float32), np.ones((4, 4), np.float32),
                       devices=[0, 0], local_gemm="cublas")


def _load_script(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_and_plot_on_fake_gpus(fake, monkeypatch, tmp_path):
    fake_cupy.patch_sgemm(monkeypatch)
    bench = _load_script("distributed_bench")
    out = tmp_path / "r.json"
    rc = bench.main(["--gpus", "1", "2", "4", "--sizes", "64", "96", "--reps", "2",
                     "--local-gemm", "sgemm", "cublas", "--nccl-mib", "1", "--out", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    schemes = {(r["scheme"], r["gpus"]) for r in data["runs"]}
    for p in (1, 2, 4):
        assert ("summa", p) in schemes and ("seed002", p) in schemes
    assert ("cublas_1gpu", 1) in schemes and ("sgemm_1gpu", 1) in schemes
    assert ("nccl_bcast", 4) in schemes
    for r in data["runs"]:
        if r["scheme"] == "summa":
            assert r["check_ok"], r
            assert r["efficiency_local"] > 0 and "efficiency_1gpu" in r
    assert data["meta"]["env"]["NCCL_NVLS_ENABLE"] == "0"
    merged = tmp_path / "m.json"
    assert bench.main(["--merge", str(out), str(out), "--out", str(merged)]) == 0
    pytest.importorskip("matplotlib")
    plot = _load_script("plot_scaling")
    png = tmp_path / "s.png"
    plot.main([str(out), "--out", str(png)])
    assert png.stat().st_size > 10000


def test_bench_shapes_and_explain_on_fake_gpus(fake, monkeypatch, tmp_path, capsys):
    """Rectangular problems with the model's plan (a tall one on P x 1, a deep
    one on the K split: at these small sizes only over a slow link) against
    one GPU, and --explain (no GPU work)."""
    fake_cupy.patch_sgemm(monkeypatch)
    bench = _load_script("distributed_bench")
    out = tmp_path / "s.json"
    rc = bench.main(["--gpus", "1", "4", "--sizes", "--shapes", "4096x16x256", "16x16x8192",
                     "--reps", "2", "--no-seed002", "--no-cublas", "--no-nccl-bench",
                     "--link-gbs", "0.5", "--out", str(out)])
    assert rc == 0
    runs = json.loads(out.read_text())["runs"]
    dist = {tuple(r["shape"]): r for r in runs if r["scheme"] == "dist_shape"}
    assert dist[(4096, 16, 256)]["grid"] == [4, 1] and dist[(16, 16, 8192)]["algorithm"] == "ksplit"
    for r in dist.values():
        assert r["check_ok"] and r["efficiency_1gpu"] > 0 and r["predicted_total_s"] > 0
    assert {tuple(r["shape"]) for r in runs if r["scheme"] == "sgemm_1gpu_shape"} == set(dist)
    assert "ksplit(shape)" in bench.table({"runs": runs})
    capsys.readouterr()
    assert bench.main(["--explain", "--gpus", "2", "8", "--sizes", "32768",
                       "--shapes", "1024x1024x1048576"]) == 0
    text = capsys.readouterr().out
    assert "chosen: summa on 2x4" in text and "chosen: ksplit on 8x1" in text


# -- failure guard -----------------------------------------------------------------------------
class _Aborted(BaseException):
    pass


class _AbortComm:
    def __init__(self):
        self.code = None

    def Get_rank(self):
        return 1

    def Get_size(self):
        return 4

    def Abort(self, code):
        self.code = code
        raise _Aborted(code)


def test_abort_on_error_aborts_with_message(capsys):
    comm = _AbortComm()
    hooks = []
    guard.register_abort_hook(lambda: hooks.append("nccl aborted"))
    try:
        with pytest.raises(_Aborted):
            with guard.abort_on_error(comm):
                raise ValueError("boom")
    finally:
        guard._abort_hooks.clear()
    assert comm.code == 1 and hooks == ["nccl aborted"]
    err = capsys.readouterr().err
    assert "rank 1/4" in err and "ValueError: boom" in err and "aborting" in err


def test_abort_on_error_passes_clean_exit():
    comm = _AbortComm()
    with pytest.raises(SystemExit):
        with guard.abort_on_error(comm):
            sys.exit(0)
    assert comm.code is None
    with pytest.raises(_Aborted):
        with guard.abort_on_error(comm):
            sys.exit(5)
    assert comm.code == 5


def test_watchdog_fires(monkeypatch):
    import threading
    fired = threading.Event()
    calls = []
    monkeypatch.setattr(guard, "abort", lambda comm, code: (calls.append(code), fired.set()))
    with guard.Watchdog(0.05, None, "test"):
        assert fired.wait(5)
    assert calls == [3]
    with guard.Watchdog(5, None, "test") as w:
        pass
    assert w._timer is None


def test_poll_until_times_out():
    import time
    with pytest.raises(DistributedTimeoutError, match="waiting for nothing"):
        guard.poll_until(lambda: False, time.monotonic() + 0.05, "nothing")
    guard.poll_until(lambda: True, time.monotonic(), "done")
