"""The peel scheme's cut (sgemm/peeling.py) on the CPU: the main block and the
strips, run as separate problems on views of flat memory, must cover C
exactly once and give alpha*op(A)op(B) + beta*C; and when the cut applies."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_packing import _problem, _read

from sgemm import peeling
from sgemm.tune import DEVICE_MODELS

H200 = DEVICE_MODELS["h200"]


def _run(mem, prob):
    """What any kernel does for a problem: C = alpha*op(A)op(B) + beta*C."""
    A = _read(mem, prob.a // 4, prob.lda, prob.ta, prob.m, prob.k)
    B = _read(mem, prob.b // 4, prob.ldb, not prob.tb, prob.n, prob.k).T
    i, j = np.meshgrid(np.arange(prob.m), np.arange(prob.n), indexing="ij")
    off = prob.c // 4 + i + j * prob.ldc
    mem[off] = prob.alpha * (A @ B) + prob.beta * mem[off]
    return off


@pytest.mark.parametrize("shape,trans", list(itertools.product(
    [(130, 140, 9), (129, 128, 5), (128, 131, 7), (300, 270, 4)],
    itertools.product((False, True), repeat=2))))
def test_pieces_cover_c_once(shape, trans, monkeypatch):
    monkeypatch.setattr(peeling, "PEEL_UNIT", 64)    # small shapes, same arithmetic
    m, n, k = shape
    prob, end = _problem(m, n, k, *trans, 1, 2, 3, (0, 1, 0))
    rng = np.random.default_rng(m + n)
    mem = rng.standard_normal(end + 8)
    want = mem.copy()
    _run(want, prob)
    main, strips = peeling.parts(prob)
    for whole, cut in ((m, main.m), (n, main.n)):   # cut to 64s, or left alone (rest > 16)
        assert cut % 64 == 0 or (cut == whole and whole % 64 > peeling.PEEL_MAX)
    assert all(min(s.m, s.n) <= peeling.PEEL_MAX for s in strips)
    count = np.zeros(end + 8, dtype=int)
    for piece in [main] + strips:
        count[_run(mem, piece)] += 1
    c_off = _run(np.zeros(end + 8), prob)
    assert (count[c_off] == 1).all() and count.sum() == m * n   # each element once
    np.testing.assert_allclose(mem, want, rtol=1e-12, atol=1e-12)


def _canon(m, n, k):
    from sgemm.bench.sizes import Shape
    from sgemm.tune import canonical
    return canonical(Shape(m, n, k))


def test_when_it_applies(monkeypatch):
    # 1025 rows: 32 tiles of 256x128 after the cut, under a wave -> not peeled
    # (measured slower than the whole problem)
    assert not peeling.wants_peel(_canon(1023, 1025, 1021), H200)
    # 2049^2: 153 tiles (two waves) against 128 -> peeled, both strips
    main, strips = peeling.parts(_canon(2049, 2049, 2049))
    assert (main.m, main.n) == (2048, 2048) and len(strips) == 2
    assert peeling.wants_peel(_canon(2049, 2049, 2049), H200)
    # 2049 rows, 2047 columns: 8 x 16 tiles after the cut, one wave -> peeled
    assert peeling.wants_peel(_canon(2047, 2049, 2045), H200)
    # 4097 columns: 528 or 512 tiles are four waves either way -> not peeled
    assert not peeling.wants_peel(_canon(4097, 4095, 4093), H200)
    # remainders over 16, aligned whole tiles, batches: never
    assert not peeling.wants_peel(_canon(3001, 2999, 3003), H200)
    assert not peeling.wants_peel(_canon(2048, 2048, 2048), H200)
    from sgemm.problem import Problem
    p = _canon(2049, 2049, 2049)
    assert not peeling.wants_peel(Problem(**{**p.__dict__, "batch": 2}), H200)
    assert not peeling.wants_peel(p, H200, "tf32x3")
    monkeypatch.setenv("SGEMM_PEEL", "0")
    assert not peeling.wants_peel(p, H200)
    # forced: wherever the shape allows the cut, never where it does not
    monkeypatch.setenv("SGEMM_PEEL", "always")
    assert peeling.wants_peel(_canon(4097, 4095, 4093), H200)
    assert not peeling.wants_peel(_canon(1023, 1025, 1021), H200)
    assert not peeling.wants_peel(_canon(3001, 2999, 3003), H200)
