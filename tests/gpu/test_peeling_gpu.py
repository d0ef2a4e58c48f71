"""The peel scheme (sgemm/peeling.py) on the GPU against an fp64 reference:
the main block and its strips through kernel="auto", every transpose,
unaligned and aligned operands, alpha/beta with NaN-poisoned C, memory
around C untouched (the checks of test_packing_gpu._run)."""
from __future__ import annotations

import itertools

import pytest

from .test_packing_gpu import _run

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

TRANS = list(itertools.product((False, True), repeat=2))


@pytest.fixture(autouse=True)
def _peel_where_it_applies(monkeypatch):
    """The cut forced where the shape allows it (whether it pays is the cost
    model's call, tested on the CPU): these tests check what it computes."""
    monkeypatch.setenv("SGEMM_PEEL", "always")


@pytest.mark.parametrize("trans", TRANS, ids=lambda t: "".join("T" if x else "N" for x in t))
@pytest.mark.parametrize("shape,offset", [((2047, 2049, 515), 1), ((2049, 2047, 777), 0)],
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_peel_vs_fp64(shape, offset, trans):
    p = _run(*shape, *trans, offset=offset, seed=sum(shape), expect_pack=None)
    assert p.scheme.startswith("peel+"), p


def test_both_strips_alpha_beta():
    p = _run(2049, 2049, 777, False, True, offset=0, alpha=-0.5, beta=2.0, seed=9,
             expect_pack=None)
    assert p.scheme.startswith("peel+") and len(p.launches) >= 3, p


def test_not_peeled_below_a_wave():
    p = _run(1023, 1025, 1021, False, False, seed=10, expect_pack=None)
    assert not p.scheme.startswith("peel+"), p
