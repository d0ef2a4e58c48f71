"""The integer engine's host arithmetic (sgemm/int8x): moduli, the
exactness budget, Garner's reconstruction, and the NumPy emulation of the
whole pipeline against float64 -- all on the CPU."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sgemm.int8x import moduli as M
from sgemm.int8x import reference as R


@pytest.mark.parametrize("n", [1, 4, 8, 12])
def test_moduli_are_pairwise_coprime_bytes(n):
    ms = M.moduli(n)
    assert len(ms) == n and list(ms) == sorted(ms, reverse=True) and ms[0] == 256
    assert all(2 <= p <= 256 for p in ms)
    assert all(math.gcd(p, q) == 1 for i, p in enumerate(ms) for q in ms[i + 1:])
    lo, hi = M.mixed_radix_range(ms)
    assert hi - lo + 1 == M.product(ms) and lo < 0 < hi


@pytest.mark.parametrize("n", [4, 6, 8, 10, 12])
@pytest.mark.parametrize("k", [1, 2, 63, 64, 4096, 65537, M.INT32_K_MAX])
def test_budget_keeps_the_product_inside_the_reconstructible_range(n, k):
    free = (M.product(M.moduli(n)) // 2).bit_length() - 1
    try:
        b = M.budget(n, k)
    except ValueError:
        assert math.sqrt(k) / 2 > 2 ** (free // 2 - M.ROUNDING_SLACK)   # rounding too large
        return
    lo, hi = M.mixed_radix_range(M.moduli(n))
    # |C'_ij| <= ||A'_i.|| ||B'_.j|| (Cauchy-Schwarz), each norm at most its
    # 2^bits plus the rounding of k entries, sqrt(k)/2
    worst = (2 ** b.alpha + math.sqrt(k) / 2) * (2 ** b.beta + math.sqrt(k) / 2)
    P = M.product(M.moduli(n))
    assert worst < min(-lo, hi) and worst < (1 + 2 ** -9) * 2 ** ((P // 2).bit_length() - 1)
    assert worst / P <= 0.5 - M.crt_margin(M.moduli(n))      # the quotient's margin holds
    assert 0 <= b.alpha - b.beta <= 1


def test_the_norm_scaling_bounds_every_row_and_keeps_the_product_exact():
    rng = np.random.default_rng(7)
    # rows that reach the bound's extremes: all entries equal (||x|| = sqrt(k)
    # max), one entry alone, subnormal maxima, a row at the float's top binade
    k = 300
    a = np.stack([np.full(k, 1.9999999, np.float32), np.eye(1, k, 5, np.float32)[0] * 3,
                  np.full(k, 2.0 ** -140, np.float32), rng.standard_normal(k).astype(np.float32),
                  np.full(k, 3e38, np.float32), np.zeros(k, np.float32)])
    for n in (7, 8):
        bud = M.budget(n, k)
        e, d = R.norm_bounds(a, 1)
        mu = R.exponents(a, 1, bud.alpha)
        ai = R.to_integers(a, mu, 1)
        norms = np.sqrt((a.astype(np.float64) ** 2).sum(axis=1))
        live = norms > 0
        assert (norms[live] <= np.ldexp(1.0, e + d)[live]).all()
        assert (np.sqrt((ai.astype(np.float64) ** 2).sum(axis=1)) <=
                2.0 ** bud.alpha + math.sqrt(k) / 2).all()
        assert (np.abs(ai) <= 2 ** 31 - 128).all()              # the residue kernels' range
        # the largest entry's bits: min(alpha - D, ENTRY_BITS), the cap reached
        # only where the norm bound is close to the largest entry
        bits = np.minimum(bud.alpha - d, M.ENTRY_BITS)
        assert (mu[live] == (bits - e)[live]).all()
        assert mu[~live].tolist() == [0]
        parts = R.decompose(a, a.T.copy(), n)
        lo, hi = M.mixed_radix_range(parts.ms)
        exact = ai @ R.to_integers(a.T.copy(), R.exponents(a.T.copy(), 0, bud.beta), 0)
        assert exact.min() >= lo and exact.max() <= hi


def test_int8_products_are_exact_in_int32_up_to_the_limit():
    assert M.INT32_K_MAX * 128 * 128 < 2 ** 31 <= (M.INT32_K_MAX + 1) * 128 * 128


def test_residues_fit_int8_and_are_congruent():
    x = np.array([-(2 ** 40) - 3, -129, -128, -1, 0, 1, 127, 128, 255, 2 ** 40 + 7], np.int64)
    for p in M.moduli(10):
        r = R.residues(x, p)
        assert r.dtype == np.int8
        assert all((int(xi) - int(ri)) % p == 0 for xi, ri in zip(x, r))
        assert all(-(p // 2) <= int(ri) < (p + 1) // 2 for ri in r)


def test_garner_rebuilds_every_integer_of_the_range():
    ms = M.moduli(8)
    lo, hi = M.mixed_radix_range(ms)
    rng = np.random.default_rng(1)
    xs = [lo, hi, 0, 1, -1, 2 ** 62, -(2 ** 62)] + [int(v) for v in rng.integers(lo, hi, 200,
                                                                                dtype=np.int64)]
    c_res = [np.array([x % p for x in xs], np.int64) for p in ms]
    digits, approx = R.garner(c_res, ms)
    for i, x in enumerate(xs):
        exact, w = 0, 1
        for d, p in zip(digits, ms):
            exact += int(d[i]) * w
            w *= p
        assert exact == x
        assert approx[i] == pytest.approx(float(x), rel=2 ** -50, abs=0.0)


def test_pipeline_is_exact_integer_arithmetic():
    """Everything between the scaling and the float conversion is exact: the
    digits rebuild A' B', which int64 holds (|A' B'| <= 2^62)."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((17, 300)).astype(np.float32)
    b = rng.standard_normal((300, 9)).astype(np.float32)
    parts = R.decompose(a, b, 8)
    exact = parts.a_int @ parts.b_int
    rebuilt = np.zeros_like(exact)
    w = 1
    for d, p in zip(parts.digits, parts.ms):
        rebuilt += d * w
        w *= p
    np.testing.assert_array_equal(rebuilt, exact)
    assert np.abs(parts.a_int).max() <= 2 ** parts.budget.alpha
    assert np.abs(parts.b_int).max() <= 2 ** parts.budget.beta
    for ar, br, p in zip(parts.a_res, parts.b_res, parts.ms):
        assert ar.dtype == br.dtype == np.int8
        np.testing.assert_array_equal(np.mod(ar.astype(np.int64) - parts.a_int, p), 0)


def _rel(x, ref):
    return float(np.linalg.norm(x - ref) / np.linalg.norm(ref))


def _fp32_sequential_error(a, b, ref):
    """A plain FP32 dot product (one sequential chain, as one GPU thread's
    accumulation): the error an FP32 GEMM makes on this data."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for p in range(a.shape[1]):
        acc += np.outer(a[:, p], b[p, :]).astype(np.float32)
    return _rel(acc.astype(np.float64), ref)


@pytest.mark.parametrize("k", [64, 1024, 4096])
def test_eight_moduli_beat_fp32_on_normal_data(k):
    rng = np.random.default_rng(k)
    a = rng.standard_normal((40, k)).astype(np.float32)
    b = rng.standard_normal((k, 24)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = _rel(R.gemm(a, b, n_moduli=8), ref)
    assert err < _fp32_sequential_error(a, b, ref)
    assert err < 2 ** -22                 # FP32-level, whatever the FP32 summation order


def test_per_row_and_column_scaling_absorbs_their_ranges():
    """Rows of A and columns of B scaled by 2^U(-30, 30): each output entry
    keeps its own relative accuracy, since each row and column has its own
    exponent."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((32, 512)) * np.exp2(rng.integers(-30, 31, (32, 1)))
    b = rng.standard_normal((512, 16)) * np.exp2(rng.integers(-30, 31, (1, 16)))
    a, b = a.astype(np.float32), b.astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    assert np.max(np.abs(R.gemm(a, b) - ref) / scale) < 2 ** -22


def test_wide_ranges_inside_a_row_lose_the_small_entries():
    """Entries of one row spanning 2^40: the small ones round to 0 in A'
    (the scaling is per row), so the error is small only against the row's
    largest terms -- the case the engine must send elsewhere."""
    a = np.array([[1.0, 2.0 ** -40]], np.float32)
    b = np.array([[0.0], [1.0]], np.float32)
    out = R.gemm(a, b)
    assert out[0, 0] == 0.0 and a[0, 1] * b[1, 0] != 0.0


def test_alpha_beta_and_degenerate_shapes():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((5, 7)).astype(np.float32)
    b = rng.standard_normal((7, 3)).astype(np.float32)
    c = rng.standard_normal((5, 3)).astype(np.float32)
    ref = -1.5 * (a.astype(np.float64) @ b) + 0.5 * c
    np.testing.assert_allclose(R.gemm(a, b, c, alpha=-1.5, beta=0.5), ref, rtol=1e-6, atol=1e-6)
    z = R.gemm(np.zeros((4, 6), np.float32), np.ones((6, 2), np.float32))
    np.testing.assert_array_equal(z, 0.0)
    assert R.gemm(np.ones((3, 0), np.float32), np.ones((0, 2), np.float32)).shape == (3, 2)


@pytest.mark.parametrize("bad, what", [
    (lambda: R.decompose(np.ones((2, 3)), np.ones((4, 2))), "do not multiply"),
    (lambda: R.decompose(np.array([[np.inf]]), np.ones((1, 1))), "Inf or NaN"),
    (lambda: R.decompose(np.array([[np.nan]]), np.ones((1, 1))), "Inf or NaN"),
    (lambda: M.budget(2, 4096), "more moduli"),
    (lambda: M.moduli(0), "n must be"),
])
def test_bad_input_is_named(bad, what):
    with pytest.raises(ValueError, match=what):
        bad()


def test_depth_beyond_one_int32_sum_is_emulated_exactly():
    """k past 131071: the emulation's int64 products stay exact (the GPU
    folds its INT32 sums modulo p, which Garner cannot tell apart), and the
    budget still keeps the product reconstructible."""
    k = M.INT32_K_MAX + 5
    a = np.full((1, k), -1.0, np.float32)
    b = np.full((k, 2), 1.0, np.float32)
    b[:, 1] = -1.0
    parts = R.decompose(a, b, 8)
    assert parts.budget.k == k
    out = R.gemm(a, b)
    np.testing.assert_array_equal(out, [[-float(k), float(k)]])
