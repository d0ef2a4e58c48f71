"""The pack scheme (sgemm/packing.py) on the GPU against an fp64 reference:
unaligned operands copied to aligned panels, every transpose, odd offsets and
pitches, C-only misalignment, alpha/beta with NaN-poisoned C, the split-K
inner scheme whose reduction writes C directly, memory around C untouched,
and the plan cache reusing a pack plan on other arrays."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import sgemm

from .reference import make, ref_gemm, rel_err

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

TRANS = list(itertools.product((False, True), repeat=2))


@pytest.fixture(autouse=True)
def _rule_only(monkeypatch):
    """The pack scheme forced where it applies (SGEMM_PACK=always: whether
    it pays is the cost model's call, tested on the CPU), no peel cut, and no
    tuned table (an entry may opt out with pack=0)."""
    monkeypatch.setenv("SGEMM_PACK", "always")
    monkeypatch.setenv("SGEMM_PEEL", "0")
    monkeypatch.setenv("SGEMM_TUNED", "0")


def _view(base, shape, order, pad, offset):
    """The same view make() builds, on any 1-D base (so a copy can be viewed)."""
    r, c = shape
    if order == "C":
        return base[offset:offset + r * (c + pad)].reshape(r, c + pad)[:, :c]
    return base[offset:offset + (r + pad) * c].reshape(c, r + pad)[:, :r].T


def _run(m, n, k, ta, tb, *, offset=1, pad=0, order="C", alpha=1.0, beta=0.0, seed=0,
         c_offset=None, expect_pack=True):
    rng = np.random.default_rng(seed)
    a = make(cp, rng, (k, m) if ta else (m, k), order, pad, offset)
    b = make(cp, rng, (n, k) if tb else (k, n), order, pad, offset)
    co = offset if c_offset is None else c_offset
    cbase = cp.asarray(rng.standard_normal((m + pad) * (n + pad) + co + 1).astype(np.float32))
    c = _view(cbase, (m, n), order, pad, co)
    ref = ref_gemm(a, b, c.copy(), alpha, beta, ta, tb)
    if beta == 0:
        c[...] = cp.nan                    # beta == 0 must not read C
    before = cbase.copy()
    p = sgemm.plan(a, b, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb)
    if expect_pack is not None:
        assert p.scheme.startswith("pack+") == expect_pack, p
    out = p.execute()
    cp.cuda.Device().synchronize()
    err = rel_err(out, ref)
    assert err < 2e-5 * max(1.0, (k / 4096) ** 0.5), ((m, n, k, ta, tb), p, err)
    # nothing outside the m x n view of C was written
    _view(cbase, (m, n), order, pad, co)[...] = 0
    _view(before, (m, n), order, pad, co)[...] = 0
    assert bool(cp.all(cbase == before)), "pack scheme wrote outside C"
    return p


@pytest.mark.parametrize("trans", TRANS, ids=lambda t: "".join("T" if x else "N" for x in t))
@pytest.mark.parametrize("shape", [(1023, 1025, 1021), (1000, 1001, 999), (770, 1030, 900)],
                         ids=lambda s: "x".join(map(str, s)))
def test_pack_vs_fp64(shape, trans):
    _run(*shape, *trans, seed=sum(shape))


@pytest.mark.parametrize("offset,pad,order", [(0, 1, "C"), (3, 0, "F"), (2, 3, "F"),
                                              (0, 0, "C")])
def test_pitches_and_orders(offset, pad, order):
    # (0, 0, "C") with odd n: the row pitch 1021 alone breaks alignment
    _run(1024, 1021, 1020, False, True, offset=offset, pad=pad, order=order, seed=pad)


def test_alpha_beta_and_c_only_misaligned():
    _run(1023, 1025, 1021, True, False, alpha=-0.75, beta=0.5, seed=3)
    # A and B aligned (offset 0, multiples of 4), only C shifted by one float
    _run(1024, 1024, 1024, False, False, offset=0, c_offset=1, alpha=2.0, beta=-1.0, seed=4)


@pytest.mark.parametrize("trans,order", [((False, True), "C"), ((True, False), "F")],
                         ids=["NT-C", "TN-F"])
def test_aligned_operands_of_odd_extent_stay_in_place(trans, order):
    # m and n odd, A's and B's pitches K = 1024 (k-contiguous in both), C's
    # pitch odd: nothing is copied, the GEMM writes C' and the epilogue C
    p = _run(1023, 1021, 1024, *trans, offset=0, order=order, alpha=1.5, beta=0.5, seed=9)
    assert [launch.role for launch in p.launches].count("copy") == 0, p


def test_inner_split_k_reduces_into_c():
    p = _run(512, 512, 4096, False, False, beta=0.5, seed=5)
    assert p.scheme in ("pack+splitk", "pack+direct", "pack+splitk_fused"), p
    if p.scheme == "pack+splitk":          # no C': the reduction is the last launch
        assert p.launches[-1].role == "epilogue"


def test_off_switch_and_below_threshold(monkeypatch):
    monkeypatch.setenv("SGEMM_PACK", "1")          # the cost model decides; correctness only
    _run(300, 301, 299, False, False, seed=6, expect_pack=None)
    monkeypatch.setenv("SGEMM_PACK", "0")
    _run(1023, 1025, 1021, False, False, seed=7, expect_pack=False)


def test_plan_cache_reuses_pack_plan_on_new_arrays():
    rng = np.random.default_rng(8)
    for seed in range(3):
        a = make(cp, rng, (1023, 1021), "C", 0, 1)
        b = make(cp, rng, (1021, 1025), "C", 0, 1)
        ref = ref_gemm(a, b, None, 1.0, 0.0, False, False)
        out = sgemm.gemm(a, b)
        cp.cuda.Device().synchronize()
        assert rel_err(out, ref) < 2e-5, seed
