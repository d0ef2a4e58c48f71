"""Every registered kernel against an fp64 reference on the GPU.

C is poisoned with NaN before every call where beta == 0, so an element the
kernel fails to write shows up as NaN; inputs are fresh standard-normal draws.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import sgemm
from sgemm.kernels.registry import KERNELS

from .reference import make, ref_gemm, rel_err

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

TOL = {"ieee": 1e-5, "tf32x3": 1e-5, "tf32": 5e-3}
IEEE = [s for s in KERNELS.values()]
SHAPES = [(1, 1, 1), (2, 3, 1), (3, 2, 5), (31, 33, 17), (33, 31, 64), (127, 129, 65),
          (129, 127, 257), (1000, 33, 129), (17, 1000, 300), (256, 256, 256)]


def _tol(spec, k):
    return TOL[spec.precision] * (1 if k <= 4096 else 4)


def _run(spec, m, n, k, ta, tb, alpha, beta, order="C", pad=0, offset=0, seed=0):
    rng = np.random.default_rng(seed)
    a = make(cp, rng, (k, m) if ta else (m, k), order, pad, offset)
    b = make(cp, rng, (n, k) if tb else (k, n), order, pad, offset)
    c = make(cp, rng, (m, n), order, pad, offset)
    c_in = c.copy()
    if beta == 0:
        c[...] = cp.nan
    ref = ref_gemm(a, b, c_in, alpha, beta, ta, tb)
    out = sgemm.gemm(a, b, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb, kernel=spec.name)
    assert out is c
    return rel_err(c, ref)


@pytest.mark.parametrize("spec", IEEE, ids=lambda s: s.name)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_shapes_all_transposes(spec, m, n, k):
    for ta, tb in itertools.product((False, True), repeat=2):
        err = _run(spec, m, n, k, ta, tb, 1.0, 0.0, seed=m * 7 + n)
        assert err < _tol(spec, k), (spec.name, m, n, k, ta, tb, err)


@pytest.mark.parametrize("spec", IEEE, ids=lambda s: s.name)
@pytest.mark.parametrize("order,pad,offset", [("C", 0, 0), ("F", 0, 0), ("C", 3, 0),
                                              ("F", 5, 1), ("C", 0, 1)])
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (-1.5, 1.0), (1.0, -1.5), (0.0, -1.5)])
def test_layouts_and_scalars(spec, order, pad, offset, alpha, beta):
    for ta, tb in ((False, False), (True, True)):
        err = _run(spec, 67, 45, 93, ta, tb, alpha, beta, order, pad, offset, seed=3)
        assert err < _tol(spec, 93), (spec.name, order, pad, offset, alpha, beta, err)


@pytest.mark.parametrize("spec", IEEE, ids=lambda s: s.name)
def test_large_odd(spec):
    if spec.name in ("naive", "coalesced"):
        pytest.skip("slow rung: covered on smaller shapes")
    err = _run(spec, 1000, 4097, 129, False, False, 1.0, 0.0, seed=11)
    assert err < _tol(spec, 129)
    err = _run(spec, 257, 263, 4097, True, False, 1.0, 0.0, seed=12)
    assert err < _tol(spec, 4097)


@pytest.mark.parametrize("spec", IEEE, ids=lambda s: s.name)
def test_batched_one_launch(spec):
    rng = np.random.default_rng(5)
    a = cp.asarray(rng.standard_normal((7, 33, 65)).astype(np.float32))
    b = cp.asarray(rng.standard_normal((7, 65, 17)).astype(np.float32))
    p = sgemm.plan(a, b, kernel=spec.name, _ndims=(3,))
    assert len(p.launches) == 1
    out = p.execute()
    ref = np.einsum("zik,zkj->zij", a.get().astype(np.float64), b.get().astype(np.float64))
    assert rel_err(out, ref) < _tol(spec, 65)


def test_beta_zero_does_not_read_nan():
    rng = np.random.default_rng(1)
    a = cp.asarray(rng.standard_normal((40, 30)).astype(np.float32))
    b = cp.asarray(rng.standard_normal((30, 20)).astype(np.float32))
    c = cp.full((40, 20), cp.inf, dtype=cp.float32)
    c[3, 4] = cp.nan
    sgemm.gemm(a, b, c, beta=0.0)
    assert cp.isfinite(c).all()


def test_alpha_zero_does_not_read_a_b():
    a = cp.full((8, 9), cp.nan, dtype=cp.float32)
    b = cp.full((9, 10), cp.nan, dtype=cp.float32)
    c = cp.ones((8, 10), dtype=cp.float32)
    sgemm.gemm(a, b, c, alpha=0.0, beta=2.0)
    assert (c == 2.0).all()
    sgemm.gemm(a, b, c, alpha=0.0, beta=0.0)
    assert (c == 0.0).all()


def test_k_zero_scales_c():
    a = cp.zeros((5, 0), dtype=cp.float32)
    b = cp.zeros((0, 7), dtype=cp.float32)
    c = cp.full((5, 7), 3.0, dtype=cp.float32)
    sgemm.gemm(a, b, c, beta=-1.5)
    assert (c == -4.5).all()
    out = sgemm.gemm(a, b)
    assert out.shape == (5, 7) and (out == 0).all()


def test_numpy_in_numpy_out():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((50, 40)).astype(np.float32)
    b = rng.standard_normal((40, 30)).astype(np.float32)
    out = sgemm.gemm(a, b)
    assert isinstance(out, np.ndarray)
    assert rel_err(out, a.astype(np.float64) @ b) < 1e-5
    c = np.ones((50, 30), np.float32)
    r = sgemm.gemm(a, b, c, beta=1.0)
    assert r is c and rel_err(c, a.astype(np.float64) @ b + 1) < 1e-5


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    a = torch.randn(64, 48, device="cuda")
    b = torch.randn(48, 32, device="cuda")
    out = sgemm.gemm(a, b)
    assert isinstance(out, torch.Tensor) and out.is_cuda
    ref = a.double() @ b.double()
    assert float((out.double() - ref).abs().max() / ref.abs().max()) < 1e-5
    # transposed views without copies
    out = sgemm.gemm(a.t(), b[:, :16], trans_a=True)
    ref = a.double() @ b[:, :16].double()
    assert float((out.double() - ref).abs().max() / ref.abs().max()) < 1e-5


def test_matmul_broadcast():
    rng = np.random.default_rng(4)
    a = cp.asarray(rng.standard_normal((3, 1, 20, 30)).astype(np.float32))
    b = cp.asarray(rng.standard_normal((4, 30, 10)).astype(np.float32))
    out = sgemm.matmul(a, b)
    ref = np.matmul(a.get().astype(np.float64), b.get().astype(np.float64))
    assert out.shape == ref.shape and rel_err(out, ref) < 1e-5
    v = cp.asarray(rng.standard_normal(30).astype(np.float32))
    assert sgemm.matmul(a[0, 0], v).shape == (20,)
    assert sgemm.matmul(v, b).shape == (4, 10)
    assert sgemm.matmul(v, v).shape == ()


# -- netlib semantics through the BLAS interface ----------------------------------
@pytest.mark.parametrize("ta,tb", list(itertools.product("NT", repeat=2)))
def test_blas_untouched_beyond_mxn(ta, tb):
    rng = np.random.default_rng(9)
    m, n, k, lda, ldb, ldc = 37, 29, 41, 50, 60, 45
    A = cp.asarray(rng.standard_normal(lda * max(m, k)).astype(np.float32))
    B = cp.asarray(rng.standard_normal(ldb * max(n, k)).astype(np.float32))
    C = cp.full(ldc * n + 13, 7.0, dtype=cp.float32)
    sgemm.blas.sgemm(ta, tb, m, n, k, 1.0, A, lda, B, ldb, 0.0, C, ldc)
    Ch = C.get()
    full = Ch[:ldc * n].reshape(n, ldc).T          # column-major view with pitch
    assert (full[m:, :] == 7.0).all(), "rows past m written"
    assert (Ch[ldc * n:] == 7.0).all(), "past the last column written"
    An = A.get()[:lda * (k if ta == "N" else m)].reshape(-1, lda).T
    Bn = B.get()[:ldb * (n if tb == "N" else k)].reshape(-1, ldb).T
    opA = An[:m, :k] if ta == "N" else An[:k, :m].T
    opB = Bn[:k, :n] if tb == "N" else Bn[:n, :k].T
    ref = opA.astype(np.float64) @ opB
    assert rel_err(full[:m, :], ref) < 1e-5


def test_blas_beta_zero_nan_in_c():
    rng = np.random.default_rng(10)
    A = cp.asarray(rng.standard_normal(64).astype(np.float32))
    B = cp.asarray(rng.standard_normal(64).astype(np.float32))
    C = cp.full(64, cp.nan, dtype=cp.float32)
    sgemm.blas.sgemm("n", "n", 8, 8, 8, 1.0, A, 8, B, 8, 0.0, C, 8)
    assert cp.isfinite(C).all()
