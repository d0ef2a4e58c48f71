"""The integer engine's conversion and reconstruction kernels (40_int8x.cu)
against the exact host emulation (sgemm/int8x/reference.py): exponents,
int8 residue planes and the Garner epilogue must match bit for bit.  The
INT8 GEMMs between them are not built yet; CuPy's integer matmul stands in."""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")


def _operands(rng, m, k, n, wide=False):
    a = rng.standard_normal((m, k))
    b = rng.standard_normal((k, n))
    if wide:
        a *= np.exp2(rng.integers(-30, 31, (m, 1)))
        b *= np.exp2(rng.integers(-30, 31, (1, n)))
    a[0, :] = 0.0                                    # an all-zero row: exponent 0
    return a.astype(np.float32), b.astype(np.float32)


@pytest.mark.parametrize("m,k,n,wide", [(1, 1, 1, False), (17, 33, 9, False),
                                        (64, 1000, 48, True), (5, 4097, 3, False)])
def test_kernels_match_the_emulation_bit_for_bit(m, k, n, wide):
    from sgemm.int8x import device as D
    from sgemm.int8x import reference as R
    rng = np.random.default_rng(m * 1000 + k)
    a, b = _operands(rng, m, k, n, wide)
    parts = R.decompose(a, b, 8)
    bud = parts.budget
    ga, gb = cp.asarray(a), cp.asfortranarray(cp.asarray(b))       # B column-major too
    mods = D.constants(8)
    mu, bad_a = D.exponents(ga, 1, bud.alpha)
    nu, bad_b = D.exponents(gb, 0, bud.beta)
    assert not bad_a and not bad_b
    np.testing.assert_array_equal(mu.get(), parts.mu)
    np.testing.assert_array_equal(nu.get(), parts.nu)
    pa = D.residues(ga, mu, 1, mods)                 # (8, m, lda)
    pb = D.residues(gb, nu, 0, mods)                 # (8, n, ldb): B^T, k contiguous
    for l in range(8):
        np.testing.assert_array_equal(pa[l, :, :k].get(), parts.a_res[l])
        np.testing.assert_array_equal(pb[l, :, :k].get(), parts.b_res[l].T)
        assert not pa[l, :, k:].any() and not pb[l, :, k:].any()    # zero padding
    # the INT8 GEMMs, by CuPy's integer matmul (exact in int32 below 131072 deep)
    planes = cp.stack([pa[l].astype(cp.int32) @ pb[l].astype(cp.int32).T for l in range(8)])
    np.testing.assert_array_equal(planes.get(), np.stack(parts.c_res))
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    for alpha, beta in ((1.0, 0.0), (-1.5, 0.5)):
        got = D.garner(planes, mods, mu, nu, alpha, beta, cp.asarray(c0) if beta else None)
        want = R.gemm(a, b, c0, alpha=alpha, beta=beta, n_moduli=8).astype(np.float32)
        np.testing.assert_array_equal(got.get(), want)


def test_garner_with_beta_zero_never_reads_c():
    from sgemm.int8x import device as D
    from sgemm.int8x import reference as R
    rng = np.random.default_rng(5)
    a, b = _operands(rng, 9, 70, 7)
    parts = R.decompose(a, b, 8)
    mods = D.constants(8)
    planes = cp.asarray(np.stack(parts.c_res).astype(np.int32))
    poisoned = cp.full((9, 7), cp.nan, cp.float32)
    got = D.garner(planes, mods, cp.asarray(parts.mu.astype(np.int32)),
                   cp.asarray(parts.nu.astype(np.int32)), 1.0, 0.0, poisoned)
    assert cp.isfinite(got).all()
    np.testing.assert_array_equal(got.get(), R.gemm(a, b).astype(np.float32))


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_non_finite_input_is_flagged(value):
    from sgemm.int8x import device as D
    x = cp.ones((4, 50), cp.float32)
    x[2, 17] = value
    _, bad = D.exponents(x, 1, 25)
    assert bad
    _, bad_cols = D.exponents(x, 0, 25)
    assert bad_cols
