"""The integer pipeline's runner (sgemm/int8x/runner.py) and its place in the
plan cache, on the CPU: every kernel emulated from its raw arguments
(tests/int8x/fake_gpu.py), so the results are reference.gemm's bit for bit
only where every pointer, stride, offset and relocation is right.

What is checked: runner.gemm and sgemm.gemm(precision="int8x") on every
layout against the emulation; the statistics both routes gather; one
synchronisation a call, with the INT8 GEMMs launched before it; Inf/NaN and
the scaling check (raise / warn / ignore) with the output untouched; the
runner waiting for the check after a failure and speculating again after a
pass; a repeated public call building nothing (a plan-cache hit, the runner
alone); the tf32x3 fallback on a hit; the workspace per call (runner.gemm)
or kept within KEEP_BYTES (the public path), per stream; the packed
launches (PreparedLaunch) relocating like the cuda.core ones.  The GPU runs
the same calls in tests/gpu/test_int8x_gpu.py."""
from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest

from sgemm.int8x import bound as BD
from sgemm.int8x import moduli as M
from sgemm.int8x import reference as R
from tests.int8x import fake_gpu as F

F32 = np.float32


@pytest.fixture(autouse=True)
def fake(monkeypatch):
    F.install(monkeypatch)
    yield
    from sgemm import plan_cache
    from sgemm.int8x import runner
    plan_cache.clear()
    runner.release()
    F._keep.clear()


@pytest.fixture
def built(monkeypatch):
    """The Runners constructed during a test (their arguments)."""
    from sgemm.int8x import runner
    made = []

    class Counting(runner.Runner):
        def __init__(self, *a, **k):
            made.append(a)
            super().__init__(*a, **k)
    monkeypatch.setattr(runner, "Runner", Counting)
    return made


def _data(rng, shape, wide=False, axis=0):
    """N(0,1) scaled by a power of two per row (axis=0) or column (axis=1):
    lines far apart, each narrow, which the scaling check passes; wide:
    per entry over 2^-20 .. 2^20, which it refuses."""
    x = rng.standard_normal(shape)
    if wide:
        x *= np.exp2(rng.integers(-20, 21, shape))
    else:
        x *= np.exp2(rng.integers(-12, 13, (shape[0], 1) if axis == 0 else (1, shape[1])))
    return x.astype(F32)


def _dev(x, order="C", pad=0):
    """x on the fake device in the given order, inside a larger array when pad."""
    m, n = x.shape
    if not pad:
        return F.device_array(x, order)
    big = F.device_array(np.zeros((m + pad, n + pad), F32), order)
    v = big[:m, :n]
    v[...] = x
    return v


def _emulated(a, b, c, alpha, beta, ta, tb, row_major_out):
    """reference.gemm of the problem the route runs: op(a) op(b), or for a
    row-major output op(b)^T op(a)^T transposed."""
    A, B = (a.T if ta else a), (b.T if tb else b)
    if row_major_out:
        return R.gemm(B.T, A.T, None if c is None else c.T, alpha, beta).T.astype(F32)
    return R.gemm(A, B, c, alpha, beta).astype(F32)


# -- the workspace's layout ----------------------------------------------------------------
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (17, 9, 65), (300, 2, 4097)])
@pytest.mark.parametrize("tiles", [(False, False), (True, False), (True, True)])
def test_layout_is_aligned_disjoint_and_within_its_stated_bound(m, n, k, tiles):
    from sgemm.int8x import device as D
    from sgemm.int8x import runner
    lay = runner.layout(m, n, k, *tiles)
    offs = sorted((v, name) for name, v in lay.items() if name not in ("total", "zero"))
    assert all(v % runner.ALIGN == 0 for v, _ in offs)
    assert [v for v, _ in offs] == sorted({v for v, _ in offs})          # disjoint starts
    assert offs[0][0] == 0 and lay["total"] >= offs[-1][0]
    assert lay["zero"] == (lay["units_a"] if tiles[0] else lay["units_b"] if tiles[1]
                           else lay["total"])
    assert lay["total"] <= D.workspace_bytes(m, n, k) + 44 * (m + n) + 1536 + 10 * 256


# -- runner.gemm: the runner, workspace per call -----------------------------------------
PIPE = [(1, 1, 1, "C", "C", 0), (17, 65, 33, "F", "F", 3), (29, 100, 25, "F", "C", 1),
        (64, 70, 48, "C", "F", 2), (40, 31, 2, "F", "F", 0), (33, 64, 30, "C", "C", 5)]


@pytest.mark.parametrize("m,k,n,oa,ob,pad", PIPE)
@pytest.mark.parametrize("alpha,beta,cmode", [(1.0, 0.0, "new"), (-1.5, 0.5, "new"),
                                              (2.0, -1.0, "out is c"), (0.5, 2.0, "out")])
def test_device_gemm_matches_the_emulation_bit_for_bit(m, k, n, oa, ob, pad, alpha, beta,
                                                        cmode):
    from sgemm.int8x import runner as RN
    rng = np.random.default_rng(m * 1000 + k + n)
    ha, hb, hc = _data(rng, (m, k)), _data(rng, (k, n), axis=1), _data(rng, (m, n))
    ha[min(1, m - 1), :] = 0.0                       # an all-zero row
    a, b = _dev(ha, oa, pad), _dev(hb, ob, pad)
    c = F.device_array(hc, "F")
    want = R.gemm(ha, hb, hc, alpha=alpha, beta=beta).astype(F32)
    if cmode == "new":
        got = RN.gemm(a, b, c if beta else None, alpha, beta)
        assert got.flags.f_contiguous and got is not c
    elif cmode == "out is c":
        got = RN.gemm(a, b, c, alpha, beta, out=c)
        assert got is c
    else:                                            # c copied into out after the check
        out = F.device_array(np.full((m, n), np.nan, F32), "F")
        got = RN.gemm(a, b, c, alpha, beta, out=out)
        assert got is out
        np.testing.assert_array_equal(c.get(), hc)
    np.testing.assert_array_equal(got.get(), want)
    assert F.names(None).count("sync") == 1


@pytest.mark.parametrize("oa,ob,routes", [("F", "F", ("tiles", "rows")),
                                          ("C", "C", ("rows", "tiles")),
                                          ("C", "F", ("rows", "rows"))])
def test_both_routes_gather_the_host_models_statistics(oa, ob, routes, built):
    from sgemm.int8x import runner as RN
    from sgemm.int8x import runner
    rng = np.random.default_rng(5)
    ha, hb = _data(rng, (40, 96)), _data(rng, (96, 35), wide=True)
    ha[3, :] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BD.Int8xAccuracyWarning)
        RN.gemm(_dev(ha, oa), _dev(hb, ob), on_loss="warn")
    r = next(iter(runner._cache.values()))
    assert r.routes == routes
    w = r._host.reshape(2, BD.WORDS)
    assert BD.Summary.from_words(w[0]) == BD.summarize(ha, 1)
    assert BD.Summary.from_words(w[1]) == BD.summarize(hb, 0)
    launched = F.names()
    assert ("int8x_row_stats" in launched) == ("tiles" in routes)
    assert (F.names(None).count("memset") == 1) == ("tiles" in routes)


@pytest.mark.parametrize("oa,ob", [("F", "C"), ("C", "F")])
def test_seven_moduli_give_the_seven_moduli_emulation_through_both_routes(oa, ob):
    from sgemm.int8x import runner as RN
    from sgemm.int8x import runner
    rng = np.random.default_rng(9)
    ha, hb = _data(rng, (33, 70)), _data(rng, (70, 21), axis=1)
    # at k = 70 the scaling check fails with 7 moduli (it needs k ~ 4096)
    out = RN.gemm(_dev(ha, oa), _dev(hb, ob), n_moduli=7, on_loss="ignore")
    np.testing.assert_array_equal(out.get(), R.gemm(ha, hb, n_moduli=7).astype(F32))
    assert not np.array_equal(out.get(), R.gemm(ha, hb).astype(F32))   # 8 differ
    r = next(iter(runner._cache.values()))
    assert r.n_moduli == 7 and r.budget == M.budget(7, 70)
    assert [n for n in F.names() if n.startswith("int8x_")][-1] == "int8x_garner_7"
    with pytest.raises(ValueError, match="n_moduli=6"):
        RN.gemm(_dev(ha, oa), _dev(hb, ob), n_moduli=6)


def test_one_synchronisation_with_the_int8_gemms_launched_before_it():
    from sgemm.int8x import runner as RN
    rng = np.random.default_rng(1)
    a, b = _dev(_data(rng, (20, 64)), "F"), _dev(_data(rng, (64, 12), axis=1), "F")
    RN.gemm(a, b)
    F.LOG.clear()
    RN.gemm(a, b)
    assert [e[0] for e in F.LOG] == ["memset", "memcpy", "launch", "launch", "launch",
                                     "launch", "launch", "memcpy", "record", "launch", "sync",
                                     "launch"]
    assert F.names() == ["int8x_rowmax", "int8x_rownorm", "int8x_residues", "int8x_row_stats",
                         "int8x_convert_rows", "int8_wgmma", "int8x_garner"]
    kinds = [e[1] for e in F.LOG if e[0] == "memcpy"]
    assert kinds == ["dtod", "dtoh"]


def _before(first, then) -> bool:
    """Whether LOG has ``first`` (a kernel name or an entry kind) before ``then``."""
    evs = [e[1] if e[0] == "launch" else e[0] for e in F.LOG]
    return evs.index(first) < evs.index(then)


def test_non_finite_input_raises_with_out_untouched_and_the_next_call_waits():
    from sgemm.int8x import device as D
    from sgemm.int8x import runner as RN
    from sgemm.int8x import runner
    rng = np.random.default_rng(2)
    ha, hb = _data(rng, (12, 64)), _data(rng, (64, 10), axis=1)
    bad = ha.copy()
    bad[4, 9] = np.nan
    out = F.device_array(np.full((12, 10), 7.0, F32), "F")
    with pytest.raises(D.NonFiniteInput, match="Inf or NaN in a"):
        RN.gemm(_dev(bad), _dev(hb), out=out)
    np.testing.assert_array_equal(out.get(), 7.0)
    assert "int8x_garner" not in F.names()
    assert _before("int8_wgmma", "sync")            # it had speculated: one GEMM wasted
    r = next(iter(runner._cache.values()))
    assert r.speculate is False
    F.LOG.clear()
    got = RN.gemm(_dev(ha), _dev(hb), out=out)        # waits for the check, then runs
    assert _before("sync", "int8_wgmma")
    np.testing.assert_array_equal(got.get(), R.gemm(ha, hb).astype(F32))
    assert r.speculate is True
    F.LOG.clear()
    RN.gemm(_dev(ha), _dev(hb), out=out)
    assert _before("int8_wgmma", "sync")
    hb[0, 0] = np.inf
    with pytest.raises(D.NonFiniteInput, match="Inf or NaN in b"):
        RN.gemm(_dev(ha), _dev(hb), out=out)


def test_scaling_check_raises_warns_or_is_skipped():
    from sgemm.int8x import device as D
    from sgemm.int8x import runner as RN
    from sgemm.int8x import moduli as M
    rng = np.random.default_rng(3)
    ha, hb = _data(rng, (16, 64), wide=True), _data(rng, (64, 12), wide=True)
    bud = M.budget(8, 64)
    assert not BD.holds(BD.summarize(ha, 1), BD.summarize(hb, 0), 64, bud.alpha, bud.beta)
    want = R.gemm(ha, hb).astype(F32)
    out = F.device_array(np.full((16, 12), 3.0, F32), "F")
    with pytest.raises(D.ScalingLoss):
        RN.gemm(_dev(ha, "F"), _dev(hb, "F"), out=out)
    np.testing.assert_array_equal(out.get(), 3.0)
    with pytest.warns(BD.Int8xAccuracyWarning):
        got = RN.gemm(_dev(ha, "F"), _dev(hb, "F"), on_loss="warn")
    np.testing.assert_array_equal(got.get(), want)
    F.LOG.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", BD.Int8xAccuracyWarning)
        got = RN.gemm(_dev(ha, "F"), _dev(hb, "F"), on_loss="ignore")
    np.testing.assert_array_equal(got.get(), want)
    assert "int8x_row_stats" not in F.names()       # "ignore": no statistics gathered


def test_device_gemm_takes_a_workspace_per_call_and_one_runner_per_problem(built):
    from sgemm.int8x import runner as RN
    from sgemm.int8x import runner
    rng = np.random.default_rng(4)
    a, b = _dev(_data(rng, (9, 64))), _dev(_data(rng, (64, 7), axis=1))
    for _ in range(3):
        RN.gemm(a, b)
    RN.gemm(a, b, alpha=2.0)
    assert len(built) == 2
    assert all(r._ws is None for r in runner._cache.values()) and runner.kept_bytes() == 0


# -- the kept workspace ------------------------------------------------------------------
def _runner(m=24, n=20, k=64, keep=True, **kw):
    from sgemm.int8x import runner
    return runner.Runner(0, m, n, k, (k, 1), (n, 1), m, 1.0, 0.0, keep=keep, **kw)


def _run(r, seed=0, stream=0):
    rng = np.random.default_rng(seed)
    ha, hb = _data(rng, (r.m, r.k)), _data(rng, (r.k, r.n), axis=1)
    out = F.device_array(np.zeros((r.m, r.n), F32), "F")
    a, b = _dev(ha), _dev(hb)
    r(a.data.ptr, b.data.ptr, out.data.ptr, stream)
    np.testing.assert_array_equal(out.get(), R.gemm(ha, hb).astype(F32))


def test_kept_workspaces_stay_under_keep_bytes_least_recently_used_out(monkeypatch):
    from sgemm.int8x import runner
    r1, r2, r3 = _runner(), _runner(), _runner()
    monkeypatch.setattr(runner, "KEEP_BYTES", 2 * r1.nbytes)
    _run(r1)
    _run(r2)
    ws1 = r1._ws
    assert ws1 is not None and r2._ws is not None and runner.kept_bytes() == 2 * r1.nbytes
    _run(r1, 1)                                      # r1 used last: r2 is the oldest now
    assert r1._ws is ws1                             # kept: the same buffer again
    _run(r3)
    assert r2._ws is None and r1._ws is ws1 and r3._ws is not None
    assert runner.kept_bytes() <= runner.KEEP_BYTES
    _run(r2, 2)                                      # evicted: allocates again, still right
    assert runner.kept_bytes() <= runner.KEEP_BYTES
    del r1, r2
    gc.collect()
    assert runner.kept_bytes() == r3.nbytes          # a runner's buffer goes with it
    runner.release()
    assert r3._ws is None and runner.kept_bytes() == 0


def test_a_workspace_above_keep_bytes_is_never_kept(monkeypatch):
    from sgemm.int8x import runner
    r = _runner()
    monkeypatch.setattr(runner, "KEEP_BYTES", r.nbytes - 1)
    _run(r)
    _run(r, 1)
    assert r._ws is None and runner.kept_bytes() == 0


def test_a_call_on_another_stream_takes_its_own_workspace():
    r = _runner()
    _run(r)
    ws = r._ws
    F.LOG.clear()
    _run(r, 1, stream=5)                             # not the kept buffer's stream
    assert r._ws is ws and r._ws_stream == 0
    assert ("external_stream", 5) in F.LOG           # allocated on stream 5
    assert {e[-1] for e in F.LOG if e[0] in ("memcpy", "record", "launch")} == {5}


def test_packed_launches_relocate_like_the_core_ones(monkeypatch):
    """DRIVER_LAUNCH: the runner's launches are launcher.PreparedLaunch; their
    packed slots, decoded as the kernel reads them, give the same result."""
    from sgemm.runtime import launcher

    class Emulated(launcher.PreparedLaunch):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            self._launch = self._emulate

        def _emulate(self, cfg, func, params, extra):
            vals = []
            for slot, orig in zip(self._slots, self.args):
                if isinstance(orig, np.float32):
                    vals.append(np.array([slot & 0xFFFFFFFF], np.uint32).view(F32)[0])
                elif isinstance(orig, np.int32):
                    vals.append(int(np.array([slot & 0xFFFFFFFF], np.uint32).view(np.int32)[0]))
                else:
                    vals.append(int(np.array([slot], np.uint64).view(np.int64)[0]))
            s = cfg.contents.hStream or 0              # cfg: a pointer to the config
            F.LOG.append(("launch", self.kernel.name, s))
            F.STATE["grid"] = self.grid                # the INT8 GEMMs' planes: grid z
            self.kernel(*vals)
            return 0
    monkeypatch.setattr(launcher, "DRIVER_LAUNCH", True)
    monkeypatch.setattr(launcher, "PreparedLaunch", Emulated)
    r = _runner(m=30, n=17, k=80)
    for seed in range(3):                            # fresh operands: relocated every call
        _run(r, seed)
    r2 = _runner(m=30, n=17, k=80, keep=False)
    _run(r2, 4, stream=3)


# -- the public path: sgemm.gemm(precision="int8x"), the plan cache ------------------------
API = [(1, 1, 1, "C", "C", False, False), (17, 33, 9, "F", "C", False, False),
       (29, 70, 30, "C", "F", True, False), (24, 64, 3, "F", "F", False, True),
       (30, 31, 27, "C", "C", True, True), (2, 65, 40, "F", "C", True, False)]


@pytest.mark.parametrize("m,k,n,oa,ob,ta,tb", API)
@pytest.mark.parametrize("oc,alpha,beta", [("C", 1.0, 0.0), ("F", -1.5, 0.5), ("C", 2.0, -1.0)])
def test_public_int8x_every_layout_and_its_repeat(m, k, n, oa, ob, ta, tb, oc, alpha, beta,
                                                   built):
    import sgemm
    from sgemm import plan_cache
    rng = np.random.default_rng(m * 7 + k * 3 + n)
    for rep in range(3):                             # a miss, then hits on fresh arrays
        ha = _data(rng, (k, m) if ta else (m, k), axis=int(ta))
        hb = _data(rng, (n, k) if tb else (k, n), axis=int(not tb))
        hc = _data(rng, (m, n))
        a, b, c = _dev(ha, oa), _dev(hb, ob), _dev(hc, oc)
        F.LOG.clear()
        got = sgemm.gemm(a, b, c if beta else None, alpha=alpha, beta=beta, trans_a=ta,
                         trans_b=tb, precision="int8x")
        if beta:
            assert got is c
        row_major = m > 1 and got.strides[0] != 4
        want = _emulated(ha, hb, hc if beta else None, alpha, beta, ta, tb, row_major)
        np.testing.assert_array_equal(got.get(), want)
        assert F.names(None).count("sync") == 1 and "prepare" not in F.names(None)
    assert len(built) == 1
    assert plan_cache.stats["hits"] == 2 and plan_cache.stats["misses"] == 1


def test_public_int8x_numpy_inputs_plan_and_streams(built):
    import sgemm
    rng = np.random.default_rng(9)
    ha, hb = _data(rng, (21, 64)), _data(rng, (64, 13), axis=1)
    want = R.gemm(hb.T, ha.T).T.astype(F32)          # row-major output: C^T's problem
    for _ in range(2):
        got = sgemm.gemm(ha, hb, precision="int8x")
        assert isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, want)
    assert len(built) == 1
    hc = np.zeros((21, 13), F32)
    assert sgemm.gemm(ha, hb, hc, precision="int8x") is hc     # copied back into c
    np.testing.assert_array_equal(hc, want)
    a, b = _dev(ha), _dev(hb)
    p = sgemm.plan(a, b, precision="int8x")
    assert p.scheme == "int8x" and p.launches == [] and p.precision == "int8x"
    np.testing.assert_array_equal(p.execute().get(), want)
    np.testing.assert_array_equal(p.execute().get(), want)
    sgemm.gemm(a, b, precision="int8x")
    n = len(built)
    sgemm.gemm(a, b, precision="int8x")
    F.STATE["stream"] = 7                            # another stream: an entry of its own
    sgemm.gemm(a, b, precision="int8x")
    sgemm.gemm(a, b, precision="int8x")
    assert len(built) == n + 1


def test_public_fallback_on_a_hit_leaves_c_to_tf32x3():
    import sgemm
    rng = np.random.default_rng(10)
    ha, hb, hc = _data(rng, (20, 64)), _data(rng, (64, 16), axis=1), _data(rng, (20, 16))
    sgemm.gemm(_dev(ha), _dev(hb), _dev(hc), beta=0.5, precision="int8x")      # the miss
    bad = ha.copy()
    bad[2, 3] = np.inf
    c = _dev(hc)
    F.LOG.clear()
    got = sgemm.gemm(_dev(bad), _dev(hb), c, beta=0.5, precision="int8x")
    assert got is c and ("prepare", "tf32x3") in F.LOG
    assert "int8x_garner" not in F.names()
    ref = bad.astype(np.float64) @ hb.astype(np.float64) + 0.5 * hc.astype(np.float64)
    np.testing.assert_array_equal(np.isinf(got.get()), np.isinf(ref))   # c read once, by tf32x3
    fin = np.isfinite(ref)
    np.testing.assert_array_equal(got.get()[fin], ref.astype(F32)[fin])


def test_public_fp32_falls_back_on_wide_data_and_int8x_warns(monkeypatch):
    import sgemm
    from sgemm.int8x import route
    monkeypatch.setattr(route, "ALWAYS", True)
    rng = np.random.default_rng(11)
    ha, hb = _data(rng, (18, 64), wide=True), _data(rng, (64, 14), wide=True)
    a, b = _dev(ha), _dev(hb)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BD.Int8xAccuracyWarning)
        for i in range(3):
            F.LOG.clear()
            got = sgemm.gemm(a, b, precision="fp32")
            assert "host_tf32x3" in F.names() and "int8x_garner" not in F.names()
            # the first call's speculative GEMM was wasted; later ones wait for the check
            assert ("int8_wgmma" in F.names()) == (i == 0)
            ref = (ha.astype(np.float64) @ hb.astype(np.float64)).astype(F32)
            np.testing.assert_array_equal(got.get(), ref)
    for _ in range(2):
        with pytest.warns(BD.Int8xAccuracyWarning):
            got = sgemm.gemm(a, b, precision="int8x")
        np.testing.assert_array_equal(got.get(), R.gemm(hb.T, ha.T).T.astype(F32))


def test_public_fp32_takes_seven_moduli_where_they_pass_else_eight(monkeypatch):
    """precision="fp32": the fewest moduli whose scaling check passes.  N(0,1)
    data pass with 7 at k = 4096 but not at k = 64, where 8 do; a plan that
    needed 8 starts there on its next call."""
    import sgemm
    from sgemm.int8x import route
    monkeypatch.setattr(route, "ALWAYS", True)
    rng = np.random.default_rng(13)
    for k, count in ((4096, 7), (64, 8)):
        ha, hb = _data(rng, (9, k)), _data(rng, (k, 7), axis=1)
        a, b = _dev(ha), _dev(hb)
        for i in range(2):
            F.LOG.clear()
            got = sgemm.gemm(a, b, precision="fp32")
            np.testing.assert_array_equal(got.get(),
                                          R.gemm(hb.T, ha.T, n_moduli=count).T.astype(F32))
            garners = [x for x in F.names() if x.startswith("int8x_garner")]
            assert garners == ["int8x_garner" if count == 8 else "int8x_garner_7"]
            convs = [x for x in F.names() if x.startswith(("int8x_convert_rows",
                                                            "int8x_residues"))]
            assert len(convs) == (4 if count == 8 and i == 0 else 2)   # 7 tried once
            assert "host_tf32x3" not in F.names()


def test_public_problems_with_nothing_to_multiply_go_to_the_planner():
    import sgemm
    c = _dev(np.full((6, 5), 3.0, F32))
    a, b = _dev(np.full((6, 40), np.inf, F32)), _dev(np.ones((40, 5), F32))
    got = sgemm.gemm(a, b, c, alpha=0.0, beta=0.5, precision="int8x")
    np.testing.assert_array_equal(got.get(), 1.5)
    assert ("prepare", "tf32x3") in F.LOG and "sync" not in F.names(None)


def test_clearing_the_plan_cache_gives_the_kept_workspaces_back():
    import sgemm
    from sgemm import plan_cache
    from sgemm.int8x import runner
    rng = np.random.default_rng(12)
    a, b = _dev(_data(rng, (16, 64))), _dev(_data(rng, (64, 8), axis=1))
    sgemm.gemm(a, b, precision="int8x")
    assert runner.kept_bytes() > 0
    plan_cache.clear()
    assert runner.kept_bytes() == 0
