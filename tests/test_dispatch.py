"""Shape-aware dispatch and the autotuner's CPU side (issue 5): heuristic
choices on a fake H100, the tuned table's round trip, shape classes, the
tuner's pruning (can_implement reasons) and candidate lists, split-K slice
arithmetic, the public shape suite, and the scheme kernels' compile checks."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from sgemm import packing, dispatch, planner, tune
from sgemm.kernels import registry, schemes
from sgemm.kernels.params import TileParams
from sgemm.problem import Problem
from sgemm.runtime.device import DeviceInfo

ROOT = Path(__file__).resolve().parents[1]
H100 = DeviceInfo(0, "NVIDIA H100 80GB HBM3", (9, 0), 132, 232448, 233472, 52428800,
                  1980000, 2619000, 5120, 85 << 30)
A100 = DeviceInfo(0, "NVIDIA A100-SXM4-80GB", (8, 0), 108, 166912, 167936, 41943040,
                  1410000, 1593000, 5120, 80 << 30)


def prob(m, n, k, ta=False, tb=False, batch=1, aligned=True) -> Problem:
    base = 1 << 30
    lda = (k if ta else m) if aligned else (k if ta else m) + 1
    ldb = (n if tb else k) if aligned else (n if tb else k) + 1
    lda = -(-lda // 4) * 4 if aligned else lda | 1
    ldb = -(-ldb // 4) * 4 if aligned else ldb | 1
    ldc = -(-m // 4) * 4
    return Problem(m=m, n=n, k=k, ta=ta, tb=tb, a=base, lda=lda, b=2 * base, ldb=ldb,
                   c=3 * base, ldc=ldc, batch=batch,
                   stride_a=lda * (m if ta else k) if batch > 1 else 0,
                   stride_b=ldb * (k if tb else n) if batch > 1 else 0,
                   stride_c=ldc * n if batch > 1 else 0)


@pytest.fixture(autouse=True)
def _no_tables(monkeypatch, tmp_path):
    """Heuristic tests must not see a tuned table (user's or shipped)."""
    monkeypatch.setenv("SGEMM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(dispatch, "DATA_DIR", tmp_path / "no-data")
    dispatch.forget_tables()
    dispatch._session.clear()
    yield
    dispatch.forget_tables()
    dispatch._session.clear()


# ---- heuristic ----------------------------------------------------------------------------
def test_batched_tiles_count_z():
    """64^3 x 1024: the batch fills the SMs, so the tile must not pad 64x64 to
    128x128 (3/4 of it wasted); half a 128x64 tile is the model's call, which
    the measured choice checks on the GPU.  2048^3 x 8 takes a large tile
    (its batch fills the waves)."""
    spec, p, scheme = dispatch.select(prob(64, 64, 64, batch=1024), H100)
    assert scheme in ("direct", "small") and p.BM * p.BN <= 128 * 64
    spec, p, scheme = dispatch.select(prob(2048, 2048, 2048, batch=8), H100)
    # a tile of at least 8x8 per thread and 128x128 or 256x64 per block, not
    # split: the three such rung-9 tiles ran within ~10 % of each other on
    # large problems in the H100 calibration sweep, so which one is the model's call
    assert scheme == "direct" and p.BM * p.BN >= 128 * 64 and p.TM * p.TN >= 64
    assert p.split_k == 1
    # batched deep-K is not split (the batch already gives the parallelism)
    spec, p, scheme = dispatch.select(prob(256, 256, 65536, batch=4), H100)
    assert scheme not in ("splitk", "splitk_fused")


def test_explicit_kernels_keep_working():
    pr = prob(300, 200, 100)
    spec, p = dispatch.choose(pr, H100, "smem", None)
    assert spec.name == "smem" and p in spec.configs.values()
    spec, p = dispatch.choose(pr, H100, "splitk", None)      # shallow K: no split
    assert spec.name == "splitk" and dispatch.scheme_for(spec, p, pr) == "direct"
    spec, p = dispatch.choose(pr, H100, 33, None)
    assert spec.name == "gemv"
    with pytest.raises(ValueError):
        dispatch.choose(pr, H100, "no-such-kernel", None)
    with pytest.raises(ValueError):
        dispatch.choose(pr, H100, "tile", "tf32")


def test_other_device_and_precisions():
    spec, p, scheme = dispatch.select(prob(4096, 4096, 2048), A100)
    assert scheme == "direct"
    for prec in ("tf32", "tf32x3"):
        if any(s.precision == prec for s in registry.KERNELS.values()):
            spec, p, scheme = dispatch.select(prob(4096, 4096, 4096), H100, "auto", prec)
            assert spec.precision == prec


# ---- keys and tables -----------------------------------------------------------------------
def test_shape_class_and_gpu_key():
    assert dispatch.gpu_key(H100) == "nvidia-h100-80gb-hbm3-sm132-sm_90a"
    c = dispatch.shape_class
    assert c(prob(4096, 4096, 4096)) != c(prob(4092, 4092, 4092))      # whole tiles or not
    assert c(prob(4092, 4092, 4092)) == c(prob(4100, 4084, 4090))
    assert c(prob(1000, 1000, 1000)) != c(prob(1024, 1024, 1024))
    assert c(prob(1, 4096, 4096)) != c(prob(2, 4096, 4096))
    assert c(prob(16, 64, 64)) != c(prob(17, 64, 64))
    assert c(prob(2048, 2048, 2048)) != c(prob(4096, 4096, 4096))
    assert c(prob(64, 64, 64, batch=1024)) != c(prob(64, 64, 64))
    assert c(prob(512, 512, 512, True, False)) != c(prob(512, 512, 512))
    assert c(prob(1023, 1025, 1021, aligned=False)).endswith("-u-p")
    assert c(prob(1024, 1024, 1024)) == "m1024-n1024-k1024-b1-NN-a-f"


def test_tuned_table_round_trip(tmp_path):
    pr = prob(777, 555, 3333)
    heur = dispatch.heuristic(pr, H100)
    table = dispatch.TunedTable.empty(dispatch.gpu_key(H100))
    best = schemes.TILE_CONFIGS["medium"]
    table.put(dispatch.shape_class(pr), schemes.TILE, best, time_ms=1.25)
    path = dispatch.user_table_path(H100)
    table.save(path)
    data = json.loads(path.read_text())
    assert data["format"] == dispatch.TABLE_FORMAT and data["gpu"] == dispatch.gpu_key(H100)
    loaded = dispatch.TunedTable.load(path)
    assert loaded.entries == table.entries
    dispatch.forget_tables()
    assert dispatch.lookup(pr, H100) == (schemes.TILE, best)
    assert dispatch.choose(pr, H100, "auto", None) == (schemes.TILE, best)
    # a shape of the same class hits, another class does not
    assert dispatch.lookup(prob(780, 550, 3310), H100) is not None
    assert dispatch.lookup(prob(1555, 555, 3333), H100) is None
    # tables can be switched off
    import os
    os.environ["SGEMM_TUNED"] = "0"
    try:
        assert dispatch.choose(pr, H100, "auto", None) == heur
    finally:
        del os.environ["SGEMM_TUNED"]


def test_tuned_table_rejects_bad_entries():
    pr = prob(900, 900, 900)
    cls_key = dispatch.shape_class(pr)
    table = dispatch.TunedTable.empty(dispatch.gpu_key(H100), dispatch.user_table_path(H100))
    table.entries[cls_key] = {"kernel": "no-such-kernel", "params": TileParams().as_dict()}
    table.save()
    dispatch.forget_tables()
    assert dispatch.lookup(pr, H100) is None
    bad = schemes.TILE_CONFIGS["large"].replace(threads=96)      # fails can_implement
    table.put(cls_key, schemes.TILE, bad)
    table.save()
    dispatch.forget_tables()
    assert dispatch.lookup(pr, H100) is None
    # a tf32 entry does not answer an ieee request
    tf = next((s for s in registry.KERNELS.values() if s.precision == "tf32"), None)
    if tf is not None:
        table.put(cls_key, tf, next(iter(tf.configs.values())))
        table.save()
        dispatch.forget_tables()
        assert dispatch.lookup(pr, H100, "ieee") is None
    # corrupt file: ignored
    dispatch.user_table_path(H100).write_text("{not json")
    dispatch.forget_tables()
    assert dispatch.lookup(pr, H100) is None


def test_shipped_table_is_valid():
    """Every entry of the shipped tables names a registered kernel whose rules
    accept the params."""
    for path in (ROOT / "sgemm" / "data").glob("tuned-*.json"):
        t = dispatch.TunedTable.load(path)
        assert t is not None, path
        for key, e in t.entries.items():
            spec = registry.get(e["kernel"])
            assert not spec.can_implement(dispatch.entry_params(e)), (path, key, e)


# ---- the tuner's search space and pruning ----------------------------------------------------
def test_param_space_pruned_by_can_implement():
    space, why = tune.param_space(schemes.TILE, H100.smem_optin)
    assert len(space) > 50
    assert all(not schemes.TILE.can_implement(p, H100.smem_optin) for p in space)
    assert sum(why.values()) > 0          # the rules rejected something, with reasons
    for cfg in schemes.TILE_CONFIGS.values():
        assert cfg in space
    gspace, gwhy = tune.param_space(schemes.GEMV, H100.smem_optin)
    assert gspace and all(not schemes.GEMV.can_implement(p) for p in gspace)
    assert any("strip" in r or "small side" in r for r in gwhy)


def test_can_implement_reasons_are_specific():
    p = schemes.TILE_CONFIGS["large"]
    assert any("threads" in r for r in schemes.TILE.can_implement(p.replace(threads=128)))
    assert any("(WM/TM)*(WN/TN)" in r for r in schemes.TILE.can_implement(p.replace(WN=64)))
    assert any("TM*TN*BK" in r for r in schemes.TILE.can_implement(p.replace(BK=32)))
    assert any("shared memory" in r for r in
               schemes.TILE.can_implement(p.replace(stages=6, BK=8, BM=256, WM=128), 48 * 1024))
    assert any("strip" in r for r in schemes.GEMV.can_implement(TileParams(BM=1, BN=48, BK=128)))


@pytest.mark.parametrize("m,n,k,batch", [(4096, 4096, 4096, 1), (1, 4096, 4096, 1),
                                         (256, 256, 65536, 1), (64, 64, 64, 1024),
                                         (128, 128, 128, 1)])
def test_candidates(m, n, k, batch):
    pr = prob(m, n, k, batch=batch)
    cs = tune.candidates(pr, H100, per_spec=3)
    assert cs[0].source == "heuristic"
    assert (cs[0].spec, cs[0].params) == dispatch.heuristic(pr, H100)
    keys = [(c.spec.source, c.spec.function, c.params) for c in cs]
    assert len(keys) == len(set(keys))
    for c in cs:
        assert not c.spec.can_implement(c.params, H100.smem_optin), c.describe()
        if c.spec.name == "gemv":
            assert min(m, n) <= 16
        if c.params.split_k > 1 and not c.spec.extra.get("cluster"):
            assert batch == 1 and k // c.params.split_k >= 64
        if c.spec.name == "small":      # batched too: the kernel's grid covers the batch
            assert 2 * m * n * k <= planner.SMALL_FLOPS
    if k >= 16 * max(m, n):
        assert any(c.params.split_k > 1 for c in cs)


def test_candidates_always_time_named_configs():
    """The hand-tuned configs are timed whatever the cost model thinks (it
    ranked rung 9 'large' out at 6144^3), and under-filled grids get split-K."""
    from sgemm.kernels import registry
    big = prob(6144, 6144, 6144)
    cs = tune.candidates(big, H100, per_spec=3)
    large9 = registry.get("double_buffer").configs["large"]
    assert any(c.spec.name == "double_buffer" and c.params == large9 for c in cs)
    small9 = registry.get("double_buffer").configs["small"]
    assert any(c.spec.name == "double_buffer" and c.params == small9 and c.source == "config"
               for c in cs)
    thin = prob(64, 16384, 4096)
    assert any(c.params.split_k > 1 for c in tune.candidates(thin, H100, per_spec=3))


def test_named_large_tiles_get_a_wave_filling_split():
    """Deep K: rung 9's 256x128 tile (one block per SM) is offered with the
    split that makes its grid one full wave -- 2 tiles x 64 slices = 128
    blocks on 132 SMs -- and 128x128 (two per SM) with 2 x 132 in view."""
    large9 = registry.get("double_buffer").configs["large"]
    deep = prob(256, 256, 65536)
    cs = tune.candidates(deep, H100, per_spec=3)[:40]
    splits = {c.params.split_k for c in cs
              if c.spec.name == "double_buffer" and c.params.replace(split_k=1) == large9}
    assert 64 in splits, splits
    assert tune.blocks_per_sm(registry.get("double_buffer"), large9, H100) == 1
    medium = registry.get("double_buffer").configs["medium"]
    assert tune.blocks_per_sm(registry.get("double_buffer"), medium, H100) == 2
    # a grid that already fills the GPU gets no extra split variants
    assert tune._wave_splits(registry.get("double_buffer"), prob(8192, 8192, 8192), large9,
                             H100) == []


@pytest.mark.parametrize("m,n,k,cfg,cs", [(64, 16384, 4096, "wide", 2),
                                         (16384, 64, 4096, "tall", 2),
                                         (1025, 1023, 1021, "big", 3)])
def test_tuner_offers_db_cluster_tiles_that_fill_one_wave(m, n, k, cfg, cs):
    """The tuner times each db_cluster tile with every k-group count and the
    two largest cluster sizes that keep tiles x blocks within one wave (64
    tiles of 64x256 in clusters of 2 = 128 blocks on 132 SMs; 36 tiles of
    256x128 in 3): the cost model alone ranks cluster configs blind."""
    spec = registry.get("db_cluster")
    base = schemes.DB_CLUSTER_CONFIGS[cfg]
    fits = tune._cluster_fits(spec, prob(m, n, k), base, H100)
    assert {q.split_k for q in fits} == {cs, cs - 1}, fits
    for q in fits:
        assert not spec.can_implement(q)
        assert schemes.db_tiles(prob(m, n, k), q) * q.split_k <= H100.sm_count
    # 256x128 of 16x8 thread tiles: 256 threads, no room for a second k-group
    assert {schemes.db_kgroups(q) for q in fits} == ({1} if cfg == "big" else {1, 2})
    named = [c.params for c in tune.candidates(prob(m, n, k), H100) if c.spec is spec]
    assert all(q in named for q in fits)
    # other kernels, and tiles that do not fit one wave, get none
    assert tune._cluster_fits(registry.get("splitk_cluster"), prob(m, n, k),
                              registry.get("splitk_cluster").configs["large"], H100) == []
    assert tune._cluster_fits(spec, prob(4096, 4096, 4096), base, H100) == []


@pytest.mark.parametrize("n,cs", [(384, 3), (448, 2), (512, 2)])
def test_db_cluster_fills_one_wave(n, cs):
    """Rule c'': 64x64 tiles, as many cluster blocks per tile as one wave of
    one block per SM holds (36 tiles x 3 = 108, 64 x 2 = 128 on 132 SMs), four
    k-groups per block (the "k4" tile); K slices at least 32 deep."""
    pr = prob(n, n, n)
    spec, p, scheme = dispatch.select(pr, H100)
    assert (spec.name, scheme, p.split_k) == ("db_cluster", "cluster", cs)
    tiles = math.ceil(n / p.BM) * math.ceil(n / p.BN)
    assert tiles * p.split_k <= H100.sm_count < tiles * (p.split_k + 1)
    assert spec.grid(pr, p) == (n // 64 + (n % 64 > 0), n // 64 + (n % 64 > 0), cs)
    assert p == schemes.DB_CLUSTER_CONFIGS["k4"].replace(split_k=cs)
    assert schemes.db_kgroups(p) == 4 and n // (cs * 4) >= 32
    # one block per SM: more than half an SM's shared memory
    assert spec.dynamic_smem(p) * 2 > 228 * 1024
    # no clusters on an A100: never this kernel
    assert dispatch.select(pr, A100)[0].name != "db_cluster"


# (m, n, k, the plan the tuner measured fastest on the H200: config, k-groups,
# cluster size; bench/results/tune-tall-h200-2026-11-22.json)
TALL_CASES = [(64, 16384, 4096, "wide", 2, 2), (16384, 64, 4096, "tall", 2, 2),
              (64, 12288, 4096, "k2", 2, 2), (48, 16384, 2048, "wide", 2, 2),
              (64, 8192, 8192, "k2", 4, 1), (16384, 40, 4096, "tall", 2, 2),
              (64, 16384, 16384, "wide", 2, 2)]


@pytest.mark.parametrize("m,n,k", [(32, 16384, 4096), (128, 16384, 4096), (64, 32768, 1024),
                                   (64, 16384, 512), (64, 1024, 4096)])
def test_tall_skinny_rule_stays_out(m, n, k):
    """Not rule c''': a small side of 32 or of 128, more than SMs/2 tiles, K
    slices under 256 deep, too few tiles."""
    assert dispatch.db_tall_config(prob(m, n, k), H100) is None


# Clusters of cs blocks the H200 ran at once at one block per SM
# (bench/results/cluster-cost-h200-2026-11-22.json), cs = 1 .. 8.
H200_AT_ONCE = (132, 66, 39, 30, 22, 17, 15, 15)


@pytest.mark.parametrize("m,n,ideal,fit", [(320, 512, 3, 2), (256, 512, 4, 3),
                                           (384, 384, 3, 3), (512, 512, 2, 2)])
def test_db_cluster_split_counts_clusters_that_run_at_once(m, n, ideal, fit):
    """Clusters stay inside a GPC, so fewer run at once than SMs / cs: 40
    tiles in clusters of 3 would take two waves (39 at once), 32 in clusters
    of 4 too (30).  The split steps down to the largest cluster size whose
    clusters all run at once."""
    k2 = schemes.DB_CLUSTER_CONFIGS["k2"]
    pr = prob(m, n, 512)
    assert schemes.db_cluster_split(pr, k2, 132) == ideal
    at_once = lambda cs: H200_AT_ONCE[cs - 1]   # noqa: E731
    cs = schemes.db_cluster_split(pr, k2, 132, at_once)
    assert cs == fit and schemes.db_tiles(pr, k2) <= at_once(cs)
    assert schemes.choose_db_cluster(pr, 132, at_once).split_k == fit
    # a described device (not this machine's GPU) gets no query: SMs / cs
    assert dispatch.cluster_capacity(H100) is None


def test_db_cluster_rules_say_why():
    spec = registry.get("db_cluster")
    k2 = schemes.DB_CLUSTER_CONFIGS["k2"]
    assert not spec.can_implement(k2)
    assert any("k-groups" in r for r in spec.can_implement(k2.replace(threads=96)))
    assert any("cluster size" in r for r in spec.can_implement(k2.replace(split_k=9)))
    assert any("64K registers" in r
               for r in spec.can_implement(k2.replace(WN=32, TN=8, BN=32, threads=512)))
    # 2 and 4 k-groups double and quadruple the buffers
    assert schemes.db_kgroups(k2.replace(threads=256)) == 4


def test_cluster_candidates_instantiate_their_cluster_size():
    """split_k is a template field of the cluster kernel (its cluster size):
    the tuner must compile the candidate as it is, not with split_k = 1."""
    pr = prob(256, 256, 256)
    cs = [c for c in tune.candidates(pr, H100)[:40] if c.spec.name == "splitk_cluster"]
    assert cs
    for c in cs:
        _, expr = tune._instantiation(c.spec, c.params, pr)
        assert expr.split("<")[1].split(",")[9].strip() == str(c.params.split_k), expr
    assert not tune.candidates(pr, A100)[0].spec.name == "splitk_cluster"


def test_predicted_time_ranks_sensibly():
    big = prob(4096, 4096, 4096)
    t_large = tune.predicted_time(schemes.TILE, big, schemes.TILE_CONFIGS["large"], H100)
    t_small = tune.predicted_time(schemes.TILE, big, schemes.TILE_CONFIGS["small"], H100)
    assert t_large < t_small
    deep = prob(256, 256, 65536)
    p = schemes.SPLITK_CONFIGS["large"]
    assert tune.predicted_time(schemes.TILE, deep, p.replace(split_k=16), H100) < \
        tune.predicted_time(schemes.TILE, deep, p.replace(split_k=1), H100)


# ---- split-K arithmetic ------------------------------------------------------------------------
@pytest.mark.parametrize("k,split,bk", [(65536, 16, 16), (65573, 16, 16), (1000, 3, 8),
                                        (7, 8, 32), (131072, 64, 8)])
def test_split_slices(k, split, bk):
    kc, full, rem = schemes.split_slices(k, split, bk)
    assert kc % max(bk, 4) == 0 and kc > 0
    assert full * kc + rem == k and 0 <= rem < kc
    assert full + (rem > 0) <= 2 * max(split, 1) + 1
    g = dispatch.splitk_geometry(prob(100, 30, k), schemes.SPLITK_CONFIGS["large"].replace(
        split_k=split, BK=bk))
    assert g["ldw"] % 4 == 0 and g["ldw"] >= 100
    assert g["floats"] == g["slices"] * g["ldw"] * 30


def test_split_slices_keep_the_remainder_short():
    """Rounding the slice down keeps the split in one launch plus a short
    remainder (rounding up gave 1021 / 2 -> 512 + 509, two serial launches)."""
    assert schemes.split_slices(1021, 2, 32) == (480, 2, 61)
    assert schemes.split_slices(1000, 4, 8) == (248, 4, 8)
    assert schemes.split_slices(65536, 64, 8) == (1024, 64, 0)
    assert schemes.split_slices(40896, 64, 32) == (608, 67, 160)   # not 63 x 640 + 576
    for k in range(1, 3000, 7):
        for split in (2, 3, 4, 8, 16):
            kc, full, rem = schemes.split_slices(k, split, 16)
            assert full * kc + rem == k and 0 <= rem < kc and full <= 2 * max(split, 1)
            up = -(-k // split // 16) * 16 if k >= split else 16
            assert kc + rem <= up + (k - k // up * up)      # never deeper than rounding up


def test_splitk_factor_bounds():
    for m, n, k in [(256, 256, 65536), (64, 64, 1 << 20), (1024, 1024, 4096)]:
        t = schemes.SPLITK_CONFIGS["large"]
        s = schemes.splitk_factor(prob(m, n, k), t, 132)
        assert 1 <= s <= schemes.SPLITK_MAX and s & (s - 1) == 0
        assert s == 1 or k // s >= schemes.SPLITK_MIN_SLICE


# ---- fused split-K and gemv_wide: slices, workspace, scheme names ----------------------------
@pytest.mark.parametrize("k,split,unit", [(65536, 16, 16), (65573, 16, 16), (1000, 3, 8),
                                          (7, 8, 32), (4096, 32, 4), (5, 64, 4)])
def test_fused_slices_cover_k(k, split, unit):
    kc, s = schemes.fused_slices(k, split, unit)
    assert kc % unit == 0 and kc > 0
    # every launched slice has work (the kernel computes min(kc, K - s*kc) >= 1)
    assert (s - 1) * kc < k <= s * kc
    assert s <= max(split, 1)


def test_fused_specs_and_scheme_names():
    fused = registry.get("splitk_fused")
    wide = registry.get("gemv_wide")
    assert fused.id == 34 and wide.id == 35
    for spec in (fused, wide):
        assert "fused" in spec.extra
        for cfg in spec.configs.values():
            assert not spec.can_implement(cfg, H100.smem_optin), (spec.name, cfg)
    pr = prob(256, 256, 65536)
    p = schemes.choose_splitk_fused(pr, 132)
    assert dispatch.scheme_for(fused, p, pr) == "splitk_fused"
    assert dispatch.scheme_for(fused, p.replace(split_k=1), pr) == "direct"
    # the tuner enumerates split factors for specs of scheme "splitk"/"gemv"
    assert fused.extra["scheme"] == "splitk" and wide.extra["scheme"] == "gemv"
    pw = schemes.choose_gemv_wide(prob(1, 4096, 4096, tb=True), 132)
    assert dispatch.scheme_for(wide, pw) == "gemv"
    # a direct launch passes no workspace and one slice of depth K
    args = fused.args(pr)
    assert args[-4:-2] == (0, 0) and int(args[-2]) == 65536 and int(args[-1]) == 1
    assert len(args) == 20        # SGEMM_PARAMS (14), bias and epilogue code, then 4


def test_gemv_wide_choice_fills_the_gpu():
    """1x4096x4096 NN: 32 strips of 128 outputs, K split so that strips times
    slices reach ~8 blocks per SM, each slice >= GEMV_WIDE_MIN_SLICE rows."""
    for m, n, k, tb in [(1, 4096, 4096, True), (4, 4096, 4096, True), (16, 8192, 2048, True),
                        (1, 100, 50, True), (1, 1 << 20, 512, True)]:
        pr = prob(m, n, k, tb=tb)
        p = schemes.choose_gemv_wide(pr, 132)
        assert not registry.get("gemv_wide").can_implement(p, H100.smem_optin)
        s = p.BM
        assert s >= m and s in schemes.GEMV_SIZES and p.BN == 128
        strips = math.ceil(n / 128) * math.ceil(m / s)
        assert p.split_k == 1 or k // p.split_k >= schemes.GEMV_WIDE_MIN_SLICE
        assert p.split_k & (p.split_k - 1) == 0          # a power of two
        if k >= 64 * schemes.GEMV_WIDE_MIN_SLICE:
            assert strips * p.split_k >= 2 * 132 or p.split_k == schemes.SPLITK_MAX
    # the measured best on the H200: 16 slices at 1x4096x4096, 8 at 16x8192x2048
    assert schemes.choose_gemv_wide(prob(1, 4096, 4096, tb=True), 132).split_k == 16
    assert schemes.choose_gemv_wide(prob(8192, 16, 2048), 132).split_k == 8


def test_gemv_wide_rules_reasons():
    wide = registry.get("gemv_wide")
    base = schemes.GEMV_WIDE_CONFIGS["m1"]
    assert any("multiple of 128" in r for r in wide.can_implement(base.replace(BN=96)))
    assert any("accumulators" in r for r in wide.can_implement(
        schemes.GEMV_WIDE_CONFIGS["m16"].replace(BN=256)))
    assert any("Y chunk" in r for r in wide.can_implement(
        schemes.GEMV_WIDE_CONFIGS["m16"].replace(BK=512)))
    assert any("reduction buffer" in r for r in wide.can_implement(
        base.replace(BN=256, threads=1024, BK=1024)))


# ---- the shape suite and the tune CLI -----------------------------------------------------------
def test_public_suite():
    shapes = tune.read_shapes(ROOT / "bench" / "shapes" / "public.txt")
    assert len(shapes) >= 40
    have = {(s.m, s.n, s.k, s.ta, s.tb, s.batch) for s in shapes}
    need = [(2560, 2560, 1024), (4092, 4092, 4092), (6144, 6144, 6144), (1023, 1025, 1021),
            (4097, 4095, 4093), (35, 79, 19), (16384, 64, 4096), (64, 16384, 4096),
            (1, 4096, 4096), (4096, 1, 4096), (256, 256, 65536), (128, 128, 131072),
            (8192, 8192, 64)]
    for m, n, k in need:
        assert (m, n, k, False, False, 1) in have, (m, n, k)
    for b, m in [(1024, 64), (256, 256), (64, 512), (8, 2048)]:
        assert (m, m, m, False, False, b) in have
    assert {(s.ta, s.tb) for s in shapes} == {(False, False), (False, True), (True, False),
                                              (True, True)}
    squares = sorted({s.m for s in shapes if s.m == s.n == s.k and s.batch == 1})
    assert squares[0] == 128 and squares[-1] == 8192
    assert any(x & (x - 1) for x in squares)


def test_tuner_reads_the_bench_shapes_format():
    # one parser for shapes files (sgemm.bench.sizes), shared by bench, suite and tune
    text = "64 64 64 N N 1024\n1 2 3 T N  # comment\n5 6 7 3\n# only a comment\n9 9 9 C n"
    assert tune.parse_shapes(text) == [tune.Shape(64, 64, 64, False, False, 1024),
                                       tune.Shape(1, 2, 3, True, False, 1),
                                       tune.Shape(5, 6, 7, False, False, 3),
                                       tune.Shape(9, 9, 9, True, False, 1)]
    assert tune.Shape(1, 2, 3, True, False, 4).key == "1x2x3:TNx4"
    with pytest.raises(ValueError):
        tune.parse_shapes("1 2")
    with pytest.raises(ValueError):
        tune.parse_shapes("1 2 3 X N")


def test_canonical_row_major():
    # a 1-row C is column-major with ld 1: canonical m = 1, B row-major -> TB
    p = tune.canonical(tune.Shape(1, 4096, 4096))
    assert (p.m, p.n, p.k) == (1, 4096, 4096) and p.tb and not p.ta
    # row-major 4096x1 C is column-major too; A row-major -> TA
    p = tune.canonical(tune.Shape(4096, 1, 4096))
    assert (p.m, p.n, p.k) == (4096, 1, 4096) and p.ta
    # a general row-major C swaps the roles: C^T = op(B)^T op(A)^T
    p = tune.canonical(tune.Shape(300, 200, 100))
    assert (p.m, p.n, p.k) == (200, 300, 100) and not p.ta and not p.tb


def test_tune_dry_run_cli(tmp_path, capsys):
    shapes = tmp_path / "s.txt"
    shapes.write_text("1 4096 4096\n256 256 65536\n512 512 512 N T\n64 64 64 N N 1024\n")
    assert tune.main(["--shapes", str(shapes), "--dry-run", "--device", "h100"]) == 0
    out = capsys.readouterr().out
    assert "gemv" in out and "splitk" in out and "rejected by" in out


def test_tune_show_cli(tmp_path, capsys):
    table = dispatch.TunedTable.empty("x")
    table.put("m1-n1-k1-b1-NN-a-p", schemes.TILE, schemes.TILE_CONFIGS["small"], time_ms=0.01,
              tflops=1.0, heuristic_ms=0.02)
    path = table.save(tmp_path / "t.json")
    assert tune.main(["--show", "--table", str(path), "--device", "h100"]) == 0
    assert "2.00x" in capsys.readouterr().out


# ---- the scheme kernels compile cleanly (NVRTC, no GPU) --------------------------------------------
def _nvrtc():
    try:
        from sgemm.runtime.compiler import nvrtc_version
        nvrtc_version()
        return True
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.skipif(not _nvrtc(), reason="NVRTC not available")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_scheme_utilities_compile(arch):
    from sgemm.runtime.compiler import compile_kernel
    for spec in schemes.UTILITY_SPECS:
        r = compile_kernel(spec.source, spec.name_expression(spec.configs["default"], False,
                                                             False), arch).resources()
        assert r["spill_stores"] == 0 and r["stack"] == 0, (spec.name, r)


@pytest.mark.skipif(not _nvrtc(), reason="NVRTC not available")
def test_heuristic_choices_compile_without_spills():
    """What the heuristic picks for the public suite (not only the named
    configs) compiles for sm_90a with no spills and no stack."""
    from sgemm.runtime.compiler import compile_kernel
    seen = set()
    for sh in tune.read_shapes(ROOT / "bench" / "shapes" / "public.txt"):
        for aligned in (True, False):
            pr = tune.canonical(sh, aligned)
            spec, p = dispatch.heuristic(pr, H100)
            expr = spec.name_expression(p, pr.ta, pr.tb, spec.vector_loads and pr.aligned)
            if (spec.source, expr) in seen:
                continue
            seen.add((spec.source, expr))
            r = compile_kernel(spec.source, expr, "sm_90a").resources()
            assert r["spill_stores"] == 0 and r["stack"] == 0, (expr, r)


# ---- split-K launches, emulated in NumPy (no GPU) ----------------------------------------------
class _FakeKernel:
    def __init__(self, spec, ta, tb):
        self.spec, self.ta, self.tb = spec, ta, tb


def _epilogue(v, rows, j, bias, epi, mem):
    """common.cuh's Epi on column j's rows (a NumPy vector) of a result."""
    from sgemm import epilogue
    epi = int(epi)
    if epi & epilogue.BIAS_M:
        v = v + mem[bias // 4 + rows]
    elif epi & epilogue.BIAS_N:
        v = v + mem[bias // 4 + j]
    return epilogue.activate(v, epilogue.name_of(epi))


def _emulate(launches, mem, counts=None):
    """Run SGEMM_PARAMS / splitk_reduce launches on a flat float64 memory
    (pointers are byte offsets into it).  counts, if given, counts epilogue
    applications per C element offset."""
    for l in launches:
        k = l.kernel
        if k.spec.name.startswith("splitk_reduce"):
            M, N, S, W, ldw, sw, alpha, beta, C, ldc, sc, bias, epi = l.args
            W, C = W // 4, C // 4
            for z in range(l.grid[2]):
                for j in range(int(N)):
                    acc = np.zeros(int(M))
                    for s in range(int(S)):
                        acc += mem[W + s * sw + j * ldw: W + s * sw + j * ldw + int(M)]
                    col = slice(C + z * sc + j * ldc, C + z * sc + j * ldc + int(M))
                    v = float(alpha) * acc + (float(beta) * mem[col] if beta != 0 else 0)
                    mem[col] = _epilogue(v, np.arange(int(M)), j, bias, epi, mem)
                    if counts is not None and int(epi):
                        for i in range(col.start, col.stop):
                            counts[i] = counts.get(i, 0) + 1
            continue
        # specs with extra["ragged"] append k_last, the depth of the last z entry
        (M, N, K0, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, bias, epi) = l.args[:16]
        M, N, K0 = int(M), int(N), int(K0)
        k_last = int(l.args[16]) if len(l.args) == 17 else K0
        for z in range(l.grid[2]):
            K = k_last if z == l.grid[2] - 1 else K0
            Az, Bz, Cz = A // 4 + z * sa, B // 4 + z * sb, C // 4 + z * sc
            opA = np.array([[mem[Az + (p + i * lda if k.ta else i + p * lda)] for p in range(K)]
                            for i in range(M)])
            opB = np.array([[mem[Bz + (j + p * ldb if k.tb else p + j * ldb)] for j in range(N)]
                            for p in range(K)])
            prod = opA @ opB
            for j in range(N):
                col = slice(Cz + j * ldc, Cz + j * ldc + M)
                v = float(alpha) * prod[:, j] + (float(beta) * mem[col] if beta != 0 else 0)
                mem[col] = _epilogue(v, np.arange(M), j, bias, epi, mem)
                if counts is not None and int(epi):
                    for i in range(col.start, col.stop):
                        counts[i] = counts.get(i, 0) + 1


@pytest.mark.parametrize("m,n,k,ta,tb,split,bk", [(5, 3, 97, False, False, 4, 8),
                                                  (4, 6, 64, True, True, 8, 8),
                                                  (7, 2, 50, True, False, 3, 8),
                                                  (3, 5, 33, False, True, 16, 4)])
@pytest.mark.parametrize("kernel", ["tile", "double_buffer"])
def test_splitk_launches_emulated(monkeypatch, m, n, k, ta, tb, split, bk, kernel):
    """Split-K's launches, run by the emulator: the tile kernel's shorter
    last slice is a launch of its own, rung 9's (extra["ragged"]) is the last
    z entry of the full slices' launch, k_last deep."""
    from sgemm.kernels import registry
    from sgemm.runtime import launcher
    monkeypatch.setattr(launcher, "get_kernel",
                        lambda spec, p, ta_, tb_, al, dev: _FakeKernel(spec, ta_, tb_))
    rng = np.random.default_rng(m * 100 + k)
    lda, ldb, ldc = (k if ta else m) + 1, (n if tb else k) + 2, m + 3
    a_n, b_n, c_n = lda * (m if ta else k), ldb * (k if tb else n), ldc * n
    ws_at = a_n + b_n + c_n + 8
    mem = np.zeros(ws_at + 64 * (m + 4) * n + 64)
    mem[:a_n + b_n] = rng.standard_normal(a_n + b_n)
    mem[a_n + b_n:a_n + b_n + c_n] = rng.standard_normal(c_n)
    from sgemm import launches
    monkeypatch.setattr(launches, "allocate_workspace", lambda nf, dev: (None, 4 * ws_at))
    pr = Problem(m=m, n=n, k=k, ta=ta, tb=tb, a=0, lda=lda, b=4 * a_n, ldb=ldb,
                 c=4 * (a_n + b_n), ldc=ldc, alpha=0.5, beta=-2.0)
    spec = registry.KERNELS[kernel]
    params = (schemes.SPLITK_CONFIGS["small"] if kernel == "tile" else spec.configs["small"]
              ).replace(split_k=split, BK=bk)
    ls = dispatch.scheme_launches([pr], spec, params, "splitk", H100)
    opA = np.array([[mem[(p + i * lda) if ta else (i + p * lda)] for p in range(k)]
                    for i in range(m)])
    opB = np.array([[mem[a_n + ((j + p * ldb) if tb else (p + j * ldb))] for j in range(n)]
                    for p in range(k)])
    C0 = np.array([[mem[a_n + b_n + i + j * ldc] for j in range(n)] for i in range(m)])
    _emulate(ls, mem)
    C = np.array([[mem[a_n + b_n + i + j * ldc] for j in range(n)] for i in range(m)])
    np.testing.assert_allclose(C, 0.5 * opA @ opB - 2.0 * C0, rtol=1e-12, atol=1e-12)
    kc, full, rem = schemes.split_slices(k, split, bk)
    ragged = kernel == "double_buffer" and full > 0
    assert len(ls) == (1 if full else 0) + (1 if rem and not ragged else 0) + 1
    if ragged and rem:
        assert ls[0].grid[2] == full + 1 and int(ls[0].args[-1]) == rem


@pytest.mark.parametrize("axis", ["m", "n"])
@pytest.mark.parametrize("act", ["relu", "gelu", "gelu_tanh", "silu"])
def test_splitk_applies_the_epilogue_once_after_the_sum(monkeypatch, axis, act):
    """Split-K with bias and activation: the slices go to the workspace
    without any epilogue and the reduction applies it once per element, to
    the sum (act(sum) is not sum(act(slice)), and a bias added per slice
    would count S times)."""
    from sgemm import epilogue, launches
    from sgemm.runtime import launcher
    monkeypatch.setattr(launcher, "get_kernel",
                        lambda spec, p, ta_, tb_, al, dev: _FakeKernel(spec, ta_, tb_))
    m, n, k, split = 6, 5, 96, 4
    rng = np.random.default_rng(7)
    a_n, b_n, c_n = m * k, k * n, m * n
    bias_at = a_n + b_n + c_n
    ws_at = bias_at + 16
    mem = np.zeros(ws_at + 8 * (m + 4) * n + 64)
    mem[:bias_at + 8] = rng.standard_normal(bias_at + 8)
    monkeypatch.setattr(launches, "allocate_workspace", lambda nf, dev: (None, 4 * ws_at))
    epi = epilogue.code(epilogue.activation_code(act), True, axis == "m")
    pr = Problem(m=m, n=n, k=k, ta=False, tb=False, a=0, lda=m, b=4 * a_n, ldb=k,
                 c=4 * (a_n + b_n), ldc=m, alpha=0.5, beta=-2.0, bias=4 * bias_at, epi=epi)
    params = schemes.SPLITK_CONFIGS["small"].replace(split_k=split, BK=8)
    ls = dispatch.scheme_launches([pr], schemes.TILE, params, "splitk", H100)
    assert all(int(l.args[-1]) == 0 for l in ls[:-1])     # the slices: no epilogue
    A = mem[:a_n].reshape(k, m).T
    B = mem[a_n:a_n + b_n].reshape(n, k).T
    C0 = mem[a_n + b_n:bias_at].reshape(n, m).T.copy()
    bias = mem[bias_at:bias_at + (m if axis == "m" else n)]
    counts = {}
    _emulate(ls, mem, counts)
    C = mem[a_n + b_n:bias_at].reshape(n, m).T
    z = 0.5 * A @ B - 2.0 * C0 + (bias[:, None] if axis == "m" else bias[None, :])
    np.testing.assert_allclose(C, epilogue.activate(z, act), rtol=1e-12, atol=1e-12)
    assert sorted(counts.values()) == [1] * (m * n)


def test_rs_kernel_takes_float4_copies_only_for_whole_chunks():
    """The 3xTF32 RS kernel copies raw A in 16-byte chunks when ALIGNED; a
    partial last chunk would name bytes past the operand, so A's contiguous
    extent must be a multiple of 4 (k with TA, m without)."""
    rs = registry.get("tf32x3_wgmma_rs")
    assert rs.aligned_for(prob(128, 128, 128))
    assert rs.aligned_for(prob(128, 128, 129, ta=False))        # m contiguous: fine
    assert not rs.aligned_for(prob(128, 128, 129, ta=True))     # k contiguous: 129 % 4
    assert not rs.aligned_for(prob(127, 128, 128, ta=False))
    assert not rs.aligned_for(prob(128, 128, 128, aligned=False))
    tile = registry.get("tile")                                  # no extra check
    assert tile.aligned_for(prob(127, 128, 129, ta=True))
