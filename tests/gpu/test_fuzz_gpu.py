"""Property-based fuzzing of every registered kernel against an fp64 reference.

For each kernel in ``sgemm.KERNELS`` Hypothesis draws M, N, K in 1..600
(boundary values over-weighted), both transposes, C/F order of every operand,
padded leading dimensions, storage offsets that break 16-byte alignment,
alpha/beta among 0, 1, negatives, tiny and huge magnitudes, with or without C.
The result must satisfy, elementwise,

    |C - C_ref| <= 2 * ((delta + (K+2) u) |alpha| (|A||B|) + 2 u |beta||C0|) + floor

with u = 2^-24 (FP32 unit roundoff), delta the input rounding of the
kernel's precision (0 for ieee, 2^-19 for tf32x3, 2^-10 for tf32), C_ref and
|A||B| computed in fp64 on the GPU.  Where beta == 0, C is poisoned with NaN
first (a kernel must not read it); elements of C's buffer outside the view
must be untouched bit for bit.

Seeded (derandomize=True): each run draws the same cases; a failure prints the
falsifying example and the worst element.  SGEMM_FUZZ_EXAMPLES sets the
examples per kernel (default 30).
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import sgemm
from sgemm.kernels.registry import KERNELS

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

U = 2.0 ** -24
DELTA = {"ieee": 0.0, "tf32x3": 2.0 ** -19, "tf32": 2.0 ** -10}
FLOOR = 2.0 ** -126
EXAMPLES = int(os.environ.get("SGEMM_FUZZ_EXAMPLES", "30"))
SETTINGS = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, print_blob=True,
                    suppress_health_check=list(HealthCheck))

DIM = st.one_of(st.integers(1, 600),
                st.sampled_from([1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128,
                                 129, 255, 256, 257, 511, 512, 513, 600]))
SCALAR = st.sampled_from([0.0, 1.0, -1.0, 0.5, -2.0, 1e-20, -1e-20, 1e20, -3e19, 1e-30, 1e30])


def build(flat, rows, cols, order, ld, off):
    """rows x cols view on the flat CuPy buffer: C order (row pitch ld) or F
    order (column pitch ld), starting at element ``off``."""
    strides = (4 * ld, 4) if order == "C" else (4, 4 * ld)
    return cp.lib.stride_tricks.as_strided(flat[off:], (rows, cols), strides)


@st.composite
def operand(draw, rows, cols):
    order = draw(st.sampled_from("CF"))
    pad = draw(st.sampled_from([0, 0, 0, 1, 3, 4, 13]))
    off = draw(st.sampled_from([0, 0, 1, 2, 3, 4, 5]))
    inner = cols if order == "C" else rows
    outer = rows if order == "C" else cols
    ld = inner + pad
    size = off + (outer - 1) * ld + inner + draw(st.sampled_from([0, 3]))
    return dict(rows=rows, cols=cols, order=order, ld=ld, off=off, size=size)


@st.composite
def case(draw):
    m, n, k = draw(DIM), draw(DIM), draw(DIM)
    ta, tb = draw(st.booleans()), draw(st.booleans())
    with_c = draw(st.integers(0, 3)) > 0
    return dict(m=m, n=n, k=k, ta=ta, tb=tb,
                a=draw(operand(*((k, m) if ta else (m, k)))),
                b=draw(operand(*((n, k) if tb else (k, n)))),
                c=draw(operand(m, n)) if with_c else None,
                alpha=draw(SCALAR), beta=draw(SCALAR) if with_c else 0.0,
                seed=draw(st.integers(0, 2**32 - 1)))


def _materialize(d, rng, fill_outside=np.float32(-7.25)):
    flat = cp.full(d["size"], fill_outside, np.float32)
    v = build(flat, d["rows"], d["cols"], d["order"], d["ld"], d["off"])
    v[...] = cp.asarray(rng.standard_normal((d["rows"], d["cols"]), np.float32))
    return flat, v


def check_gemm(spec, cs):
    rng = np.random.default_rng(cs["seed"])
    m, n, k, ta, tb = cs["m"], cs["n"], cs["k"], cs["ta"], cs["tb"]
    _, a = _materialize(cs["a"], rng)
    _, b = _materialize(cs["b"], rng)
    A64 = a.astype(cp.float64)
    B64 = b.astype(cp.float64)
    opA = A64.T if ta else A64
    opB = B64.T if tb else B64
    ref = cs["alpha"] * (opA @ opB)
    mag = abs(cs["alpha"]) * (cp.abs(opA) @ cp.abs(opB))
    if cs["c"] is not None:
        cflat, c = _materialize(cs["c"], rng)
        C0 = c.astype(cp.float64)
        if cs["beta"] != 0.0:
            ref += cs["beta"] * C0
        else:
            c[...] = cp.nan                   # beta == 0: C must not be read
        before = cflat.copy()
        out = sgemm.gemm(a, b, c, alpha=cs["alpha"], beta=cs["beta"], trans_a=ta, trans_b=tb,
                         kernel=spec.name)
        assert out is c
    else:
        C0 = cp.zeros((m, n))
        out = sgemm.gemm(a, b, alpha=cs["alpha"], trans_a=ta, trans_b=tb, kernel=spec.name)
        assert out.shape == (m, n) and out.dtype == np.float32
    cp.cuda.get_current_stream().synchronize()
    bound = 2 * ((DELTA[spec.precision] + (k + 2) * U) * mag
                 + 2 * U * abs(cs["beta"]) * cp.abs(C0)) + FLOOR * (k + 2)
    got = out.astype(cp.float64)
    err = cp.abs(got - ref)
    bad = ~(err <= bound)                     # NaN counts as bad
    nbad = int(bad.sum())
    if nbad:
        i = int(cp.argmax(cp.where(bad, err / cp.maximum(bound, 1e-300), -1.0)))
        r, cc = divmod(i, n)
        note(f"worst element ({r}, {cc}): got {float(got[r, cc])!r} want {float(ref[r, cc])!r} "
             f"bound {float(bound[r, cc]):.3g}")
    assert nbad == 0, f"{spec.name}: {nbad} of {m * n} elements outside the error bound"
    if cs["c"] is not None:
        # Nothing outside C's view changed.
        after = cflat.copy()
        d = cs["c"]
        build(after, d["rows"], d["cols"], d["order"], d["ld"], d["off"])[...] = 0
        build(before, d["rows"], d["cols"], d["order"], d["ld"], d["off"])[...] = 0
        assert bool((after.view(cp.uint32) == before.view(cp.uint32)).all()), \
            "elements of C's buffer outside the view were written"


@pytest.mark.parametrize("spec", list(KERNELS.values()), ids=lambda s: s.name)
@SETTINGS
@given(cs=case())
def test_fuzz_kernel(spec, cs):
    note(f"case: {cs}")
    check_gemm(spec, cs)


@pytest.mark.parametrize("spec", list(KERNELS.values()), ids=lambda s: s.name)
@settings(max_examples=max(4, EXAMPLES // 4), derandomize=True, deadline=None,
          print_blob=True, suppress_health_check=list(HealthCheck))
@given(m=DIM, n=DIM, k=st.integers(1, 300), batch=st.integers(1, 5),
       bcast=st.sampled_from(["none", "a", "b"]), ta=st.booleans(), tb=st.booleans(),
       alpha=SCALAR, beta=SCALAR, seed=st.integers(0, 2**32 - 1))
def test_fuzz_batched(spec, m, n, k, batch, bcast, ta, tb, alpha, beta, seed):
    """gemm_batched: strided batches (grid z), a broadcast operand."""
    m, n = min(m, 200), min(n, 200)
    rng = np.random.default_rng(seed)
    sa = (1 if bcast == "a" else batch, *((k, m) if ta else (m, k)))
    sb = (1 if bcast == "b" else batch, *((n, k) if tb else (k, n)))
    a = cp.asarray(rng.standard_normal(sa, np.float32))
    b = cp.asarray(rng.standard_normal(sb, np.float32))
    c = cp.asarray(rng.standard_normal((batch, m, n), np.float32))
    A, B, C0 = (x.astype(cp.float64) for x in (a, b, c))
    opA = A.swapaxes(1, 2) if ta else A
    opB = B.swapaxes(1, 2) if tb else B
    ref = alpha * (opA @ opB) + (beta * C0 if beta else 0.0)
    mag = abs(alpha) * (cp.abs(opA) @ cp.abs(opB))
    if beta == 0.0:
        c[...] = cp.nan
    sgemm.gemm_batched(a, b, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb,
                       kernel=spec.name)
    cp.cuda.get_current_stream().synchronize()
    bound = 2 * ((DELTA[spec.precision] + (k + 2) * U) * mag + 2 * U * abs(beta) * cp.abs(C0)) \
        + FLOOR * (k + 2)
    bad = int((~(cp.abs(c.astype(cp.float64) - ref) <= bound)).sum())
    assert bad == 0, f"{spec.name}: {bad} of {c.size} elements outside the bound"
