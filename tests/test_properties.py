"""Property-based tests of layout normalization and validation (CPU, no GPU).

Every user call is mapped by ``layout.normalize`` onto one canonical
column-major problem; ``layout.reference`` is a NumPy model of what the
kernels then compute on flat memory.  Here Hypothesis builds random matrix
views (C/F order, transposed, padded leading dimensions, storage offsets that
break 16-byte alignment, extents of 1 with arbitrary strides, batches with
broadcast operands) on one flat buffer, runs normalize + reference, and
compares with a direct NumPy computation of alpha*op(a)@op(b) + beta*c.  Every
element of the buffer outside C's view must be bit-for-bit unchanged.

Seeded: ``derandomize=True`` makes every run draw the same examples; a failure
prints the falsifying example (Hypothesis's default report) plus the notes.
"""
from __future__ import annotations

import dataclasses
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from sgemm import blas, layout
from sgemm.arrays import describe
from sgemm.errors import ArgumentError, DeviceError
from sgemm.layout import Mat
from sgemm.plan import Plan
from sgemm.runtime import device as devmod

SETTINGS = dict(derandomize=True, deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# alpha/beta: exact specials, negatives, tiny and huge magnitudes (the
# reference is float64, so magnitudes only have to stay finite there).
SCALARS = st.sampled_from([0.0, 1.0, -1.0, 0.5, -2.0, 3.25, 1e-30, -1e-30, 1e30, -7e25])


# -- building views on a flat buffer ------------------------------------------------
@dataclasses.dataclass
class Placed:
    mat: Mat            # logical view, ptr in elements of the flat buffer
    lo: int             # [lo, hi): elements the view may touch
    hi: int


@st.composite
def placed_matrix(draw, rows: int, cols: int, start: int) -> Placed:
    """A rows x cols view starting at or after ``start``: C or F order, a
    padded leading dimension, an odd offset, and for extents of 1 any stride."""
    order = draw(st.sampled_from("CF"))
    pad = draw(st.sampled_from([0, 0, 1, 3, 7]))
    off = start + draw(st.integers(0, 5))          # breaks 16-byte alignment
    if order == "C":
        rs, cs = cols + pad, 1
    else:
        rs, cs = 1, rows + pad
    # A dimension of extent 1 has no meaningful stride: NumPy may report anything.
    if rows == 1:
        rs = draw(st.sampled_from([rs, 0, 1, 5, 1000]))
    if cols == 1:
        cs = draw(st.sampled_from([cs, 0, 1, 9, 1000]))
    last = off + (rows - 1) * rs + (cols - 1) * cs
    return Placed(Mat(off, rows, cols, rs, cs), off, last + 1)


def view(mem: np.ndarray, m: Mat) -> np.ndarray:
    """The NumPy view of ``m`` on ``mem`` (no copy)."""
    it = mem.itemsize
    return np.lib.stride_tricks.as_strided(mem[m.ptr:], (m.rows, m.cols),
                                           (m.rs * it, m.cs * it), writeable=False)


def op(x: np.ndarray, t: bool) -> np.ndarray:
    return x.T if t else x


@st.composite
def gemm_case(draw, max_dim: int = 9, batched: bool = False):
    m, n, k = (draw(st.integers(1, max_dim)) for _ in range(3))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    alpha, beta = draw(SCALARS), draw(SCALARS)
    batch = draw(st.integers(1, 3)) if batched else 1
    a_rows, a_cols = (k, m) if ta else (m, k)
    b_rows, b_cols = (n, k) if tb else (k, n)
    # Lay out A, B, C one after the other with gaps; in a batch, entries of
    # one operand follow each other at a (possibly padded) batch stride, or
    # the operand is broadcast (stride 0).
    cursor = draw(st.integers(0, 3))
    placed, strides = [], []
    for name, r, c in (("a", a_rows, a_cols), ("b", b_rows, b_cols), ("c", m, n)):
        p = draw(placed_matrix(r, c, cursor))
        span = p.hi - p.lo
        if batch > 1 and name != "c" and draw(st.booleans()):
            s = 0                                      # broadcast over the batch
        else:
            s = span + draw(st.integers(0, 4)) if batch > 1 else 0
        strides.append(s)
        placed.append(p)
        cursor = p.hi + max(0, (batch - 1) * s) + draw(st.integers(0, 4))
    return dict(m=m, n=n, k=k, ta=ta, tb=tb, alpha=alpha, beta=beta, batch=batch,
                A=placed[0], B=placed[1], C=placed[2], strides=tuple(strides), size=cursor)


def _run_case(case, mem0: np.ndarray):
    A, B, C = case["A"].mat, case["B"].mat, case["C"].mat
    prob = layout.normalize(A, B, C, case["ta"], case["tb"], case["alpha"], case["beta"],
                            case["batch"], case["strides"])
    note(f"canonical problem: {prob}")
    # The canonical problem is column-major in C with m x n = C's (possibly
    # swapped) extents, and every leading dimension covers its rows.
    assert prob.batch == case["batch"]
    assert {prob.m, prob.n} == {case["m"], case["n"]}
    assert prob.k == case["k"]
    for ld, t, rows, cols in ((prob.lda, prob.ta, prob.m, prob.k),
                              (prob.ldb, prob.tb, prob.k, prob.n)):
        stored_rows = cols if t else rows
        stored_cols = rows if t else cols
        assert ld >= 1
        if stored_cols > 1:
            assert ld >= stored_rows, f"ld {ld} < stored rows {stored_rows}"
    if prob.n > 1:
        assert prob.ldc >= prob.m

    mem = mem0.copy()
    layout.reference(prob, mem)

    # Direct NumPy model of what the user asked for.
    expect = mem0.copy()
    sa, sb, sc = case["strides"]
    for z in range(case["batch"]):
        a = view(mem0, dataclasses.replace(A, ptr=A.ptr + z * sa))
        b = view(mem0, dataclasses.replace(B, ptr=B.ptr + z * sb))
        cm = dataclasses.replace(C, ptr=C.ptr + z * sc)
        c_old = view(mem0, cm)
        res = case["alpha"] * (op(a, case["ta"]) @ op(b, case["tb"]))
        if case["beta"] != 0.0:
            res = res + case["beta"] * c_old
        it = expect.itemsize
        cv = np.lib.stride_tricks.as_strided(expect[cm.ptr:], (cm.rows, cm.cols),
                                             (cm.rs * it, cm.cs * it))
        cv[...] = res
    touched = np.zeros(mem.size, bool)
    scale = np.zeros(mem.size)
    for z in range(case["batch"]):
        a = view(mem0, dataclasses.replace(A, ptr=A.ptr + z * sa))
        b = view(mem0, dataclasses.replace(B, ptr=B.ptr + z * sb))
        cm = dataclasses.replace(C, ptr=C.ptr + z * sc)
        idx = cm.ptr + np.add.outer(np.arange(cm.rows) * cm.rs, np.arange(cm.cols) * cm.cs)
        touched[idx.ravel()] = True
        mag = abs(case["alpha"]) * (np.abs(op(a, case["ta"])) @ np.abs(op(b, case["tb"])))
        if case["beta"] != 0.0:
            mag = mag + abs(case["beta"]) * np.abs(view(mem0, cm))
        scale[idx.ravel()] = mag.ravel()
    assert_close(mem[touched], expect[touched], scale[touched])
    # Outside C's views nothing changed (bitwise).
    assert mem[~touched].tobytes() == mem0[~touched].tobytes()


def assert_close(got, want, scale, rel=1e-12):
    """Elementwise |got - want| <= rel * scale (scale = |alpha||A||B| + |beta||C|,
    so cancellation cannot make a correct result look wrong); no NaN anywhere."""
    got, want, scale = map(np.asarray, (got, want, scale))
    assert not np.isnan(got).any(), "NaN in the result"
    err = np.abs(got - want)
    bad = err > rel * scale + 1e-300
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        raise AssertionError(f"{int(bad.sum())} of {bad.size} elements off; first at flat "
                             f"index {i}: got {got.ravel()[i]!r}, want {want.ravel()[i]!r}, "
                             f"bound {rel * scale.ravel()[i]:.3g}")


def _buffer(case, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mem = rng.standard_normal(case["size"] + 8)
    # C entries that beta == 0 must ignore: a NaN that must not survive.
    if case["beta"] == 0.0:
        C = case["C"].mat
        for z in range(case["batch"]):
            mem[C.ptr + z * case["strides"][2]] = np.nan
    return mem


@settings(max_examples=150, **SETTINGS)
@given(case=gemm_case(), seed=st.integers(0, 2**31))
def test_normalize_matches_numpy(case, seed):
    mem0 = _buffer(case, seed)
    note(f"A={case['A'].mat} B={case['B'].mat} C={case['C'].mat}")
    _run_case(case, mem0)


@settings(max_examples=60, **SETTINGS)
@given(case=gemm_case(max_dim=5, batched=True), seed=st.integers(0, 2**31))
def test_normalize_batched_matches_numpy(case, seed):
    mem0 = _buffer(case, seed)
    note(f"A={case['A'].mat} B={case['B'].mat} C={case['C'].mat} strides={case['strides']}")
    _run_case(case, mem0)


# -- storage(): accepted iff one dimension has unit stride -------------------------------
@settings(max_examples=200, **SETTINGS)
@given(rows=st.integers(1, 6), cols=st.integers(1, 6),
       rs=st.integers(0, 9), cs=st.integers(0, 9))
def test_storage_accepts_exactly_unit_stride_views(rows, cols, rs, cs):
    x = Mat(0, rows, cols, rs, cs)
    ok = (rows <= 1 or cols <= 1) or rs == 1 or cs == 1
    if not ok:
        with pytest.raises(ArgumentError, match=r"^x has strides"):
            layout.storage(x, "x")
        return
    t, ld = layout.storage(x, "x")
    # The (t, ld) description addresses exactly the elements of the view.
    for i in range(rows):
        for j in range(cols):
            got = (j + i * ld) if t else (i + j * ld)
            assert got == i * rs + j * cs, (t, ld, i, j)


@settings(max_examples=150, **SETTINGS)
@given(rows=st.integers(1, 6), cols=st.integers(1, 6),
       rs=st.integers(0, 9), cs=st.integers(0, 9))
def test_check_output_rejects_exactly_self_overlapping_c(rows, cols, rs, cs):
    """A C view is accepted iff its elements are pairwise distinct (and one
    stride is unit)."""
    c = Mat(0, rows, cols, rs, cs)
    offsets = {i * rs + j * cs for i in range(rows) for j in range(cols)}
    distinct = len(offsets) == rows * cols
    unit = rows <= 1 or cols <= 1 or rs == 1 or cs == 1
    if distinct and unit:
        layout.check_output(c)
    else:
        with pytest.raises(ArgumentError, match=r"^c has strides"):
            layout.check_output(c)


# -- Plan on NumPy views: the whole front end, through the pointer arithmetic ---------
class _GpuTouched(Exception):
    pass


def no_gpu():
    """Make the first GPU access raise _GpuTouched: everything before it is
    validation and layout, which must work on any machine."""
    def boom():
        raise _GpuTouched()
    return mock.patch.object(devmod, "require_gpu", boom)


@st.composite
def numpy_call(draw):
    """Random NumPy operands with a random chance of a mismatch."""
    m, n, k = (draw(st.integers(1, 7)) for _ in range(3))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    k_b = k if draw(st.integers(0, 4)) else draw(st.integers(1, 7))
    a_shape = (k, m) if ta else (m, k)
    b_shape = (n, k_b) if tb else (k_b, n)
    c_shape = (m, n) if draw(st.integers(0, 4)) else (draw(st.integers(1, 7)),
                                                       draw(st.integers(1, 7)))
    orders = [draw(st.sampled_from("CF")) for _ in range(3)]
    with_c = draw(st.booleans())
    beta = draw(st.sampled_from([0.0, 1.0, -0.5])) if with_c else 0.0
    return dict(m=m, n=n, k=k, k_b=k_b, ta=ta, tb=tb, a_shape=a_shape, b_shape=b_shape,
                c_shape=c_shape, orders=orders, with_c=with_c, beta=beta)


@settings(max_examples=120, **SETTINGS)
@given(call=numpy_call())
def test_plan_accepts_iff_shapes_agree(call):
    """Validation accepts (reaches the GPU step) exactly the consistent calls,
    and a rejection names the mismatching dimensions; C is never modified."""
    a = np.zeros(call["a_shape"], np.float32, order=call["orders"][0])
    b = np.zeros(call["b_shape"], np.float32, order=call["orders"][1])
    c = np.full(call["c_shape"], 7.0, np.float32, order=call["orders"][2])
    c0 = c.copy()
    consistent = call["k"] == call["k_b"] and (
        not call["with_c"] or call["c_shape"] == (call["m"], call["n"]))
    kw = dict(trans_a=call["ta"], trans_b=call["tb"], beta=call["beta"])
    args = (a, b, c) if call["with_c"] else (a, b)
    if consistent:
        with no_gpu(), pytest.raises(_GpuTouched):
            Plan(*args, **kw)
    else:
        with no_gpu(), pytest.raises(ArgumentError) as e:
            Plan(*args, **kw)
        msg = str(e.value)
        if call["k"] != call["k_b"]:
            assert "inner dimensions" in msg and str(call["k"]) in msg and str(call["k_b"]) in msg
        else:
            assert msg.startswith("c has shape")
    assert c.tobytes() == c0.tobytes()


@st.composite
def batched_numpy_call(draw):
    """matmul-style stacked operands with broadcastable batch dimensions,
    sliced out of bigger arrays (strided batch, padded rows, odd offsets)."""
    m, n, k = (draw(st.integers(1, 4)) for _ in range(3))
    nb = draw(st.integers(1, 2))
    out_batch = tuple(draw(st.integers(1, 3)) for _ in range(nb))

    def bshape():
        nd = draw(st.integers(0, nb))
        dims = out_batch[nb - nd:]
        return tuple(d if draw(st.integers(0, 2)) else 1 for d in dims)

    ta, tb = draw(st.booleans()), draw(st.booleans())
    return dict(m=m, n=n, k=k, out_batch=out_batch, a_b=bshape(), b_b=bshape(), ta=ta, tb=tb,
                pads=[draw(st.integers(0, 2)) for _ in range(3)],
                offs=[draw(st.integers(0, 3)) for _ in range(3)],
                orders=[draw(st.sampled_from("CF")) for _ in range(3)],
                alpha=draw(SCALARS), beta=draw(SCALARS))


def _padded(rng, batch_shape, rows, cols, pad, off, order):
    """A (batch..., rows, cols) float32 view with padded inner rows/cols and a
    storage offset, plus the flat buffer it lives in."""
    if order == "C":
        full = (*batch_shape, rows, cols + pad)
    else:
        full = (*batch_shape, cols, rows + pad)
    flat = rng.standard_normal(int(np.prod(full)) + off + 1).astype(np.float32)
    base = flat[off:off + int(np.prod(full))].reshape(full)
    v = base[..., :rows, :cols] if order == "C" else np.swapaxes(base[..., :cols, :rows], -1, -2)
    return flat, v


@settings(max_examples=60, **SETTINGS)
@given(call=batched_numpy_call(), seed=st.integers(0, 2**31))
def test_plan_problems_batched_views(call, seed):
    """Plan's decomposition of stacked, broadcast, strided NumPy views into
    canonical problems (batch collapsing included) computes np.matmul."""
    rng = np.random.default_rng(seed)
    m, n, k, ta, tb = call["m"], call["n"], call["k"], call["ta"], call["tb"]
    a_rows, a_cols = (k, m) if ta else (m, k)
    b_rows, b_cols = (n, k) if tb else (k, n)
    fa, a = _padded(rng, call["a_b"], a_rows, a_cols, call["pads"][0], call["offs"][0],
                    call["orders"][0])
    fb, b = _padded(rng, call["b_b"], b_rows, b_cols, call["pads"][1], call["offs"][1],
                    call["orders"][1])
    out_batch = tuple(np.broadcast_shapes(call["a_b"], call["b_b"]))
    fc, c = _padded(rng, out_batch, m, n, call["pads"][2], call["offs"][2], call["orders"][2])
    # One flat float64 "memory" holding the three buffers; pointers become
    # element offsets into it.
    mem0 = np.concatenate([fa, fb, fc]).astype(np.float64)
    bases = {"a": (fa, 0), "b": (fb, fa.size), "c": (fc, fa.size + fb.size)}

    def to_elem(ptr):
        for flat, start in bases.values():
            lo = flat.ctypes.data
            if lo <= ptr < lo + 4 * flat.size:
                assert (ptr - lo) % 4 == 0
                return start + (ptr - lo) // 4
        raise AssertionError(f"pointer {ptr:#x} outside every operand")

    A, B, C = describe(a, "a"), describe(b, "b"), describe(c, "c")
    probs = Plan._problems(A, B, C, ta, tb, call["alpha"], call["beta"], out_batch)
    mem = mem0.copy()
    for p in probs:
        p = dataclasses.replace(p, a=to_elem(p.a), b=to_elem(p.b), c=to_elem(p.c))
        layout.reference(p, mem)
    got = mem[fa.size + fb.size:]
    want_c = (call["alpha"] * np.matmul(op_last(a, ta).astype(np.float64),
                                        op_last(b, tb).astype(np.float64)))
    if call["beta"] != 0.0:
        want_c = want_c + call["beta"] * c.astype(np.float64)
    want = fc.astype(np.float64)
    # Write want_c into a float64 copy of C's flat buffer through the same view geometry.
    wv = np.lib.stride_tricks.as_strided(
        want[(c.ctypes.data - fc.ctypes.data) // 4:], c.shape,
        tuple(s * 2 for s in c.strides))
    wv[...] = want_c
    note(f"{len(probs)} canonical problem(s): {probs[:2]}")
    mag = abs(call["alpha"]) * np.matmul(np.abs(op_last(a, ta)).astype(np.float64),
                                         np.abs(op_last(b, tb)).astype(np.float64))
    if call["beta"] != 0.0:
        mag = mag + abs(call["beta"]) * np.abs(c.astype(np.float64))
    scale = np.zeros(fc.size)
    sv = np.lib.stride_tricks.as_strided(
        scale[(c.ctypes.data - fc.ctypes.data) // 4:], c.shape, tuple(s * 2 for s in c.strides))
    sv[...] = mag
    assert_close(got, want, scale)
    assert mem[:fa.size + fb.size].tobytes() == mem0[:fa.size + fb.size].tobytes()


def op_last(x, t):
    return np.swapaxes(x, -1, -2) if t else x


# -- BLAS argument checks against an independent model of xerbla's order ----------------
@settings(max_examples=200, **SETTINGS)
@given(transa=st.sampled_from(["N", "n", "T", "t", "C", "X", "", "NN"]),
       transb=st.sampled_from(["N", "T", "c", "Q"]),
       m=st.integers(-2, 6), n=st.integers(-2, 6), k=st.integers(-2, 6),
       lda=st.integers(-1, 8), ldb=st.integers(-1, 8), ldc=st.integers(-1, 8))
def test_blas_check_order(transa, transb, m, n, k, lda, ldb, ldc):
    """The first failing parameter, in the reference BLAS order 1,2,3,4,5,8,10,13."""
    ta = transa.upper() in ("T", "C") if len(transa) == 1 else None
    tb = transb.upper() in ("T", "C") if len(transb) == 1 else None
    valid_a = len(transa) == 1 and transa.upper() in "NTC"
    valid_b = len(transb) == 1 and transb.upper() in "NTC"
    first = None
    if not valid_a:
        first = 1
    elif not valid_b:
        first = 2
    elif m < 0:
        first = 3
    elif n < 0:
        first = 4
    elif k < 0:
        first = 5
    elif lda < max(1, k if ta else m):
        first = 8
    elif ldb < max(1, n if tb else k):
        first = 10
    elif ldc < max(1, m):
        first = 13
    if first is None:
        assert blas.check(transa, transb, m, n, k, lda, ldb, ldc) == (ta, tb, m, n, k)
    else:
        with pytest.raises(ArgumentError, match=rf"^sgemm: parameter {first} \("):
            blas.check(transa, transb, m, n, k, lda, ldb, ldc)


def test_no_gpu_here_means_device_error_last():
    """On a machine without a GPU a valid call fails with DeviceError (and
    only after validation).  Skipped where a GPU is visible."""
    if devmod.has_gpu():
        pytest.skip("a GPU is visible")
    a = np.ones((3, 2), np.float32)
    with pytest.raises(DeviceError, match="no CUDA GPU"):
        Plan(a, a.T)
