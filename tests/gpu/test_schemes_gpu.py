"""Dispatch schemes (issue 5) on the GPU against an fp64 reference: split-K,
gemv, the small path and the tile kernel, forced and through kernel="auto",
on the suite's awkward shapes, every transpose, aligned and unaligned
operands, NaN-poisoned C (beta == 0 must not read it), alpha/beta, batches;
split-K determinism; the plan cache's relocation; autotune on one plan."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import sgemm
from sgemm import dispatch, plan_cache
from sgemm.kernels import schemes

from .reference import make, ref_gemm, rel_err

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

SCHEMES = ["splitk", "gemv", "small", "tile", "splitk_fused", "gemv_wide", "small_k", "narrow"]
# thread-block clusters: sm_90+ (marked sm90: tests/conftest.py skips them elsewhere)
SCHEMES += [pytest.param(s, marks=pytest.mark.sm90) for s in ("splitk_cluster", "db_cluster")]
HOPPER = None                   # set by _device_caps when the module's first test runs


@pytest.fixture(autouse=True, scope="module")
def _device_caps():
    """Ask the device when a test runs, never at import (no GPU, no driver:
    the module still imports and its tests skip)."""
    global HOPPER
    HOPPER = int(cp.cuda.Device().compute_capability) >= 90


SHAPES = [(1, 4096, 4096), (4096, 1, 4096), (256, 256, 65536), (35, 79, 19),
          (1023, 1025, 1021), (128, 128, 128), (7, 300, 513), (16, 1000, 333),
          (1000, 3, 777), (129, 65, 4097), (3, 5, 70000)]
TRANS = list(itertools.product((False, True), repeat=2))


def _tol(k: int) -> float:
    return 2e-5 * max(1.0, (k / 4096) ** 0.5)


_REFS: dict = {}


def _check(m, n, k, ta, tb, kernel, alpha=1.0, beta=0.0, offset=0, seed=0, order="C"):
    rng = np.random.default_rng(seed)
    a = make(cp, rng, (k, m) if ta else (m, k), order, 0, offset)
    b = make(cp, rng, (n, k) if tb else (k, n), order, 0, offset)
    c = make(cp, rng, (m, n), order, 0, offset)
    c_in = c.copy()
    if beta == 0:
        c[...] = cp.nan
    key = (m, n, k, ta, tb, alpha, beta, offset, seed, order)
    if key not in _REFS:       # same seed, same inputs: one fp64 reference per case
        if len(_REFS) > 64:
            _REFS.clear()
        _REFS[key] = ref_gemm(a, b, c_in, alpha, beta, ta, tb)
    ref = _REFS[key]
    p = sgemm.plan(a, b, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb, kernel=kernel)
    out = p.execute()
    cp.cuda.Device().synchronize()
    err = rel_err(out, ref)
    assert err < _tol(k), (kernel, (m, n, k, ta, tb), p, err)
    return p


@pytest.mark.parametrize("trans", TRANS, ids=lambda t: "".join("T" if x else "N" for x in t))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kernel", SCHEMES + ["auto"])
def test_scheme_vs_fp64(kernel, shape, trans):
    m, n, k = shape
    _check(m, n, k, *trans, kernel)


@pytest.mark.parametrize("kernel", SCHEMES + ["auto"])
@pytest.mark.parametrize("offset,order", [(1, "C"), (0, "F"), (3, "F")])
def test_unaligned_and_orders(kernel, offset, order):
    for (m, n, k), (ta, tb) in zip([(33, 47, 1029), (1, 257, 515), (300, 5, 2049),
                                     (97, 131, 8195)], TRANS):
        _check(m, n, k, ta, tb, kernel, offset=offset, order=order, seed=m)


@pytest.mark.parametrize("kernel", SCHEMES + ["auto"])
def test_alpha_beta(kernel):
    for (m, n, k) in [(64, 64, 8192), (1, 500, 700), (200, 9, 300)]:
        _check(m, n, k, False, True, kernel, alpha=-0.75, beta=0.5, seed=k)
        _check(m, n, k, True, False, kernel, alpha=2.0, beta=0.0, seed=k + 1)


def test_random_shapes_auto_and_forced():
    rng = np.random.default_rng(2026)
    for i in range(24):
        m, n = (int(x) for x in rng.integers(1, 700, 2))
        if i % 3 == 0:
            m = int(rng.integers(1, 17))
        if i % 3 == 1:
            n = int(rng.integers(1, 17))
        k = int(rng.integers(1, 6000))
        ta, tb = bool(rng.integers(2)), bool(rng.integers(2))
        kernel = (SCHEMES + ["auto"])[i % 5]
        _check(m, n, k, ta, tb, kernel, alpha=float(rng.uniform(-2, 2)),
               beta=float(rng.choice([0.0, 1.0, -0.5])), seed=i)


@pytest.mark.parametrize("kernel", SCHEMES + ["auto"])
def test_batched(kernel):
    rng = np.random.default_rng(5)
    for (bt, m, n, k) in [(3, 64, 48, 4100), (5, 1, 300, 257), (4, 200, 2, 96), (2, 70, 90, 33)]:
        a = cp.asarray(rng.standard_normal((bt, m, k)).astype(np.float32))
        b = cp.asarray(rng.standard_normal((bt, k, n)).astype(np.float32))
        c = cp.full((bt, m, n), cp.nan, dtype=cp.float32)
        out = sgemm.gemm_batched(a, b, c, kernel=kernel)
        ref = np.matmul(a.get().astype(np.float64), b.get().astype(np.float64))
        assert rel_err(out, ref) < _tol(k), (kernel, bt, m, n, k)


def test_auto_picks_schemes(monkeypatch):
    """The cost model's choices (tables off), checked for what must hold
    whatever the calibration: correct results (_check), deep K split through
    the ordered reduction with slices no longer than the accuracy cap, and
    the small side of a GEMV-like shape never padded to a big tile."""
    from sgemm import planner
    monkeypatch.setenv("SGEMM_TUNED", "0")
    p = _check(256, 256, 65536, False, False, "auto")
    assert p.scheme == "splitk" and len(p.launches) == 2, p
    assert 65536 / p.params.split_k <= planner.acc_slice(p.problems[0], p.device), p
    for m, n, ta in ((1, 4096, False), (4096, 1, True)):
        p = _check(m, n, 4096, ta, False, "auto")
        assert p.scheme in ("gemv", "small", "splitk", "cluster"), p
    for shape in ((128, 128, 128), (512, 512, 512), (384, 384, 384)):
        p = _check(*shape, False, False, "auto")
        assert p.waves <= 8, p


def test_splitk_deterministic_and_remainder():
    rng = np.random.default_rng(9)
    for k in (65536, 65536 + 37, 3000):
        a = cp.asarray(rng.standard_normal((200, k)).astype(np.float32))
        b = cp.asarray(rng.standard_normal((k, 100)).astype(np.float32))
        p = sgemm.plan(a, b, kernel="splitk")
        outs = [p.execute().copy() for _ in range(3)]
        assert all(bool((o == outs[0]).all()) for o in outs)
        ref = a.get().astype(np.float64) @ b.get().astype(np.float64)
        assert rel_err(outs[0], ref) < _tol(k)


@pytest.mark.sm90              # thread-block clusters need sm_90
@pytest.mark.parametrize("m,n", [(320, 512), (256, 512), (512, 512), (384, 448)])
def test_auto_db_cluster_clusters_all_run_at_once(m, n):
    """db_cluster's size rule asks the driver how many clusters run at once:
    the chosen cluster size keeps every tile's cluster in the first wave."""
    from sgemm.kernels import schemes
    from sgemm.runtime.launcher import clusters_at_once
    rs = cp.random.RandomState(m + n)
    a = rs.standard_normal((m, 512), dtype=cp.float32)
    b = rs.standard_normal((512, n), dtype=cp.float32)
    pl = sgemm.plan(a, b)
    if pl.kernel.name != "db_cluster":
        pl = sgemm.plan(a, b, kernel="db_cluster")
    cs = pl.params.split_k
    tiles = schemes.db_tiles(pl.problems[0], pl.params)
    assert tiles <= clusters_at_once(pl.device, cs), (tiles, cs)
    assert cs == 8 or tiles > clusters_at_once(pl.device, cs + 1) or \
        tiles * (cs + 1) > pl.device.sm_count
    c = pl.execute()
    ref = a.get().astype(np.float64) @ b.get().astype(np.float64)
    assert rel_err(c, ref) < 1e-5


# (kernel, config, cluster size, threads: None keeps the config's; db_cluster's
# 256 / 512 threads on a 128-thread warp tiling are 2 / 4 k-groups)
CLUSTER_CASES = [("splitk_cluster", "large", cs, None) for cs in (2, 4, 8)] + [
    ("db_cluster", cfg, cs, t) for cfg, cs, t in (
        ("large", 8, None), ("large", 3, None), ("small", 2, None), ("small", 5, None),
        ("k2", 1, None), ("k2", 2, None), ("k2", 3, None), ("k2", 7, 256),
        ("k4", 1, None), ("k4", 2, None), ("k4", 5, None), ("k4", 2, 128),
        ("small", 1, 512), ("small", 3, 256), ("big", 3, None), ("tall", 2, None),
        ("tall", 2, 256), ("wide", 3, 256), ("big_wide", 3, None), ("thin", 1, None))]


@pytest.mark.sm90              # thread-block clusters need sm_90
@pytest.mark.parametrize("kernel,cfg,cs,threads", CLUSTER_CASES)
def test_cluster_split_deterministic_every_cluster_size(kernel, cfg, cs, threads):
    """Each cluster size, K not a multiple of the slices (short and empty last
    slices: K = 37 with 8 slices of 32), repeats bit-identical, NaN-poisoned C;
    edge tiles (shifted and guarded), unaligned rows."""
    from sgemm.kernels import registry
    from sgemm.plan import direct_launches
    from sgemm.runtime import launcher
    rng = np.random.default_rng(cs)
    spec = registry.get(kernel)
    p0 = spec.configs[cfg].replace(split_k=cs, threads=threads or spec.configs[cfg].threads)
    assert not spec.can_implement(p0), spec.can_implement(p0)
    for m, n, k in [(384, 384, 384), (100, 70, 37), (64, 64, 8195), (1, 300, 1000),
                    (515, 131, 700), (130, 257, 333)]:
        a = cp.asarray(rng.standard_normal((m, k)).astype(np.float32))
        b = cp.asarray(rng.standard_normal((k, n)).astype(np.float32))
        outs = []
        for _ in range(3):
            c = cp.full((m, n), cp.nan, dtype=cp.float32)
            pl = sgemm.plan(a, b, c, kernel=kernel)
            ls = direct_launches(pl.problems, spec, p0, pl.device)
            assert len(ls) == 1 and ls[0].grid[2] == cs, ls
            s = cp.cuda.get_current_stream()
            for l in ls:
                launcher.launch(l.kernel, l.grid, l.block, l.smem, s.ptr, l.args)
            s.synchronize()
            outs.append(c.copy())
        assert all(bool((o.view(cp.uint32) == outs[0].view(cp.uint32)).all()) for o in outs)
        ref = a.get().astype(np.float64) @ b.get().astype(np.float64)
        assert rel_err(outs[0], ref) < _tol(k), (cs, m, n, k)


@pytest.mark.parametrize("kernel", ["splitk_fused", "gemv_wide"])
def test_fused_deterministic_counters_reset(kernel):
    """One launch: the last block per tile sums the slices in order 0..S-1,
    so repeats are bit-identical whoever arrives last; it resets its counter,
    so the counters read zero after every execution and the plan can be
    executed again (other streams, a CUDA graph) without a memset."""
    rng = np.random.default_rng(21)
    shapes = ([(200, 100, 65536 + 37), (64, 96, 8192), (3, 5, 70000)] if kernel == "splitk_fused"
              else [(1, 4096, 4096), (5, 3000, 4099), (16, 1000, 777)])
    for m, n, k in shapes:
        a = cp.asarray(rng.standard_normal((m, k)).astype(np.float32))
        b = cp.asarray(rng.standard_normal((k, n)).astype(np.float32))
        c = cp.full((m, n), cp.nan, dtype=cp.float32)
        p = sgemm.plan(a, b, c, kernel=kernel)
        assert p.params.split_k > 1 and len(p.launches) == 1, p
        ws = p.launches[0].workspace
        ncnt = int(np.prod(p.launches[0].grid[:2]))
        outs = []
        streams = [None, cp.cuda.Stream(non_blocking=True), cp.cuda.Stream()]
        for r in range(6):
            c.fill(cp.nan)
            cp.cuda.Device().synchronize()
            p.execute(stream=streams[r % 3])
            cp.cuda.Device().synchronize()
            outs.append(c.copy())
            assert int((ws[:ncnt].view(cp.uint32) != 0).sum()) == 0, (kernel, m, n, k, r)
        assert all(bool((o.view(cp.uint32) == outs[0].view(cp.uint32)).all()) for o in outs)
        ref = a.get().astype(np.float64) @ b.get().astype(np.float64)
        assert rel_err(outs[0], ref) < _tol(k), (kernel, m, n, k)
        # a CUDA graph replays the same launch (counters reset inside)
        s = cp.cuda.Stream(non_blocking=True)
        s.begin_capture()
        p.execute(stream=s)
        g = s.end_capture()
        for _ in range(3):
            c.fill(cp.nan)
            cp.cuda.Device().synchronize()
            g.launch(s)
            s.synchronize()
            assert bool((c.view(cp.uint32) == outs[0].view(cp.uint32)).all()), (kernel, m, n, k)


def test_fused_plans_on_two_streams_concurrently():
    """Two plans of one shape running at once on two streams: each owns its
    workspace and counters, so neither sees the other's slices."""
    rng = np.random.default_rng(8)
    m, n, k = 128, 128, 131072
    ops = [(cp.asarray(rng.standard_normal((m, k)).astype(np.float32)),
            cp.asarray(rng.standard_normal((k, n)).astype(np.float32))) for _ in range(2)]
    cs = [cp.full((m, n), cp.nan, dtype=cp.float32) for _ in range(2)]
    plans = [sgemm.plan(a, b, c, kernel="splitk_fused") for (a, b), c in zip(ops, cs)]
    ws = len(schemes.sgemm_args(plans[0].problems[0]))   # the workspace follows them
    assert plans[0].launches[0].args[ws] != plans[1].launches[0].args[ws]
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
    cp.cuda.Device().synchronize()
    for _ in range(5):
        for p, s in zip(plans, streams):
            p.execute(stream=s)
    cp.cuda.Device().synchronize()
    for (a, b), c in zip(ops, cs):
        ref = a.get().astype(np.float64) @ b.get().astype(np.float64)
        assert rel_err(c, ref) < _tol(k)


def test_plan_cache_relocates():
    plan_cache.clear()
    rng = np.random.default_rng(11)
    for shape in [(300, 200, 500), (1, 1000, 800), (256, 256, 40000)]:
        m, n, k = shape
        for rep in range(3):
            a = cp.asarray(rng.standard_normal((m, k)).astype(np.float32))
            b = cp.asarray(rng.standard_normal((k, n)).astype(np.float32))
            c = cp.full((m, n), cp.nan, dtype=cp.float32)
            out = plan_cache.gemm(a, b, c)
            ref = a.get().astype(np.float64) @ b.get().astype(np.float64)
            assert rel_err(out, ref) < _tol(k), (shape, rep)
            out2 = plan_cache.gemm(a, b)            # allocating form
            assert rel_err(out2, ref) < _tol(k), (shape, rep)
    assert plan_cache.stats["hits"] >= 8, plan_cache.stats
    # c overlapping a on a hit must not launch: falls back to Plan's checks
    a = cp.asarray(rng.standard_normal((64, 64)).astype(np.float32))
    with pytest.raises(sgemm.ArgumentError):
        plan_cache.gemm(a, a.copy(), a)


def test_autotune_one_plan(tmp_path, monkeypatch):
    from sgemm import tune
    monkeypatch.setenv("SGEMM_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(3)
    a = cp.asarray(rng.standard_normal((96, 5000)).astype(np.float32))
    b = cp.asarray(rng.standard_normal((5000, 80)).astype(np.float32))
    c = cp.asarray(rng.standard_normal((96, 80)).astype(np.float32))
    c0 = c.copy()
    p = sgemm.plan(a, b, c, beta=1.0)
    tune.autotune(p, save=True, per_spec=1, kernels=["tile", "splitk", "small"], reps=2)
    assert bool((c == c0).all()), "tuning must not touch the caller's C"
    out = p.execute()
    ref = a.get().astype(np.float64) @ b.get().astype(np.float64) + c0.get()
    assert rel_err(out, ref) < _tol(5000)
    assert dispatch.user_table_path(p.device).exists()
    dispatch.forget_tables()


@pytest.mark.parametrize("m,n,k,ta,tb", [(1066, 1, 13617, False, False),
                                         (1, 1066, 13617, False, True),
                                         (1337, 1, 12223, False, False)])
def test_auto_gemv_splits_k_over_few_blocks(m, n, k, ta, tb, monkeypatch):
    """A matrix-vector product whose big side gives gemv few blocks splits K
    (the two-launch path, ordered reduction): deterministic and accurate.
    The model's choice (the measured one may differ)."""
    monkeypatch.setenv("SGEMM_AUTOTUNE", "0")
    rng = np.random.default_rng(m + n + k)
    ha = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    hb = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    a, b = cp.asarray(ha), cp.asarray(hb)
    c = cp.full((m, n), cp.nan, cp.float32)
    p = sgemm.plan(a, b, c, trans_a=ta, trans_b=tb)
    assert p.kernel.name == "gemv" and p.params.split_k > 1, p
    outs = [p.execute().copy() for _ in range(3)]
    assert all(bool((o == outs[0]).all()) for o in outs)
    A = ha.T if ta else ha
    B = hb.T if tb else hb
    ref = A.astype(np.float64) @ B.astype(np.float64)
    assert rel_err(outs[0], ref) < _tol(k)


@pytest.mark.parametrize("cfg", sorted(schemes.NARROW_CONFIGS))
def test_narrow_every_config_forced(cfg):
    """Each of 43_narrow.cu's configs, forced (the planner weighs only the
    narrow side's smallest tile), on every layout against fp64: the narrow
    side one short of the tile and the wide side past one block (ragged
    blocks on both), K past the pipeline's three chunks ahead and not a
    multiple of the chunk, alpha/beta with NaN-poisoned C under beta == 0."""
    from sgemm.bench.sanitize import _force_named
    p0 = schemes.NARROW_CONFIGS[cfg]
    wide, small = max(p0.BM, p0.BN), min(p0.BM, p0.BN)
    narrow_m = p0.BM < p0.BN
    rng = np.random.default_rng(len(cfg))
    bt, k = 3, 5 * p0.BK + 3
    m, n = (small - 1, wide + 7) if narrow_m else (wide + 7, small - 1)
    for (ta, tb), beta in zip(TRANS, (0.0, 0.5, 0.0, -1.0)):
        a = cp.asarray(rng.standard_normal((bt, k, m) if ta else (bt, m, k)).astype(np.float32))
        b = cp.asarray(rng.standard_normal((bt, n, k) if tb else (bt, k, n)).astype(np.float32))
        c0 = cp.asarray(rng.standard_normal((bt, m, n)).astype(np.float32))
        c = cp.full_like(c0, cp.nan) if beta == 0 else c0.copy()
        p = sgemm.plan(a, b, c, alpha=1.5, beta=beta, trans_a=ta, trans_b=tb,
                       _ndims=(3,), _what="gemm_batched")
        _force_named(p, f"narrow@{cfg}")
        out = p.execute()
        a64, b64 = (x.get().astype(np.float64) for x in (a, b))
        ref = 1.5 * np.matmul(a64.transpose(0, 2, 1) if ta else a64,
                              b64.transpose(0, 2, 1) if tb else b64) + beta * c0.get()
        assert [(x.block, x.smem) for x in p.launches] == [
            (p0.threads, schemes.narrow_smem(p0))] * len(p.launches), p
        assert rel_err(out, ref) < _tol(k), (cfg, ta, tb, m, n, k)


@pytest.mark.parametrize("name", ["m8ka", "n8ka", "m8ka/s3", "n8ka/s2"])
def test_gemv_aligned_strip_forced(name):
    """gemv's 64-row strip for S = 8 along k (float4 loop), forced, unsplit
    and with a K split, against fp64: the small side 5 and 8 of the 8-wide
    block, the strip ending part-way, K not a multiple of the 128-deep float4
    sweep, 16-byte rows where a (m x k) and b (n x k) lie along k (a @ b.T:
    the float4 loop; C column-major on a pitch of a multiple of 4), C
    NaN-poisoned under beta == 0, and the other layouts (scalar or
    row-contiguous loops) too."""
    from sgemm.bench.sanitize import _force_named
    rng = np.random.default_rng(len(name))
    small_m = name.startswith("m")
    for small, big, k in ((5, 200, 1036), (8, 131, 2052)):
        m, n = (small, big) if small_m else (big, small)
        for (ta, tb), beta in zip(TRANS, (0.0, 0.5, 0.0, -1.0)):
            a = cp.asarray(rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32))
            b = cp.asarray(rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32))
            # C column-major with a pitch of a multiple of 4 (the float4 loop's
            # alignment covers C's rows too)
            buf = cp.asfortranarray(cp.asarray(
                rng.standard_normal((-(-m // 4) * 4, n)).astype(np.float32)))
            c0 = buf[:m]
            c = buf.copy(order="F")[:m]
            if beta == 0:
                c[...] = cp.nan
            p = sgemm.plan(a, b, c, alpha=1.5, beta=beta, trans_a=ta, trans_b=tb)
            _force_named(p, f"gemv@{name}")
            out = p.execute()
            a64, b64 = a.get().astype(np.float64), b.get().astype(np.float64)
            ref = 1.5 * ((a64.T if ta else a64) @ (b64.T if tb else b64)) + beta * c0.get()
            assert rel_err(out, ref) < _tol(k), (name, small, ta, tb)
            if (ta, tb) == (False, True):
                assert p.problems[0].aligned and not schemes.x_rows_contiguous(p.problems[0])


@pytest.mark.parametrize("name", ["n8w64/s3", "n16w128k8/s4", "m16w64g2/s3", "n32w128g4/s2",
                                  "m32w64k8g2/s4", "m8w64g2/s3", "n32w64k8g4/s3"])
def test_narrow_split_single_forced(name):
    """A single product on 43_narrow.cu with the planner's K split (the
    slices run as the kernel's batch, then the ordered reduction), forced,
    every layout against fp64: K not a multiple of the slices or the chunk,
    the narrow side one short of the tile, NaN-poisoned C under beta == 0."""
    from sgemm.bench.sanitize import _force_named
    cfg, split = name.split("/s")
    p0 = schemes.NARROW_CONFIGS[cfg]
    wide, small = max(p0.BM, p0.BN), min(p0.BM, p0.BN)
    m, n = (small - 1, 2 * wide + 5) if p0.BM < p0.BN else (2 * wide + 5, small - 1)
    k = int(split) * 7 * p0.BK + 5
    rng = np.random.default_rng(len(name))
    for (ta, tb), beta in zip(TRANS, (0.0, 0.5, 0.0, -1.0)):
        a = cp.asarray(rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32))
        b = cp.asarray(rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32))
        c0 = cp.asarray(rng.standard_normal((m, n)).astype(np.float32))
        c = cp.full_like(c0, cp.nan) if beta == 0 else c0.copy()
        p = sgemm.plan(a, b, c, alpha=-0.5, beta=beta, trans_a=ta, trans_b=tb)
        _force_named(p, f"narrow@{name}")
        out = p.execute()
        a64, b64 = (x.get().astype(np.float64) for x in (a, b))
        ref = -0.5 * ((a64.T if ta else a64) @ (b64.T if tb else b64)) + beta * c0.get()
        assert p.params.split_k == int(split) and len(p.launches) >= 2, p
        assert rel_err(out, ref) < _tol(k), (name, ta, tb, m, n, k)
