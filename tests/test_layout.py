"""Layout normalization against a NumPy model, no GPU.

Operands live in one flat float64 buffer; a "pointer" is an element offset.
normalize() turns the user's call into the canonical column-major problem and
layout.reference() executes that problem the way a kernel would; the result
must equal alpha*op(a)@op(b) + beta*c computed directly, and nothing outside
c's view may change.
"""
import itertools

import numpy as np
import pytest

from sgemm.errors import ArgumentError
from sgemm.layout import Mat, check_output, normalize, reference, storage


def _view(mem, off, rows, cols, order, pad):
    """Place a rows x cols matrix at element offset `off` in `mem`."""
    if order == "C":
        rs, cs = cols + pad, 1
    else:
        rs, cs = 1, rows + pad
    return Mat(off, rows, cols, rs, cs)


def _get(mem, v: Mat) -> np.ndarray:
    i = np.arange(v.rows)[:, None] * v.rs + np.arange(v.cols)[None, :] * v.cs
    return mem[v.ptr + i]


CASES = list(itertools.product((False, True), (False, True), "CF", "CF", "CF", (0, 2)))


@pytest.mark.parametrize("ta,tb,oa,ob,oc,pad", CASES)
def test_normalize_matches_numpy(ta, tb, oa, ob, oc, pad):
    rng = np.random.default_rng(hash((ta, tb, oa, ob, oc, pad)) % 2**32)
    m, n, k = 5, 4, 3
    mem = rng.standard_normal(4000)
    a = _view(mem, 10, *((k, m) if ta else (m, k)), oa, pad)
    b = _view(mem, 500, *((n, k) if tb else (k, n)), ob, pad)
    c = _view(mem, 1000, m, n, oc, pad)
    A, B, C = _get(mem, a), _get(mem, b), _get(mem, c)
    want = 0.5 * ((A.T if ta else A) @ (B.T if tb else B)) - 1.25 * C
    before = mem.copy()
    prob = normalize(a, b, c, ta, tb, 0.5, -1.25)
    assert (prob.m, prob.n) in ((m, n), (n, m)) and prob.k == k
    reference(prob, mem)
    np.testing.assert_allclose(_get(mem, c), want, rtol=1e-12, atol=1e-12)
    mask = np.ones(mem.size, bool)
    idx = c.ptr + np.arange(c.rows)[:, None] * c.rs + np.arange(c.cols)[None, :] * c.cs
    mask[idx.ravel()] = False
    assert (mem[mask] == before[mask]).all(), "elements outside c changed"


def test_row_major_c_swaps_roles():
    # NumPy's default: everything C-order -> canonical NN with A and B swapped.
    a, b, c = Mat(0, 6, 4, 4, 1), Mat(100, 4, 3, 3, 1), Mat(200, 6, 3, 3, 1)
    p = normalize(a, b, c, False, False, 1.0, 0.0)
    assert (p.m, p.n, p.k) == (3, 6, 4)
    assert (p.a, p.b, p.c) == (100, 0, 200)
    assert (p.ta, p.tb, p.lda, p.ldb, p.ldc) == (False, False, 3, 4, 3)


def test_column_major_is_identity():
    a, b, c = Mat(0, 6, 4, 1, 6), Mat(100, 4, 3, 1, 4), Mat(200, 6, 3, 1, 8)
    p = normalize(a, b, c, False, False, 1.0, 0.0)
    assert (p.m, p.n, p.k, p.ta, p.tb, p.lda, p.ldb, p.ldc) == (6, 3, 4, False, False, 6, 4, 8)


def test_batch_strides_follow_roles():
    a, b, c = Mat(0, 6, 4, 4, 1), Mat(100, 4, 3, 3, 1), Mat(200, 6, 3, 3, 1)
    p = normalize(a, b, c, False, False, 1.0, 0.0, batch=5, strides=(24, 12, 18))
    assert (p.stride_a, p.stride_b, p.stride_c) == (12, 24, 18)


@pytest.mark.parametrize("mat", [Mat(0, 5, 1, 7, 123), Mat(0, 1, 5, 99, 3), Mat(0, 1, 1, 9, 9)])
def test_vectors_accept_any_stride(mat):
    t, ld = storage(mat, "x")
    assert ld >= 1


def test_non_unit_strides_rejected():
    with pytest.raises(ArgumentError, match=r"a has strides \(8, 2\)"):
        storage(Mat(0, 4, 4, 8, 2), "a")


def test_self_overlapping_output_rejected():
    with pytest.raises(ArgumentError, match="overlap"):
        check_output(Mat(0, 4, 4, 2, 1), "c")   # row pitch 2 < 4 columns
    with pytest.raises(ArgumentError, match="overlap"):
        check_output(Mat(0, 4, 4, 1, 0), "c")   # broadcast column
    check_output(Mat(0, 4, 4, 6, 1), "c")       # padded pitch is fine
