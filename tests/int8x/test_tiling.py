"""A NumPy model of 41_int8_mma.cu's index math, run on the CPU.

The model repeats the kernel's own index expressions (grouped raster,
cp.async chunk mapping, XOR swizzle, ldmatrix lane addresses, fragment
selection, epilogue) and feeds them through independent models of the
hardware: ldmatrix.x4 (lane 8q + r names row r of matrix q; lane L receives
bytes 4 (L % 4).. of row L / 4 of each matrix) and mma.m16n8k32 .s8 with the
fragment tables of the PTX ISA written per element (a_i, b_i, c_i).  If the
kernel's mirrored expressions reproduce the int64 product, the tiling is
right; the GPU test (tests/gpu/test_int8x_gpu.py) checks the kernel itself.
Also: no shared-memory bank conflicts in ldmatrix reads or cp.async stores,
each stage byte written once per tile, the raster a bijection, and the
K fold keeping every partial sum inside INT32.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from sgemm.kernels import utility as U
from sgemm.kernels.params import TileParams
from sgemm.int8x import moduli as M

SOURCE = Path(U.__file__).parent / "cuda" / "41_int8_mma.cu"


# ---- the kernel's expressions, mirrored ----
def swz(r, c, bk):
    ch = bk // 16
    rpl = 8 // ch
    return r * bk + ((c ^ ((r // rpl) & (ch - 1))) << 4)


def raster(bid, tiles_m, tiles_n, group):
    per_group = group * tiles_n
    g0 = bid // per_group * group
    gsize = min(tiles_m - g0, group)
    ig = bid % per_group
    return g0 + ig % gsize, ig // gsize


# ---- hardware models (PTX ISA) ----
def ldmatrix_x4(smem, addrs):
    """addrs[32] byte addresses; returns (32 lanes, 4 registers, 4 bytes)."""
    out = np.zeros((32, 4, 4), np.int64)
    for q in range(4):
        for lane in range(32):
            a = addrs[8 * q + lane // 4] + 4 * (lane % 4)
            out[lane, q] = smem[a:a + 4]
    return out


def a_elem(lane, ai):
    """(row, col) of element a_ai (0..15) of lane's A fragment, m16n8k32 .s8."""
    g, t = lane // 4, lane % 4
    row = g if (ai < 4 or 8 <= ai < 12) else g + 8
    col = t * 4 + (ai & 3) + (16 if ai >= 8 else 0)
    return row, col


def b_elem(lane, bi):
    """(row = k, col = n) of element b_bi (0..7) of lane's B fragment."""
    g, t = lane // 4, lane % 4
    return t * 4 + (bi & 3) + (16 if bi >= 4 else 0), g


def c_elem(lane, ci):
    g, t = lane // 4, lane % 4
    return (g if ci < 2 else g + 8), t * 2 + (ci & 1)


def mma(acc, afrag, bfrag):
    """acc (32, 4) += A B with A (16 x 32), B (32 x 8) gathered from the
    fragments; every element must be held by exactly one (lane, slot)."""
    A = np.full((16, 32), -999, np.int64)
    B = np.full((32, 8), -999, np.int64)
    for lane in range(32):
        for ai in range(16):
            r, c = a_elem(lane, ai)
            assert A[r, c] == -999
            A[r, c] = afrag[lane][ai // 4][ai % 4]
        for bi in range(8):
            r, c = b_elem(lane, bi)
            assert B[r, c] == -999
            B[r, c] = bfrag[lane][bi // 4][bi % 4]
    assert (A != -999).all() and (B != -999).all()
    D = A @ B
    for lane in range(32):
        for ci in range(4):
            acc[lane, ci] += D[c_elem(lane, ci)]


# ---- the kernel, block by block ----
def run_kernel(pa, pb, p: TileParams, mod: int, fold_tiles: int | None = None, checks=None):
    """pa (m, K) and pb (n, K) int8 residue rows (K a multiple of 16); the
    int32 plane the kernel writes, column-major as (n, m) -> returned (m, n)."""
    BM, BN, BK, WM, WN = p.BM, p.BN, p.BK, p.WM, p.WN
    threads, ch = p.threads, BK // 16
    m, kp = pa.shape
    n = pb.shape[0]
    fold = fold_tiles or U.int8_fold_tiles(BK)
    tiles_m, tiles_n = -(-m // BM), -(-n // BN)
    C = np.full((m, n), np.iinfo(np.int64).min, np.int64)
    seen_tiles = set()
    for bid in range(tiles_m * tiles_n):
        tm, tn = raster(bid, tiles_m, tiles_n, p.swizzle)
        assert (tm, tn) not in seen_tiles
        seen_tiles.add((tm, tn))
        m0, n0 = tm * BM, tn * BN
        acc = {(w, i, j): np.zeros((32, 4), np.int64)
               for w in range(threads // 32) for i in range(WM // 16) for j in range(WN // 8)}
        since = 0
        for kt in range(-(-kp // BK)):
            stage = np.full((BM + BN) * BK, -999, np.int64)   # one stage (slots are alike)
            k0 = kt * BK
            sides = ((0, pa, m0, m, BM), (BM * BK, pb, n0, n, BN))
            for base, src, rows0, nrows, tile_rows in sides:
                for it in range(tile_rows * ch // threads):
                    for warp in range(threads // 32):
                        groups = []
                        for lane in range(32):
                            q = warp * 32 + lane + it * threads
                            r, c = q // ch, q % ch
                            ok = rows0 + r < nrows and k0 + c * 16 < kp
                            d = base + swz(r, c, BK)
                            assert (stage[d:d + 16] == -999).all()     # written once
                            stage[d:d + 16] = src[rows0 + r, k0 + c * 16:k0 + c * 16 + 16] \
                                if ok else 0
                            groups.append((d % 128) // 16)
                        for quarter in range(4):          # 8 threads x 16 B per wavefront
                            assert len(set(groups[8 * quarter:8 * quarter + 8])) == 8
            assert (stage != -999).all()
            for warp in range(threads // 32):
                wm0, wn0 = (warp % (BM // WM)) * WM, (warp // (BM // WM)) * WN
                lanes = np.arange(32)
                a_row, a_half = wm0 + (lanes & 15), lanes >> 4
                b_row = wn0 + (lanes & 7) + ((lanes >> 4) << 3)
                b_half = (lanes >> 3) & 1
                for kk in range(BK // 32):
                    af, bf = [], []
                    for i in range(WM // 16):
                        addrs = [swz(int(a_row[L]) + i * 16, kk * 2 + int(a_half[L]), BK)
                                 for L in range(32)]
                        _conflict_free(addrs)
                        af.append(ldmatrix_x4(stage, addrs))
                    for j in range(WN // 16):
                        addrs = [BM * BK + swz(int(b_row[L]) + j * 16, kk * 2 + int(b_half[L]), BK)
                                 for L in range(32)]
                        _conflict_free(addrs)
                        bf.append(ldmatrix_x4(stage, addrs))
                    for i in range(WM // 16):
                        for j in range(WN // 8):
                            regs = bf[j // 2][:, [(j & 1) * 2, (j & 1) * 2 + 1]]
                            mma(acc[warp, i, j], af[i], regs)
                            if checks is not None:
                                checks.append(int(np.abs(acc[warp, i, j]).max()))
            since += 1
            if since == fold and kt + 1 < -(-kp // BK):
                since = 0
                for v in acc.values():
                    v[:] = np.fmod(v, mod)                 # C's %: truncates toward zero
        for (warp, i, j), v in acc.items():
            wm0, wn0 = (warp % (BM // WM)) * WM, (warp // (BM // WM)) * WN
            for lane in range(32):
                g, t = lane >> 2, lane & 3
                for e in range(4):
                    r = m0 + wm0 + i * 16 + g + (e >> 1) * 8
                    c = n0 + wn0 + j * 8 + t * 2 + (e & 1)
                    if r < m and c < n:
                        assert C[r, c] == np.iinfo(np.int64).min     # each element once
                        C[r, c] = v[lane, e]
    assert len(seen_tiles) == tiles_m * tiles_n
    assert (C != np.iinfo(np.int64).min).all()
    return C


def _conflict_free(addrs):
    """Each 8-lane phase of an ldmatrix.x4 reads one 8 x 16-byte matrix: its
    eight rows must fall in eight distinct 16-byte bank groups."""
    for q in range(4):
        assert len({(a % 128) // 16 for a in addrs[8 * q:8 * q + 8]}) == 8, addrs[8 * q:8 * q + 8]


def _planes(rng, m, n, k, p_mod):
    kp = -(-max(k, 1) // 16) * 16
    lo, hi = -(p_mod // 2), (p_mod + 1) // 2
    pa = np.zeros((m, kp), np.int64)
    pb = np.zeros((n, kp), np.int64)
    pa[:, :k] = rng.integers(lo, hi, (m, k))
    pb[:, :k] = rng.integers(lo, hi, (n, k))
    return pa, pb


SMALL = TileParams(BM=32, BN=32, BK=64, WM=16, WN=16, threads=128, stages=2, swizzle=2)


@pytest.mark.parametrize("p", [SMALL, SMALL.replace(BK=32, BM=64, BN=64, WM=32, WN=32, swizzle=1),
                               SMALL.replace(BK=128, WM=32, threads=64, swizzle=3)],
                         ids=["bk64", "bk32", "bk128"])
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (17, 33, 65), (70, 45, 200)])
def test_model_of_the_tiling_reproduces_the_product(p, m, n, k):
    assert not U.int8_gemm_rules(p), U.int8_gemm_rules(p)
    rng = np.random.default_rng(m * 100 + n + k)
    pa, pb = _planes(rng, m, n, k, 256)
    np.testing.assert_array_equal(run_kernel(pa, pb, p, 256), pa @ pb.T)


@pytest.mark.parametrize("config", sorted(U.INT8X_GEMM.configs))
def test_model_of_the_registered_configs(config):
    p = U.INT8X_GEMM.configs[config]
    rng = np.random.default_rng(7)
    pa, pb = _planes(rng, p.BM + 3, 20, 70, 251)
    np.testing.assert_array_equal(run_kernel(pa, pb, p, 251), pa @ pb.T)


@pytest.mark.parametrize("mod", [256, 255, 233])
def test_folding_keeps_the_residue_class(mod):
    """With a fold after every k-tile the planes differ from the product but
    stay congruent modulo p, which is all Garner reads."""
    rng = np.random.default_rng(mod)
    pa, pb = _planes(rng, 20, 9, 300, mod)
    got = run_kernel(pa, pb, SMALL, mod, fold_tiles=1)
    want = pa @ pb.T
    assert np.any(got != want)
    # a fold interval of exactly K's tiles never folds: the exact product
    np.testing.assert_array_equal(run_kernel(pa, pb, SMALL, mod, fold_tiles=5), want)
    np.testing.assert_array_equal(np.mod(got - want, mod), 0)
    assert np.abs(got).max() < mod + 64 * 128 * 128


@pytest.mark.parametrize("tiles_m,tiles_n,group", [(1, 1, 8), (7, 3, 8), (17, 5, 8), (9, 9, 4),
                                                   (128, 128, 8), (5, 200, 3)])
def test_raster_visits_every_tile_once(tiles_m, tiles_n, group):
    seen = {raster(b, tiles_m, tiles_n, group) for b in range(tiles_m * tiles_n)}
    assert seen == {(i, j) for i in range(tiles_m) for j in range(tiles_n)}


@pytest.mark.parametrize("bk", [32, 64, 128])
def test_fold_interval_keeps_int32_exact(bk):
    """Worst case: every product 128 * 128 (p = 256, residues -128), starting
    from a folded remainder just below 256: still inside INT32 after
    FOLD_TILES tiles, outside one tile later.  The kernel's constant is this
    formula (the source is checked)."""
    f = U.int8_fold_tiles(bk)
    assert 255 + f * bk * 128 * 128 <= 2 ** 31 - 1 < 255 + (f + 1) * bk * 128 * 128 + 1
    assert f * bk <= M.INT32_K_MAX
    src = SOURCE.read_text() + (SOURCE.parent / "int8_common.cuh").read_text()
    assert re.search(r"FOLD_TILES = \(2147483647 - 256\) / \(16384 \* BK\)", src)


def test_swizzle_is_a_permutation_of_each_row_line():
    for bk in (32, 64, 128):
        ch = bk // 16
        offs = sorted(swz(r, c, bk) for r in range(64) for c in range(ch))
        assert offs == list(range(0, 64 * bk, 16))


def test_source_uses_the_int8_mma_and_the_mirrored_expressions():
    """The model above mirrors these lines of the kernel; if the kernel's
    change, this test names what to update."""
    src = SOURCE.read_text() + (SOURCE.parent / "int8_common.cuh").read_text()
    for line in ["mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
                 "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                 "cp.async.cg.shared.global [%0], [%1], 16, %2",
                 "return r * BK + ((c ^ ((r / RPL) & (CH - 1))) << 4);",
                 "m0 = (g0 + in_group % gsize) * BM;", "n0 = in_group / gsize * BN;",
                 "const int a_row = wm0 + (lane & 15), a_half = lane >> 4;",
                 "const int b_row = wn0 + (lane & 7) + ((lane >> 4) << 3), "
                 "b_half = (lane >> 3) & 1;",
                 "mma_s8(acc[i][j], af[i], bf[j / 2][(j & 1) * 2], bf[j / 2][(j & 1) * 2 + 1]);",
                 "const int r = m0 + wm0 + i * 16 + g + (e >> 1) * 8;",
                 "const int c = n0 + wn0 + j * 8 + t * 2 + (e & 1);",
                 "if (++since_fold == FOLD_TILES && kt + 1 < KT) {"]:
        assert line in src, line
