"""A NumPy model of 42_int8_wgmma.cu's index math, run on the CPU.

The model repeats the kernel's own expressions (grouped raster, the
cp.async chunk mapping with one swizzled base per thread, the row mask,
the descriptor's start address per warpgroup and k32 step, the epilogue)
and feeds them through independent models of the hardware: wgmma's read of
a K-major operand in the 128-byte swizzle mode (8-row groups SBO = 1024
bytes apart, row r of a group 128 bytes on, and address bits 4-6 XOR-ed
with bits 7-9 of the 1024-aligned offset: PTX ISA, "Shared Memory Matrix
Layout", 128B swizzling) and the s32 accumulator layout of m64nNk32 (warp w
of the warpgroup holds rows 16w + lane/4 and + 8, columns 8b + 2 (lane % 4)
and + 1, in d[4b + q]).  If the mirrored expressions reproduce the int64
product on odd shapes, the tiling is right; the GPU test
(tests/gpu/test_int8x_gpu.py) checks the kernel itself.  Also: each stage
byte written once per k-tile, cp.async quarter-warps conflict-free, the
deep-K fold keeping every partial sum in INT32 and exact to K = 131056
(the largest multiple of 16 below KLIMIT = 131071).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from sgemm.kernels import utility as U
from sgemm.kernels.params import TileParams

SOURCE = Path(U.__file__).parent / "cuda" / "42_int8_wgmma.cu"
BK = 128
KLIMIT = (2 ** 31 - 1 - 255) // 16384


def raster(bid, tiles_m, tiles_n, group):
    per_group = group * tiles_n
    g0 = bid // per_group * group
    gsize = min(tiles_m - g0, group)
    ig = bid % per_group
    return g0 + ig % gsize, ig // gsize


# ---- hardware models ----
def swizzle128(off):
    """128B swizzle of a byte offset from a 1024-aligned atom base."""
    return off ^ (((off >> 7) & 7) << 4)


def wgmma_read(stage, start, rows):
    """The (rows x 32) int8 operand a K-major 128B-swizzled descriptor with
    this start offset names: row r, byte kb at swizzle(start + (r // 8) *
    1024 + (r % 8) * 128 + kb)."""
    r = np.arange(rows)[:, None]
    kb = np.arange(32)[None, :]
    return stage[swizzle128(start + (r // 8) * 1024 + (r % 8) * 128 + kb)]


def d_coords(warp, lane, i):
    """(row, column) of accumulator d[i] of a thread in a m64nN s32 wgmma."""
    g, t, b, q = lane // 4, lane % 4, i // 4, i % 4
    return warp * 16 + g + (q >> 1) * 8, b * 8 + 2 * t + (q & 1)


# ---- the kernel, block by block ----
def run_kernel(pa, pb, p: TileParams, mod: int = 256, klimit: int = KLIMIT, swizzle=True,
               planes=None, ld=None):
    """The accumulators each block ends with, placed at their (row, column)
    by the fragment layout (int64 m x n).  planes: an (n, >= ld) array, the
    column-major byte plane of ld rows (the kernel's ldc) that the byte
    epilogue writes into."""
    BM, BN = p.BM, p.BN
    threads = p.threads
    rpi = threads // 8
    a_iters, b_iters = BM // rpi, BN // rpi
    m, kp = pa.shape
    n = pb.shape[0]
    tiles_m, tiles_n = -(-m // BM), -(-n // BN)
    C = np.full((m, n), np.iinfo(np.int64).min, np.int64)
    stage_bytes = (BM + BN) * BK
    for bid in range(tiles_m * tiles_n):
        tm, tn = raster(bid, tiles_m, tiles_n, p.swizzle)
        m0, n0 = tm * BM, tn * BN
        D = {wg: np.zeros((64, BN), np.int64) for wg in range(BM // 64)}
        since = 0
        for kt in range(-(-kp // BK)):
            stage = np.full(stage_bytes, -999, np.int64)
            k0 = kt * BK
            for warp in range(threads // 32):
                groups = []
                for lane in range(32):
                    tid = warp * 32 + lane
                    c, r0 = tid % 8, tid // 8
                    dst0 = r0 * BK + (((c ^ (r0 & 7)) if swizzle else c) << 4)
                    k_ok = k0 + c * 16 < kp
                    rows_ok = 0
                    for it in range(a_iters):
                        rows_ok |= int(m0 + r0 + it * rpi < m) << it
                    for it in range(b_iters):
                        rows_ok |= int(n0 + r0 + it * rpi < n) << (a_iters + it)
                    for it in range(a_iters + b_iters):
                        ok = k_ok and (rows_ok >> it) & 1
                        if it < a_iters:
                            d = dst0 + it * rpi * BK
                            src = pa[m0 + r0 + it * rpi, k0 + c * 16:k0 + c * 16 + 16] if ok \
                                else 0
                        else:
                            j = it - a_iters
                            d = dst0 + (BM + j * rpi) * BK
                            src = pb[n0 + r0 + j * rpi, k0 + c * 16:k0 + c * 16 + 16] if ok \
                                else 0
                        assert (stage[d:d + 16] == -999).all()          # written once
                        stage[d:d + 16] = src
                        if it == 0:
                            groups.append((d % 128) // 16)
                for quarter in range(4):          # 8 threads x 16 B per wavefront
                    assert len(set(groups[8 * quarter:8 * quarter + 8])) == 8
            assert (stage != -999).all()
            kn = min(BK, kp - kt * BK)
            if since + kn > klimit:
                for v in D.values():
                    v[:] = np.fmod(v, mod)           # C's %: truncates toward zero
                since = 0
            since += kn
            for wg in range(BM // 64):
                a_off, b_off = wg * 64 * BK, BM * BK
                for j in range(BK // 32):
                    A = wgmma_read(stage, a_off + 32 * j, 64)
                    B = wgmma_read(stage, b_off + 32 * j, BN)
                    D[wg] += A @ B.T
        # epilogue, as the kernel writes it
        for wg, v in D.items():
            for warp in range(4):
                for lane in range(32):
                    g, t = lane // 4, lane % 4
                    for b in range(BN // 8):
                        for q in range(4):
                            r = m0 + wg * 64 + warp * 16 + g + (q >> 1) * 8
                            col = n0 + b * 8 + 2 * t + (q & 1)
                            rr, cc = d_coords(warp, lane, 4 * b + q)
                            if r < m and col < n:
                                assert C[r, col] == np.iinfo(np.int64).min
                                C[r, col] = v[rr, cc]
        if planes is not None:
            byte_epilogue(D, p, m0, n0, n, mod, planes, ld)
    assert (C != np.iinfo(np.int64).min).all()
    return C


def byte_epilogue(D, p: TileParams, m0, n0, n, mod, plane, ld, pitch=None):
    """42's epilogue: every accumulator reduced mod p into stg[col * PITCH +
    row] (each byte once; per store instruction the 32 lanes' words fall in
    distinct banks or share a word), then 16-byte chunks of 16 rows stored
    where the chunk starts below ld (the plane's row count) and the column
    is below n."""
    BM, BN, threads = p.BM, p.BN, p.threads
    pitch, chunks = pitch or BM + 16, BM // 16
    assert BN * pitch <= p.stages * (BM + BN) * BK
    stg = np.full(BN * pitch, -1, np.int64)
    for wg, v in D.items():
        for warp in range(4):
            for b in range(BN // 8):
                for q in range(4):
                    words = {}
                    for lane in range(32):
                        g, t = lane // 4, lane % 4
                        r = wg * 64 + warp * 16 + g + (q >> 1) * 8
                        col = b * 8 + 2 * t + (q & 1)
                        rr, cc = d_coords(warp, lane, 4 * b + q)
                        a = col * pitch + r
                        assert stg[a] == -1
                        stg[a] = np.mod(v[rr, cc], mod)     # mod_small: [0, p)
                        words.setdefault((a // 4) % 32, set()).add(a // 4)
                    assert all(len(w) == 1 for w in words.values())   # no bank conflict
    assert (stg[[c * pitch + r for c in range(BN) for r in range(BM)]] >= 0).all()
    assert ld % 16 == 0 and (BN * chunks) % threads == 0
    for it in range(BN * chunks // threads):
        for tid in range(threads):
            qc = tid + it * threads
            col, ch = qc // chunks, qc % chunks
            r = m0 + ch * 16
            if r < ld and n0 + col < n:
                plane[n0 + col, r:r + 16] = stg[col * pitch + ch * 16:col * pitch + ch * 16 + 16]


def _planes(rng, m, n, k, p_mod):
    kp = -(-max(k, 1) // 16) * 16
    lo, hi = -(p_mod // 2), (p_mod + 1) // 2
    pa = np.zeros((m, kp), np.int64)
    pb = np.zeros((n, kp), np.int64)
    pa[:, :k] = rng.integers(lo, hi, (m, k))
    pb[:, :k] = rng.integers(lo, hi, (n, k))
    return pa, pb


TINY = TileParams(BM=64, BN=64, BK=128, WM=64, WN=64, threads=128, stages=3, swizzle=2)


@pytest.mark.parametrize("p", [TINY, TINY.replace(BM=128, threads=256, swizzle=1),
                               TINY.replace(BN=128, WN=128, swizzle=3)],
                         ids=["64x64", "128x64", "64x128"])
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (65, 130, 31), (70, 45, 300)])
def test_model_of_the_tiling_reproduces_the_product(p, m, n, k):
    assert not U.int8_wgmma_rules(p), U.int8_wgmma_rules(p)
    rng = np.random.default_rng(m * 100 + n + k)
    pa, pb = _planes(rng, m, n, k, 256)
    np.testing.assert_array_equal(run_kernel(pa, pb, p), pa @ pb.T)


@pytest.mark.parametrize("config", sorted(U.INT8X_WGMMA.configs))
def test_model_of_the_registered_configs(config):
    p = U.INT8X_WGMMA.configs[config]
    rng = np.random.default_rng(3)
    pa, pb = _planes(rng, p.BM + 5, p.BN + 3, 200, 251)
    np.testing.assert_array_equal(run_kernel(pa, pb, p), pa @ pb.T)


@pytest.mark.parametrize("p", [TINY, TINY.replace(BM=128, threads=256, swizzle=1),
                               U.INT8X_WGMMA.configs["narrow"]],
                         ids=["64x64", "128x64", "narrow"])
@pytest.mark.parametrize("m,n,mod", [(1, 1, 256), (65, 130, 251), (150, 70, 233)])
def test_byte_epilogue_writes_every_residue_once(p, m, n, mod):
    """The byte planes hold (A'B')_ij mod p in [0, p) for every row below the
    padded row count (rows past m: 0, the zero-filled rows' residue), every
    byte of them written, nothing past them."""
    rng = np.random.default_rng(m + n + mod)
    pa, pb = _planes(rng, m, n, 77, mod)
    ld = -(-m // 16) * 16
    plane = np.full((n, ld + 16), -1, np.int64)        # 16 guard rows past ld
    run_kernel(pa, pb, p, mod, planes=plane, ld=ld)
    want = np.zeros((n, ld), np.int64)
    want[:, :m] = np.mod(pa @ pb.T, mod).T
    np.testing.assert_array_equal(plane[:, :ld], want)
    assert (plane[:, ld:] == -1).all()


def test_byte_epilogue_model_catches_a_wrong_pitch():
    """A pitch of BM bytes (no padding) puts the four t of a store in one
    bank: the conflict check fails."""
    D = {0: np.arange(64 * 64, dtype=np.int64).reshape(64, 64)}
    plane = np.zeros((64, 64), np.int64)
    byte_epilogue(D, TINY, 0, 0, 64, 256, plane, 64)         # BM + 16: clean
    with pytest.raises(AssertionError):
        byte_epilogue(D, TINY, 0, 0, 64, 256, plane, 64, pitch=TINY.BM)


def test_the_model_catches_a_missing_swizzle():
    """Copies without the XOR put chunks where wgmma's 128B mode does not
    read them: the product comes out wrong."""
    rng = np.random.default_rng(5)
    pa, pb = _planes(rng, 64, 64, 128, 256)
    with pytest.raises(AssertionError):
        got = run_kernel(pa, pb, TINY, swizzle=False)
        np.testing.assert_array_equal(got, pa @ pb.T)


@pytest.mark.parametrize("mod", [256, 241])
def test_folding_keeps_the_residue_class(mod):
    """A fold before every k-tile (a tiny KLIMIT) changes the planes but
    keeps them congruent modulo p; with K <= KLIMIT nothing folds."""
    rng = np.random.default_rng(mod)
    pa, pb = _planes(rng, 20, 9, 500, mod)
    want = pa @ pb.T
    got = run_kernel(pa, pb, TINY, mod, klimit=BK)
    assert np.any(got != want)
    np.testing.assert_array_equal(np.mod(got - want, mod), 0)
    np.testing.assert_array_equal(run_kernel(pa, pb, TINY, mod, klimit=512), want)


def test_fold_limit_keeps_int32_exact():
    """Worst case, every product 128 * 128: from a folded remainder (|r| <=
    255) KLIMIT more terms stay inside INT32, one k-tile more might not; K up
    to KLIMIT never folds, so the planes are exact there.  The source holds
    the same formula."""
    assert KLIMIT == 131071
    assert 255 + KLIMIT * 16384 <= 2 ** 31 - 1 < 255 + (KLIMIT + 1) * 16384
    src = "".join((SOURCE.parent / f).read_text() for f in (SOURCE.name, "int8_common.cuh", "wgmma.cuh"))
    assert re.search(r"KLIMIT = \(2147483647 - 255\) / 16384,", src)
    # the fold condition counts each k-tile's padded depth: K = 131056 (the
    # largest multiple of 16 up to KLIMIT) is 1023 full tiles and 112 more,
    # no fold; K = 131072 folds once, before its last tile
    def folds(kp):
        since, n = 0, 0
        for kt in range(-(-kp // BK)):
            kn = min(BK, kp - kt * BK)
            if since + kn > KLIMIT:
                n, since = n + 1, 0
            since += kn
        return n
    assert folds(131056) == 0 and folds(131072) == 1 and folds(2 * 131072) == 2


def test_rows_per_copy_iteration_keep_the_swizzle_of_the_first_row():
    """The kernel computes one swizzled chunk per thread (c ^ (r0 & 7)) and
    adds it * ROWS_PER_IT * 128 per iteration: valid because ROWS_PER_IT =
    threads / 8 is a multiple of 8 for every legal config."""
    for bm in (64, 128, 192, 256):
        assert (128 * bm // 64 // 8) % 8 == 0


def test_source_uses_the_s8_wgmma_and_the_mirrored_expressions():
    src = "".join((SOURCE.parent / f).read_text() for f in (SOURCE.name, "int8_common.cuh", "wgmma.cuh"))
    for line in ["wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8",
                 "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8",
                 "fence.proxy.async.shared::cta;",
                 "return (unsigned long long)((saddr & 0x3FFFF) >> 4)",
                 "| ((unsigned long long)(1024 >> 4) << 32)",
                 "| ((unsigned long long)1 << 62);",
                 "m0 = (g0 + in_group % gsize) * BM;", "n0 = in_group / gsize * BN;",
                 "const int c = tid % 8, r0 = tid / 8;",
                 "const u32 dst0 = base + r0 * BK + ((c ^ (r0 & 7)) << 4);",
                 "cp16(dst + it * ROWS_PER_IT * BK, ok ? pa : A, ok ? 16 : 0);",
                 "cp16(dst + (BM + it * ROWS_PER_IT) * BK, ok ? pb : B, ok ? 16 : 0);",
                 "const u32 a_off = wg * 64 * BK, b_off = BM * BK;",
                 "for (int j = 0; j < BK / 32; ++j) wgmma_s8<BN>(acc, da + 2 * j, db + 2 * j);",
                 "if (since_fold + kn > KLIMIT) {",
                 "const int r = wg * 64 + warp * 16 + g + (q >> 1) * 8;",
                 "const int col = b * 8 + 2 * t + (q & 1);",
                 "constexpr int PITCH = BM + 16;",
                 "stg[col * PITCH + r] = (unsigned char)i8c::mod_small(acc[4 * b + q], p, c16, inv);",
                 "const int qc = tid + it * THREADS, col = qc / CHUNKS, ch = qc % CHUNKS;",
                 "if (r < ldc && n0 + col < N)",
                 "return mod_f((x >> 16) * c16 + (x & 0xffff), p, inv);",
                 "wait_pending<STAGES - 3>();",
                 "if (kt + STAGES - 2 < KT) load_tile(kt + STAGES - 2, (kt + STAGES - 2) % STAGES);",
                 "wgmma_wait<1>();"]:
        assert line in src, line
