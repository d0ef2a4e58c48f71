"""The residue and Garner kernels of 40_int8x.cu on the CPU: their 32-bit
reductions modulo p (int8_common.cuh: i8c::mod_small, i8c::mod_f) emulated in IEEE float32
and int32 exactly as the kernels write them, against exact integer
remainders for every modulus and every value the kernels can meet (|x| <=
2^31: the scaled integers of moduli.budget and any INT32 plane); the
reconstruction's 64-bit CRT sum against exact integers and reference.garner;
the launch grids; and the source lines the emulation mirrors.  The GPU test (tests/gpu/test_int8x_gpu.py) compares the
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


def sym_residue(v: np.ndarray, p: int) -> np.ndarray:
    """i8x::sym_residue_of in uint32/int32 arithmetic: int32 v -> the symmetric
    residue in [-(p // 2), -(p // 2) + p): u = v + 2^31, then ((u - 128 + E)
    mod p) + lo with E = moduli.residue_offset(p), the unsigned sum kept in
    32 bits (asserted: the kernel's claim for |v| <= 2^31 - 128)."""
    v = np.asarray(v, np.int64)
    assert v.min(initial=0) >= -2 ** 31 + 128 and v.max(initial=0) <= 2 ** 31 - 128
    u = v + 2 ** 31                                      # the sign bit flipped
    w = u - 128 + M.residue_offset(p)
    assert w.min(initial=0) >= 0 and w.max(initial=0) < 2 ** 32     # no wrap in uint32
    return (w.astype(np.uint64) % np.uint64(p)).astype(np.int64) - p // 2


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
    v = v[np.abs(v) <= 2 ** 31 - 128]                    # scaled(): |X'| <= 2^31 - 128
    v = np.concatenate([v, np.arange(-2 ** 31 + 128, -2 ** 31 + 128 + 4 * p),
                        np.arange(2 ** 31 - 128 - 4 * p, 2 ** 31 - 127)])
    np.testing.assert_array_equal(sym_residue(v, p), R.residues(v, p))


def test_sym_residue_needs_the_scaled_bound():
    """u - 128 + E stays below 2^32 because |X'| <= 2^31 - 128 (scaled()'s
    largest float below 2^31); at X' = 2^31 - 1 it would wrap for some
    modulus, so the bound is what makes one unsigned division enough."""
    assert any((2 ** 31 - 1) + 2 ** 31 - 128 + M.residue_offset(p) >= 2 ** 32
               for p in M.moduli(8))
    # and the emulation (which asserts the 32-bit range) takes the bound's ends
    for p in M.moduli(8):
        sym_residue(np.array([-2 ** 31 + 128, 2 ** 31 - 128]), p)


def test_kernel_moduli_are_the_hosts():
    """i8x::modulus(l) in 40_int8x.cu is moduli.moduli(8), in order: the
    residue kernels divide by these constants, the INT8 GEMMs and Garner
    read the same moduli from kernel_constants."""
    import re
    body = SOURCE.read_text()
    body = body[body.index("constexpr unsigned modulus(int l)"):]
    body = body[:body.index("}")]
    table = [int(x) for x in re.findall(r"\b(\d+)u\b", body)]
    assert tuple(table) == M.moduli(8)


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


def sq_units(x: np.ndarray) -> np.ndarray:
    """i8x::sq_scale and sq_unit per entry of each row, in float32 as the
    kernel computes them: y = |x| 2^(10 - E) by two products (__fmul_rn),
    y * y rounded up (__fmul_ru: the float64 square is exact, then the next
    float32 up where rounding to nearest went down), ceil (__float2uint_ru),
    at least 1 for a nonzero x."""
    x = np.abs(np.asarray(x, np.float32))
    big = x.max(axis=1).view(np.uint32) >> 23
    e = 10 + 127 - big.astype(np.int64)
    q1 = np.ldexp(np.float32(1), np.clip(np.minimum(e, 127), -126, 127)).astype(np.float32)
    q2 = np.ldexp(np.float32(1), np.where(e > 127, e - 127, 0)).astype(np.float32)
    with np.errstate(under="ignore"):
        y = (x * q1[:, None]) * q2[:, None]
    assert y.dtype == np.float32 and y.max(initial=0) < 2 ** 11
    sq = y.astype(np.float64) ** 2
    f = sq.astype(np.float32)
    f = np.where(f.astype(np.float64) < sq, np.nextafter(f, np.float32(np.inf)), f)
    return np.maximum(np.ceil(f.astype(np.float64)), (x != 0).astype(np.float64))


def norm_gap(s: int) -> int:
    """i8x::norm_gap: ((64 - clz(S - 1) + 1) >> 1) - 10, clz of a uint64."""
    v = (int(s) - 1) & (2 ** 64 - 1)
    return ((v.bit_length() + 1) >> 1) - 10


def test_norm_sums_and_gaps_equal_the_reference():
    """The kernels' per-entry units (float32, rounded up) sum to
    reference.norm_sums' S on rows over float32's whole range, and their
    gap is reference.gap's; S bounds the row's squared norm."""
    from sgemm.int8x import reference as R
    rng = np.random.default_rng(11)
    x = _wide_rows(rng, 400, 300)
    x = x[np.isfinite(x).all(axis=1)]
    e, s = R.norm_sums(x, 1)
    got = sq_units(x)
    np.testing.assert_array_equal(got.sum(axis=1).astype(np.int64), s)
    assert [norm_gap(v) for v in s if v] == [R.gap(v) for v in s if v]
    live = s > 0
    sq = (x.astype(np.float64) ** 2).sum(axis=1)
    assert (sq[live] <= s[live] * np.ldexp(1.0, 2 * e[live] - 20)).all()
    assert (got[live] <= 4 * 2 ** 20).all()             # 32-bit terms, 4 of them < 2^24


@pytest.mark.parametrize("bits", [18, 25, 31])
def test_scaled_integers_equal_the_reference(bits):
    """Two float32 products and one rounding give reference.to_integers'
    rint(x 2^e) exactly, for every exponent the kernels take (bits in
    [18, 31], device.convert)."""
    from sgemm.int8x import reference as R
    rng = np.random.default_rng(bits)
    x = _wide_rows(rng, 400, 300)
    x = x[np.isfinite(x).all(axis=1)]
    e = R.exponents(x, 1, bits)
    assert e.max() > 127 + bits // 2 and e.min() < -90           # both branches
    got = scaled(x, e[:, None])
    np.testing.assert_array_equal(got, R.to_integers(x, e, 1))
    assert np.abs(got).max() <= min(2 ** bits, 2 ** 31 - 128)   # norm bound, largest entry


def test_one_product_would_overflow_the_scale():
    """2^e itself leaves float32 for the subnormal rows: the split is needed."""
    from sgemm.int8x import reference as R
    x = np.array([[1e-45, 3e-45]], np.float32)
    assert R.exponents(x, 1, 25)[0] > 127


def crt_bytes(planes, ms):
    """int8x_garner's C' from byte planes (r_l = C'_l mod p_l in [0, p)), as
    the kernel writes it: sum_l r_l E_l modulo 2^64, the quotient q from an
    FP32 sum of r_l F_l (each FMA emulated by the float64 sum of the exact
    product, rounded to float32: the bound is what this checks, not the
    FP32 bits), rounded to nearest, and C' = sum - q P as int64.  Returns
    (C', the FP32 sum, the exact quotient sum_l r_l E_l / P)."""
    flat = M.kernel_constants(ms)
    n = len(ms)
    words = lambda i: (flat[i] & 0xFFFFFFFF) | (flat[i + 1] & 0xFFFFFFFF) << 32  # noqa: E731
    e = [words(n + 2 * l) for l in range(n)]
    f = np.array(flat[3 * n:4 * n], np.int32).view(np.float32)
    P = words(4 * n)
    r = [np.asarray(x, np.uint64) for x in planes]
    acc = np.zeros(r[0].shape, np.uint64)
    qs = np.zeros(r[0].shape, np.float32)
    with np.errstate(over="ignore"):
        for l in range(n):
            acc = acc + r[l] * np.uint64(e[l])                 # modulo 2^64
            qs = (r[l].astype(np.float64) * np.float64(f[l]) + qs).astype(np.float32)
        q = np.rint(qs).astype(np.int64)
        c = (acc - q.astype(np.uint64) * np.uint64(P)).view(np.int64)
    exact = sum(r[l].astype(object) * e[l] for l in range(n)) / P
    return c, qs, exact


def test_crt_gives_the_exact_integer_over_the_whole_budget():
    """Every C' the budget allows (|C'| < 2^(bitlen(P/2) - 1), its ends
    included) and the residues of real products: int8x_garner's 64-bit CRT
    sum gives C' exactly, and its float64 is reference.garner's, bit for bit."""
    from sgemm.int8x import reference as R
    ms = M.moduli(8)
    P = M.product(ms)
    top = 2 ** ((P // 2).bit_length() - 1) - 1
    rng = np.random.default_rng(4)
    vals = [int(x) for x in rng.integers(-top, top, 20000, dtype=np.int64)]
    vals += [top, -top, 0, 1, -1, top // 3, -(top // 7)]
    planes = [np.array([v % p for v in vals], np.int64) for p in ms]
    got, qs, exact = crt_bytes(planes, ms)
    np.testing.assert_array_equal(got, np.array(vals, np.int64))
    assert max(abs(float(a) - float(b)) for a, b in zip(qs, exact)) < 2e-3
    _, want = R.garner(planes, ms)
    np.testing.assert_array_equal(got.astype(np.float64), want)
    a = rng.standard_normal((30, 700))
    b = rng.standard_normal((700, 20))
    parts = R.decompose(a, b, 8)
    got, _, _ = crt_bytes([np.mod(c.ravel(), p) for c, p in zip(parts.c_res, ms)], ms)
    _, want = R.garner(parts.c_res, ms)
    np.testing.assert_array_equal(got.astype(np.float64), want.ravel())


def test_crt_quotient_margin():
    """The FP32 quotient rounds right when the exact one is at least
    crt_margin from a half-integer: 0.16 for 8 moduli, against a sum
    error below 2e-3; past 8 moduli P passes 2^64 and the constants refuse."""
    assert M.crt_margin(M.moduli(8)) > 0.16
    with pytest.raises(ValueError, match="at most 8 moduli"):
        M.kernel_constants(M.moduli(9))


def test_kernel_constants_layout():
    """The int array the kernels read: p, then int8x_garner's E_l (two
    words each), F_l = E_l / P as float bits, and P (two words)."""
    ms = M.moduli(8)
    flat = M.kernel_constants(ms)
    P = M.product(ms)
    assert len(flat) == 4 * 8 + 2
    assert flat[:8] == list(ms)
    e = [(flat[8 + 2 * l] & 0xFFFFFFFF) | (flat[9 + 2 * l] & 0xFFFFFFFF) << 32 for l in range(8)]
    assert e == list(M.crt_weights(ms))
    assert all(x % p == 1 and all(x % q == 0 for q in ms if q != p) for x, p in zip(e, ms))
    f = np.array(flat[24:32], np.int32).view(np.float32)
    np.testing.assert_array_equal(f, np.array([x / P for x in e], np.float32))
    assert (flat[32] & 0xFFFFFFFF) | (flat[33] & 0xFFFFFFFF) << 32 == P
    assert all(-2 ** 31 <= x < 2 ** 31 for x in flat)


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
    for line in ["enum : int { RT = 256, RCACHE = 16, PUT_UNROLL = 4, TR = 32, TC = 128, PITCH = TC + 4,",
                 "const int hi = (int)(x >> 16), lo = (int)(x & 0xffff);",
                 "return mod_f(hi * c16 + lo, p, inv);",
                 "enum : int { BASE = N };",
                 "e[l] = i8x::u64_at(mods + BASE + 2 * l);",
                 "f[l] = __int_as_float(mods[BASE + 2 * N + l]);",
                 "const unsigned long long P = i8x::u64_at(mods + BASE + 3 * N);",
                 "acc += (unsigned long long)r * e[l];",
                 "const long long q = __float2ll_rn(qs);",
                 "const long long cp = (long long)(acc - (unsigned long long)q * P);",
                 "double y = __ll2double_rn(cp);",
                 "for (int j = blockIdx.y * 4 + threadIdx.x / 64; j < Nc; j += gridDim.y * 4) {",
                 "const int i0 = (blockIdx.x * 64 + threadIdx.x % 64) * 16;",
                 "const int q = (int)floorf(__fmul_rn((float)t, inv));",
                 "if (r < 0) r += p;",
                 "if (r >= p) r -= p;",
                 # the residue kernels: scaling and sym_residue (emulated above)
                 "return __int_as_float((min(max(k, -126), 127) + 127) << 23);",
                 "return maxbits != 0u ? min(bits - norm_gap(S), 30) - ((int)(maxbits >> 23) - 127) "
                 ": 0;",
                 "return ((64 - __clzll((long long)(S - 1ull)) + 1) >> 1) - 10;",
                 "const int e = 10 + 127 - (int)(maxbits >> 23);     // in [-118, 137]",
                 "const float y = __fmul_rn(__fmul_rn(fabsf(x), q1), q2);",
                 "return max(__float2uint_ru(__fmul_ru(y, y)), (__float_as_uint(x) << 1) != 0u ? "
                 "1u : 0u);",
                 "return __float2int_rn(__fmul_rn(__fmul_rn(x, s1), s2));",
                 "const float s1 = pow2f(er), s2 = pow2f(er > 127 ? er - 127 : 0);",
                 "constexpr int LO = -(int)(P / 2);",
                 "constexpr long long T = 128LL - 2147483648LL - LO;",
                 "constexpr unsigned E = (unsigned)(((T % (long long)P) + (long long)P) "
                 "% (long long)P);",
                 "return (int)((u + (E - 128u)) % P) + LO;",
                 "const unsigned u = (unsigned)v ^ 0x80000000u;",
                 "return (unsigned)(a & 0xff) | (unsigned)(b & 0xff) << 8 | "
                 "(unsigned)(c & 0xff) << 16 |",
                 # the reconstruction's scale (reference.gemm's ldexp)
                 "y = __dmul_rn(y, __longlong_as_double((long long)(1023 - mu[i + el] - nj) "
                 "<< 52));"]:
        assert line in src, line
