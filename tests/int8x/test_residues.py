"""The residue and Garner kernels of 40_int8x.cu on the CPU: their 32-bit
reductions modulo p (int8_common.cuh: i8c::mod_small, i8c::mod_f) emulated in IEEE float32
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
    """i8c::mod_f, vectorised: int32 t with |t| < 2^24 -> [0, p)."""
    t = np.asarray(t, np.int32)
    assert np.abs(t.astype(np.int64)).max(initial=0) < 2 ** 24
    inv = np.float32(1.0) / np.float32(p)           # __frcp_rn: correctly rounded 1/p
    q = np.floor(t.astype(np.float32) * inv).astype(np.int32)   # __fmul_rn, floorf
    r = t - q * np.int32(p)
    r = np.where(r < 0, r + p, r)
    return np.where(r >= p, r - p, r)


def mod_small(x: np.ndarray, p: int) -> np.ndarray:
    """i8c::mod_small, vectorised: int64 x with |x| <= 2^31 -> [0, p)."""
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


def mod_u(t: np.ndarray, p: int) -> np.ndarray:
    """i8x::mod_u: t - umulhi(t, ceil(2^32 / p)) p for 0 <= t < 2^24."""
    t = np.asarray(t, np.int64)
    assert t.min(initial=0) >= 0 and t.max(initial=0) < 2 ** 24
    q = (t.astype(np.uint64) * np.uint64(M.barrett(p))) >> np.uint64(32)
    return t - q.astype(np.int64) * p


def garner_bytes(planes, ms):
    """int8x_garner's digits from byte planes (r_l = C'_l mod p_l in [0, p)):
    the weighted-sum form with its offsets, as the kernel writes it."""
    w, winv = M.garner_weights(ms)
    v = []
    for l, p in enumerate(ms):
        t = np.asarray(planes[l], np.int64) + M.garner_offset(p)
        for q in range(l):
            t = t - v[q] * w[l][q]
        assert t.min() >= 0 and t.max() < 2 ** 21        # the kernel's bound
        x = mod_u(mod_u(t, p) * winv[l], p)
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


@pytest.mark.parametrize("p", M.moduli(8))
def test_barrett_quotient_is_exact_below_2_24(p):
    """Every t < 2^21 (the digit sums, offsets included) and < 2^16 (digit
    times Winv), and the top of the claimed range, reduce exactly."""
    t = np.arange(2 ** 21, dtype=np.int64)
    np.testing.assert_array_equal(mod_u(t, p), t % p)
    top = np.arange(2 ** 24 - 2 ** 16, 2 ** 24, dtype=np.int64)
    np.testing.assert_array_equal(mod_u(top, p), top % p)


def test_barrett_fails_past_its_range():
    """The bound is not slack: for p = 233 some t of 2^32 / 233 or more gives
    a quotient one too large (the test above could not pass by accident)."""
    p = 233
    t = np.arange(2 ** 32 // p, 2 ** 32 // p + 2 ** 20, dtype=np.int64)
    q = (t.astype(np.uint64) * np.uint64(M.barrett(p))) >> np.uint64(32)
    assert np.any(q.astype(np.int64) != t // p)


def test_byte_plane_garner_matches_the_reference_digits():
    """Byte planes (C'_l mod p_l) of random INT32 planes and of real
    products: the kernel's weighted-sum digits are reference.garner's."""
    from sgemm.int8x import reference as R
    ms = M.moduli(8)
    rng = np.random.default_rng(4)
    planes = [rng.integers(-2 ** 31, 2 ** 31, 20000) for _ in ms]
    planes[0][:4] = [-2 ** 31, 2 ** 31 - 1, 0, -1]
    want, _ = R.garner([np.asarray(x, np.int64) for x in planes], ms)
    got = garner_bytes([np.mod(x, p) for x, p in zip(planes, ms)], ms)
    for g, w_ in zip(got, want):
        np.testing.assert_array_equal(g, w_)
    a = rng.standard_normal((30, 700))
    b = rng.standard_normal((700, 20))
    parts = R.decompose(a, b, 8)
    got = garner_bytes([np.mod(c.ravel(), p) for c, p in zip(parts.c_res, ms)], ms)
    for g, w_ in zip(got, parts.digits):
        np.testing.assert_array_equal(g, w_.ravel())


def sym_residue(v: np.ndarray, p: int) -> np.ndarray:
    """i8x::sym_residue in uint32/int32 arithmetic: int32 v -> the symmetric
    residue in [-(p // 2), -(p // 2) + p)."""
    v = np.asarray(v, np.int64)
    assert v.min(initial=0) >= -2 ** 31 and v.max(initial=0) < 2 ** 31
    u = (v + 2 ** 31).astype(np.uint64)                  # the sign bit flipped
    q = (u * np.uint64(M.residue_multiplier(p))) >> np.uint64(32)     # __umulhi
    r = (u - q * np.uint64(p)).astype(np.int64)
    assert r.min(initial=0) >= 0 and r.max(initial=0) < 2 * p     # the comment's claim
    lo = -(p // 2)
    s = r - M.residue_shift(p)
    s = np.where(s < lo, s + p, s)
    return np.where(s >= lo + p, s - p, s)


def scaled(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """i8x::scaled with the kernels' s1 = 2^min(e, 127), s2 = 2^(e - 127) or
    1: two float32 products (IEEE, subnormals kept, as __fmul_rn), then
    round half to even (__float2int_rn)."""
    x = np.asarray(x, np.float32)
    e = np.asarray(e, np.int64)
    s1 = np.ldexp(np.float32(1), np.clip(e, -126, 127)).astype(np.float32)
    s2 = np.ldexp(np.float32(1), np.clip(np.where(e > 127, e - 127, 0), -126, 127))
    with np.errstate(under="ignore"):
        y = (x * s1) * s2.astype(np.float32)
    assert y.dtype == np.float32 and np.abs(y).max(initial=0) < 2 ** 31
    return np.rint(y).astype(np.int64)


@pytest.mark.parametrize("p", M.moduli(8))
def test_sym_residue_is_the_reference_residue(p):
    from sgemm.int8x import reference as R
    rng = np.random.default_rng(p + 7)
    v = _values(rng, p)
    v = v[v < 2 ** 31]                                   # int32: |X'| < 2^31
    np.testing.assert_array_equal(sym_residue(v, p), R.residues(v, p))


def test_sym_residue_needs_its_correction():
    """The quotient is one short for some u (r in [p, 2p)), so the second
    fix-up step is needed (and the test above could fail without it)."""
    v = np.arange(-2 ** 31, 2 ** 31 - 2 ** 20, 2 ** 20 - 3, dtype=np.int64)
    short = 0
    for p in M.moduli(8):
        u = (v + 2 ** 31).astype(np.uint64)
        q = (u * np.uint64(M.residue_multiplier(p))) >> np.uint64(32)
        short += int(np.count_nonzero(u - q * np.uint64(p) >= np.uint64(p)))
    assert short > 0


def _wide_rows(rng, rows, cols):
    """Rows spanning float32's whole range: subnormal rows, rows near the
    top, zero rows, subnormal entries inside normal rows, exact halves."""
    x = rng.standard_normal((rows, cols)).astype(np.float64)
    x *= np.exp2(rng.integers(-150, 128, (rows, 1)).astype(np.float64))
    x *= np.exp2(rng.integers(-40, 1, (rows, cols)).astype(np.float64))
    x[0] = 0.0
    x[1] = rng.integers(-3, 4, cols) * 2.0 ** -149          # subnormal multiples
    x[2] = (rng.integers(-2 ** 20, 2 ** 20, cols) + 0.5) * 2.0 ** -40   # halves after scaling
    x[3, :] = 3.4e38 * np.sign(rng.standard_normal(cols))
    x[4, 0], x[4, 1:] = 1.0, 1e-45
    with np.errstate(over="ignore", under="ignore"):
        return x.astype(np.float32)


@pytest.mark.parametrize("bits", [2, 13, 25, 31])
def test_scaled_integers_equal_the_reference(bits):
    """Two float32 products and one rounding give reference.to_integers'
    rint(x 2^e) exactly, for every exponent the budget allows."""
    from sgemm.int8x import reference as R
    rng = np.random.default_rng(bits)
    x = _wide_rows(rng, 400, 300)
    x = x[np.isfinite(x).all(axis=1)]
    e = R.exponents(x, 1, bits)
    assert e.max() > 127 + bits // 2 and e.min() < -90           # both branches
    got = scaled(x, e[:, None])
    np.testing.assert_array_equal(got, R.to_integers(x, e, 1))
    assert np.abs(got).max() <= 2 ** bits                 # rounding may reach 2^bits ...
    assert np.abs(got).max() < 2 ** 31                    # ... but never 2^31 (int32)


def test_one_product_would_overflow_the_scale():
    """2^e itself leaves float32 for the subnormal rows: the split is needed."""
    from sgemm.int8x import reference as R
    x = np.array([[1e-45, 3e-45]], np.float32)
    assert R.exponents(x, 1, 25)[0] > 127


def horner_split(digits, ms, hi: int = 4):
    """int8x_garner's Horner: the top `hi` digits in int32 (checked to stay
    inside it), then float64 steps without contraction, then times
    2^-(mu + nu) -- as the kernel writes it."""
    n = len(ms)
    yi = np.asarray(digits[-1], np.int64)
    for l in range(n - 2, n - hi - 1, -1):
        yi = np.asarray(digits[l], np.int64) + ms[l] * yi
        assert np.abs(yi).max() < 2 ** 31
    y = yi.astype(np.float64)
    for l in range(n - hi - 1, -1, -1):
        y = np.asarray(digits[l], np.float64) + np.float64(ms[l]) * y    # two roundings
    return y


def test_horner_split_equals_the_reference_horner():
    """Random digits, and every digit at either end of its range (the
    largest magnitudes the int32 steps meet), give reference.garner's
    float64 value bit for bit."""
    from sgemm.int8x import reference as R
    ms = M.moduli(8)
    rng = np.random.default_rng(9)
    digits = [rng.integers(-(p // 2), (p + 1) // 2, 50000) for p in ms]
    for l, p in enumerate(ms):                     # the range's ends
        digits[l][:2] = [-(p // 2), (p - 1) // 2]
    value = np.zeros(50000, object)                # the integers the digits spell, exactly
    w = 1
    for l, p in enumerate(ms):
        value = value + digits[l].astype(object) * w
        w *= p
    c_res = [np.array([int(v) % p for v in value], np.int64) for p in ms]
    got_digits, want = R.garner(c_res, ms)
    for g, d in zip(got_digits, digits):
        np.testing.assert_array_equal(g, d)        # the digits are the ones spelled
    np.testing.assert_array_equal(horner_split(digits, ms), want)
    # the bound for any 4 pairwise coprime moduli <= 256: half their product < 2^31
    assert 256 * 255 * 253 * 251 // 2 < 2 ** 31
    # the scale: mu + nu in [-252, 358] keeps 2^-(mu + nu) a normal double
    assert 1 <= 1023 - 358 and 1023 + 252 <= 2046


def test_kernel_constants_layout():
    """The int array the kernels read: p, W row by row, Winv, Barrett
    multipliers (int32 bits), offsets; Garner's arithmetic stays exact."""
    ms = M.moduli(8)
    flat = M.kernel_constants(ms)
    w, winv = M.garner_weights(ms)
    assert len(flat) == 6 * 8 + 28
    assert flat[:8] == list(ms) and flat[8:36] == [x for r in w for x in r]
    assert flat[36:44] == list(winv) and winv[0] == 1
    assert [x & 0xFFFFFFFF for x in flat[44:52]] == [-(-2 ** 32 // p) for p in ms]
    assert all(o % p == 0 and 2 ** 19 <= o < 2 ** 19 + p for o, p in zip(flat[52:60], ms))
    assert [x & 0xFFFFFFFF for x in flat[60:68]] == [(2 ** 32 - 1) // p for p in ms]
    assert flat[68:76] == [M.residue_shift(p) for p in ms]
    base = 4 * 8 + 8 * 7 // 2                      # i8x::load_mod's BASE
    assert base == 60
    assert all(-2 ** 31 <= x < 2 ** 31 for x in flat)
    # the digit sum: 7 terms of |v| <= 128 times W < 256, inside the offset
    assert 7 * 128 * 255 < 2 ** M.GARNER_OFFSET_BITS
    assert max(ms) * max(winv) < 2 ** 24


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
    assert D.garner_grid(257, 3) == (1, 1, 1)
    assert D.garner_grid(1025, 3) == (2, 1, 1)
    assert D.garner_grid(257, 5) == (1, 2, 1)
    assert D.garner_grid(8192, 8192) == (8, 2048, 1)
    assert D.garner_grid(8192, 400000) == (8, 65535, 1)      # the kernel loops past it
    assert D.RESIDUE_TILE == (32, 128) and D.ROWMAX_COLS == 256
    assert D.rowmax_grid(1, 0) == (1, 1, 1)
    assert D.rowmax_grid(129, 257) == (2, 2, 1)
    assert D.rowmax_grid(128, 256) == (1, 1, 1)
    assert D.rowmax_grid(8192, 8192) == (64, 32, 1)
    assert D.route_for(1, 8192) == "tiles" and D.route_for(8192, 1) == "rows"
    assert D.route_for(1, 1) == "rows" and D.route_for(3, 5) == "rows"
    assert D.residue_grid(1, 16) == (1, 1, 1)
    assert D.residue_grid(33, 128) == (1, 2, 1)
    assert D.residue_grid(8192, 8192) == (64, 256, 1)
    assert D.residue_grid(1000, 4112) == (33, 32, 1)


def test_source_mirrors_the_emulation():
    """The emulation above repeats these lines of the kernel; if they
    change, this test names what to update."""
    src = SOURCE.read_text() + (SOURCE.parent / "int8_common.cuh").read_text()
    for line in ["enum : int { RT = 256, RCACHE = 16, TR = 32, TC = 128, PITCH = TC + 4, "
                 "THREADS = 256,",
                 "const int hi = (int)(x >> 16), lo = (int)(x & 0xffff);",
                 "return mod_f(hi * c16 + lo, p, inv);",
                 "return t - (int)__umulhi((unsigned)t, bm) * p;",
                 "int t = (int)(r4 >> (8 * e) & 0xffu) + off[l];",
                 "for (int q = 0; q < l; ++q) t -= v[q][e] * w[l * (l - 1) / 2 + q];",
                 "const int x = i8x::mod_u(i8x::mod_u(t, p[l], bm[l]) * winv[l], p[l], bm[l]);",
                 "v[l][e] = x >= (p[l] + 1) / 2 ? x - p[l] : x;",
                 "winv[l] = mods[N + NW + l];",
                 "bm[l] = (unsigned)mods[2 * N + NW + l];",
                 "off[l] = mods[3 * N + NW + l];",
                 "for (int q = 0; q < NW; ++q) w[q] = mods[N + q];",
                 "for (int j = blockIdx.y * 4 + threadIdx.x / 64; j < Nc; j += gridDim.y * 4) {",
                 "const int i0 = (blockIdx.x * 64 + threadIdx.x % 64) * 16;",
                 "const int q = (int)floorf(__fmul_rn((float)t, inv));",
                 "if (r < 0) r += p;",
                 "if (r >= p) r -= p;",
                 # the residue kernels: scaling and sym_residue (emulated above)
                 "return __int_as_float((min(max(k, -126), 127) + 127) << 23);",
                 "return m > 0.0f ? bits - ex : 0;",
                 "return __float2int_rn(__fmul_rn(__fmul_rn(x, s1), s2));",
                 "const float s1 = pow2f(er), s2 = pow2f(er > 127 ? er - 127 : 0);",
                 "enum : int { BASE = 4 * N + N * (N - 1) / 2 };",
                 "m.mf = (unsigned)mods[BASE + l];",
                 "m.dd = mods[BASE + N + l];",
                 "m.lo = -(int)(m.p / 2);",
                 "const unsigned u = (unsigned)v ^ 0x80000000u;",
                 "const unsigned r = u - __umulhi(u, m.mf) * m.p;",
                 "int s = (int)r - m.dd;",
                 "s = s < m.lo ? s + (int)m.p : s;",
                 "s = s >= m.lo + (int)m.p ? s - (int)m.p : s;",
                 "return (unsigned)(a & 0xff) | (unsigned)(b & 0xff) << 8 | "
                 "(unsigned)(c & 0xff) << 16 |",
                 # Garner's Horner and scale (horner_split)
                 "HI = N < 4 ? N : 4 };",
                 "for (int l = N - 2; l >= N - HI; --l) yi = v[l][e] + p[l] * yi;",
                 "for (int l = N - HI - 1; l >= 0; --l)",
                 "y = __dadd_rn((double)v[l][e], __dmul_rn((double)p[l], y));",
                 "y = __dmul_rn(y, __longlong_as_double((long long)(1023 - mu[i + e] - nj) "
                 "<< 52));"]:
        assert line in src, line
