"""The pack scheme's layout logic (sgemm/packing.py) on the CPU: a NumPy model
of flat device memory runs the copies the way 37_pack.cu does, then the
aligned inner problem, then the epilogue, and must equal alpha*op(A)op(B) +
beta*C for every transpose and misalignment; plus when the scheme applies."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from sgemm import packing
from sgemm.problem import Problem


def _read(mem, base, ld, trans, rows, cols):
    """op(X) of a canonical operand: rows x cols, X stored column-major at
    element `base` with leading dimension ld (transposed storage if trans)."""
    i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    off = base + (i * ld + j if trans else j * ld + i)
    return mem[off]


def _copy(mem, job, dst):
    """What pack_panel writes: ldd x cols_pad, zeros outside the source."""
    rows, cols, src, ld, ldd, cpad, _ = job
    for j in range(cpad):
        for i in range(ldd):
            ok = j < cols and i < rows
            mem[dst + j * ldd + i] = mem[src // 4 + j * ld + i] if ok else 0.0


def _problem(m, n, k, ta, tb, lda_pad, ldb_pad, ldc_pad, offs):
    """A canonical problem laid out in one flat array; byte pointers."""
    lda = (k if ta else m) + lda_pad
    ldb = (n if tb else k) + ldb_pad
    ldc = m + ldc_pad
    a0 = offs[0]
    b0 = a0 + lda * (m if ta else k) + 8 + offs[1]
    c0 = b0 + ldb * (k if tb else n) + 8 + offs[2]
    end = c0 + ldc * n + 8
    return Problem(m=m, n=n, k=k, ta=ta, tb=tb, a=4 * a0, lda=lda, b=4 * b0, ldb=ldb,
                   c=4 * c0, ldc=ldc, alpha=-1.5, beta=0.25), end


CASES = list(itertools.product([(13, 9, 7), (8, 12, 5), (5, 16, 11), (13, 9, 8)],
                               itertools.product((False, True), repeat=2),
                               [(1, 0, 3), (0, 2, 0), (3, 1, 1), (0, 0, 1)],
                               [(1, 0, 0), (0, 0, 0)]))


@pytest.mark.parametrize("shape,trans,pads,offs", CASES)
def test_model_equals_gemm(shape, trans, pads, offs):
    m, n, k = shape
    prob, end = _problem(m, n, k, *trans, *pads, offs)
    rng = np.random.default_rng(m * 7 + n)
    ws_floats = packing.workspace_floats(prob)
    ws0 = -(-end // 4) * 4
    mem = rng.standard_normal(ws0 + ws_floats + 8)
    mem[ws0:] = np.nan                                   # poison: padding must be written
    A = _read(mem, prob.a // 4, prob.lda, prob.ta, m, k)
    B = _read(mem, prob.b // 4, prob.ldb, not prob.tb, n, k).T
    C = _read(mem, prob.c // 4, prob.ldc, False, m, n)
    want = prob.alpha * (A @ B) + prob.beta * C

    ja, jb = packing._jobs(prob)
    for job in (ja, jb):
        if job is not None:
            _copy(mem, job, ws0 + job[6])
    inner = packing._inner(prob, 4 * (ws0 + ja[6]) if ja else prob.a,
                           ja[4] if ja else prob.lda,
                           4 * (ws0 + jb[6]) if jb else prob.b,
                           jb[4] if jb else prob.ldb, 0, 0)
    assert (inner.m, inner.n, inner.k) == (m, n, k)
    for ptr, ld in ((inner.a, inner.lda), (inner.b, inner.ldb)):
        assert ptr % 16 == 0 and ld % 4 == 0         # copied, or aligned in place
    # the aligned kernel reads m x k and k x n: every element must be finite
    Ai = _read(mem, inner.a // 4, inner.lda, inner.ta, inner.m, k)
    Bi = _read(mem, inner.b // 4, inner.ldb, not inner.tb, inner.n, k).T
    assert np.isfinite(Ai).all() and np.isfinite(Bi).all()
    Ci = Ai @ Bi                                         # inner: alpha 1, beta 0 into C'
    if packing._c_in_place(prob):
        got = inner.alpha * Ci[:m, :n] + inner.beta * C
    else:
        assert (inner.alpha, inner.beta) == (1.0, 0.0)
        got = prob.alpha * Ci[:m, :n] + prob.beta * C     # the epilogue on the m x n block
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_workspace_counts_every_copy():
    prob, _ = _problem(1023, 1025, 1021, False, False, 0, 0, 0, (1, 0, 0))
    ja, jb = packing._jobs(prob)
    assert ja[4] == 1024 and ja[5] == 1021           # m padded to 1024, k columns
    assert jb[4] == 1024 and jb[5] == 1028           # k rows padded, n padded to 1028
    # C' has C's m x n, its leading dimension rounded up to 4
    assert packing.workspace_floats(prob) == 1024 * 1021 + 1024 * 1028 + 1024 * 1025


def test_aligned_operands_of_odd_extent_are_not_copied():
    # y = x @ W^T onto a 50257-wide vocabulary, canonical: A = W (k-contiguous,
    # lda = k) and B = x^T (ldb = k) aligned, m = 50257 odd, C's pitch odd
    prob = Problem(m=50257, n=512, k=2048, ta=True, tb=False, a=1 << 30, lda=2048,
                   b=2 << 30, ldb=2048, c=3 << 30, ldc=50257)
    assert not prob.aligned and packing.wants_pack(prob)
    assert packing._jobs(prob) == [None, None]
    assert packing.extra_bytes(prob) == 8 * 50257 * 512            # C' written and read
    assert packing.workspace_floats(prob) == 50260 * 512
    # an aligned C of odd m is written in place: nothing extra at all
    ok = Problem(**{**prob.__dict__, "ldc": 50260, "b": (2 << 30) + 4})
    assert packing._c_in_place(ok) and packing._jobs(ok)[0] is None
    assert packing._jobs(ok)[1] is not None                       # B's base is off by 4 bytes


def test_when_it_applies(monkeypatch):
    big, _ = _problem(1023, 1025, 1021, False, False, 0, 0, 0, (1, 0, 0))
    assert not big.aligned and packing.wants_pack(big)
    assert not packing.wants_pack(big, "tf32x3")          # FP32 auto only
    aligned, _ = _problem(1024, 1024, 1024, False, False, 0, 0, 0, (0, 0, 0))
    assert aligned.aligned and not packing.wants_pack(aligned)
    small, _ = _problem(300, 300, 300, False, False, 1, 1, 1, (0, 0, 0))
    assert not packing.wants_pack(small)                  # copies too large a share
    deep, _ = _problem(256, 256, 65536, False, False, 1, 1, 1, (0, 0, 0))
    assert not packing.wants_pack(deep)                   # K-heavy: copies ~ the GEMM
    thin, _ = _problem(8, 4096, 4096, False, False, 1, 1, 1, (0, 0, 0))
    assert not packing.wants_pack(thin)
    batched = Problem(**{**big.__dict__, "batch": 2, "stride_a": 10 ** 7,
                         "stride_b": 10 ** 7, "stride_c": 10 ** 7})
    assert not packing.wants_pack(batched)
    monkeypatch.setenv("SGEMM_PACK", "0")
    assert not packing.wants_pack(big)


def test_huge_problem_falls_back_within_the_workspace_cap():
    prob, _ = _problem(20001, 20001, 20001, False, False, 0, 0, 0, (1, 0, 0))
    assert 4 * packing.workspace_floats(prob) > 512 << 20
    assert not packing.wants_pack(prob)


def test_pack_zero_params_opt_out_and_tuner_twins():
    from sgemm import dispatch, tune
    from sgemm.kernels import registry
    big, _ = _problem(1023, 1025, 1021, False, False, 0, 0, 0, (1, 0, 0))
    rung9 = registry.get("double_buffer")
    p = rung9.configs["wide"]
    assert packing.wants_pack(big, "ieee", rung9, p)
    assert not packing.wants_pack(big, "ieee", rung9, p.replace(pack=0))
    assert not p.replace(pack=0).basic_reasons()          # 0 is a legal value
    h200 = tune.DEVICE_MODELS["h200"]
    cands = tune.candidates(big, h200)
    packed = [c for c in cands if c.params.pack == 1 and packing.wants_pack(
        big, "ieee", c.spec, c.params)]
    assert packed and all(
        any(d.spec is c.spec and d.params == c.params.replace(pack=0) for d in cands)
        for c in packed)
    # an aligned problem gets no twins
    al, _ = _problem(1024, 1024, 1024, False, False, 0, 0, 0, (0, 0, 0))
    assert all(c.params.pack == 1 for c in tune.candidates(al, h200))
    # a table entry written with pack=0 comes back with it
    e = {"kernel": "double_buffer", "params": p.replace(pack=0).as_dict()}
    assert dispatch.entry_params(e).pack == 0
