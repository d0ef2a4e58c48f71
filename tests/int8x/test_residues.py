"""The residue and Garner kernels of 40_int8x.cu on the CPU: their 32-bit
reductions modulo p (i8x::mod_small, i8x::mod_f) emulated in IEEE float32
and int32 exactly as the kernels write them, against exact integer
remainders for every modulus and every value the kernels can meet (|x| <=
2^31: the scaled integers of moduli.budget and any INT32 plane); Garner's
digits through them against reference.garner; the launch grids; and the
source lines the emulation mirrors.  The GPU test (tests/gpu/test_int8x_gpu.py) compares the
kernel's planes with reference.py bit for bit."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sgemm.int8x import moduli as M
from sgemm.kernels import utility as U

SOURCE = Path(U.__file__).parent / "cuda" / "40_int8x.cu"


def mod_f(t: np.ndarray, p: int) -> np.ndarray:
    """i8x::mod_f, vectorised: int32 t with |t| < 2^24 -> [0, p)."""
    t = np.asarray(t, np.int32)
    assert np.abs(t.astype(np.int64)).max(initial=0) < 2 ** 24
    inv = np.float32(1.0) / np.float32(p)           # __frcp_rn: correctly rounded 1/p
    q = np.floor(t.astype(np.float32) * inv).astype(np.int32)   # __fmul_rn, floorf
    r = t - q * np.int32(p)
    r = np.where(r < 0, r + p, r)
    return np.where(r >= p, r - p, r)


def mod_small(x: np.ndarray, p: int) -> np.ndarray:
    """i8x::mod_small, vectorised: int64 x with |x| <= 2^31 -> [0, p)."""
    x = np.asarray(x, np.int64)
    hi = (x >> 16).astype(np.int32)                 # arithmetic shift, as (int)(x >> 16)
    lo = (x & 0xFFFF).astype(np.int32)
    return mod_f(hi * np.int32(65536 % p) + lo, p)


def garner_digits(planes, ms):
    """int8x_garner's digit loop, vectorised over elements."""
    inv = M.garner_inverses(ms)
    v = []
    for l, p in enumerate(ms):
        x = mod_small(planes[l], p)
        for q in range(l):
            x = mod_f((x - v[q]) * inv[l][q], p)
        v.append(np.where(x >= (p + 1) // 2, x - p, x))
    return v


def _values(rng, p: int) -> np.ndarray:
    """The range's ends, every neighbourhood where t or q changes regime
    (multiples of p and of 2^16 near the ends and near 0) and random values."""
    edges = [0, 1, -1, 2 ** 31, -2 ** 31, 2 ** 31 - 1, -2 ** 31 + 1, 2 ** 24, -2 ** 24,
             65535, 65536, -65536, -65537]
    near = []
    for c in (0, 2 ** 16, 2 ** 24, 2 ** 31 - 2 ** 16, -2 ** 31 + 2 ** 16):
        base = c - c % p
        near += [base + d * p + o for d in range(-3, 4) for o in (-1, 0, 1)]
    rand = rng.integers(-2 ** 31, 2 ** 31 + 1, 400_000)
    v = np.concatenate([np.array(edges + near, np.int64), rand])
    return v[np.abs(v) <= 2 ** 31]


@pytest.mark.parametrize("p", M.moduli(8))
def test_mod_small_is_the_exact_remainder(p):
    rng = np.random.default_rng(p)
    v = _values(rng, p)
    np.testing.assert_array_equal(mod_small(v, p), np.mod(v, p))


def test_mod_small_on_every_t_of_the_largest_hi():
    """|hi| = 2^15 with every lo: the largest t the kernel forms."""
    for p in M.moduli(8):
        for hi in (-2 ** 15, 2 ** 15 - 1):
            v = np.int64(hi) * 65536 + np.arange(65536, dtype=np.int64)
            v = v[np.abs(v) <= 2 ** 31]
            np.testing.assert_array_equal(mod_small(v, p), np.mod(v, p))


def test_a_plain_float_quotient_without_the_correction_is_wrong():
    """The corrections are needed: dropping them gives wrong remainders for
    some moduli (so the exhaustive test above could fail)."""
    v = np.arange(-2 ** 24, 2 ** 24, 97, dtype=np.int64)
    bad = 0
    for p in M.moduli(8):
        t = v.astype(np.int32)
        q = np.floor(t.astype(np.float32) * (np.float32(1) / np.float32(p))).astype(np.int32)
        bad += int(np.count_nonzero(t - q * p != np.mod(v, p)))
    assert bad > 0


def test_garner_digits_match_the_reference():
    """Random INT32 planes (the whole range: folded or exact GEMM output) and
    the planes of real products: the kernel's digit loop gives
    reference.garner's digits, so Horner's rule sees the same integers."""
    from sgemm.int8x import reference as R
    ms = M.moduli(8)
    rng = np.random.default_rng(2)
    planes = [rng.integers(-2 ** 31, 2 ** 31, 20000) for _ in ms]
    planes[0][:4] = [-2 ** 31, 2 ** 31 - 1, 0, -1]
    want, _ = R.garner([np.asarray(x, np.int64) for x in planes], ms)
    for got, w in zip(garner_digits(planes, ms), want):
        np.testing.assert_array_equal(got, w)
    a = rng.standard_normal((30, 700))
    b = rng.standard_normal((700, 20))
    parts = R.decompose(a, b, 8)
    for got, w in zip(garner_digits([c.ravel() for c in parts.c_res], ms), parts.digits):
        np.testing.assert_array_equal(got, w.ravel())


def test_garner_inner_step_stays_in_mod_f_range():
    """(x - v_q) inv_lq with x in [0, p_l), v_q in [-p_q/2, p_q/2) and inv_lq
    < p_l: below 2^24 for the 8 moduli (below 2^17 in fact)."""
    ms = M.moduli(8)
    inv = M.garner_inverses(ms)
    worst = max((ms[l] - 1 + ms[q] // 2) * inv[l][q] for l in range(8) for q in range(l))
    assert worst < 2 ** 17


def test_budget_keeps_scaled_integers_inside_mod_small_range():
    """The scaled integers are at most 2^bits in magnitude; every budget the
    8-moduli kernels can be given has bits <= 31, mod_small's range."""
    for k in (1, 2, 3, 64, 4096, 140000, 2 ** 20):
        bud = M.budget(8, k)
        assert max(bud.alpha, bud.beta) <= 31, bud


def test_grid_covers_rows_and_the_padded_columns():
    from sgemm.int8x import device as D
    assert D.garner_grid(1, 1) == (1, 1, 1)
    assert D.garner_grid(257, 3) == (2, 3, 1)
    assert D.garner_grid(8192, 100000) == (32, 65535, 1)      # the kernel loops past 65535
    assert D.RESIDUE_TILE == (32, 128)
    assert D.residue_grid(1, 16) == (1, 1, 1)
    assert D.residue_grid(33, 128) == (2, 1, 1)
    assert D.residue_grid(8192, 8192) == (256, 64, 1)
    assert D.residue_grid(1000, 4112) == (32, 33, 1)


def test_source_mirrors_the_emulation():
    """The emulation above repeats these lines of the kernel; if they
    change, this test names what to update."""
    src = SOURCE.read_text()
    for line in ["enum : int { TR = 32, TC = 128, PITCH = TC + 4, THREADS = 256 };",
                 "const int hi = (int)(x >> 16), lo = (int)(x & 0xffff);",
                 "return mod_f(hi * c16 + lo, p, inv);",
                 "int x = i8x::mod_small(R[l * plane + i + j * ldr], p[l], c16[l], invp[l]);",
                 "x = i8x::mod_f((x - v[q]) * inv[l * (l - 1) / 2 + q], p[l], invp[l]);",
                 "v[l] = x >= (p[l] + 1) / 2 ? x - p[l] : x;",
                 "for (int j = blockIdx.y; j < Nc; j += gridDim.y) {",
                 "const int q = (int)floorf(__fmul_rn((float)t, inv));",
                 "if (r < 0) r += p;",
                 "if (r >= p) r -= p;",
                 "c16[l] = 65536 % p[l];",
                 "inv[l] = __frcp_rn((float)p[l]);",
                 "invp[l] = __frcp_rn((float)p[l]);",
                 "const long long v = __double2ll_rn(ldexp((double)x[i], er));",
                 "tile[l][r][c] = (signed char)(m >= (p[l] + 1) / 2 ? m - p[l] : m);"]:
        assert line in src, line
