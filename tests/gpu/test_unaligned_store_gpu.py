"""The unaligned store of 30_tile.cu's template (schemes tile, small and the
fused split-K's unsplit path): with C (or any operand) off 16-byte alignment
each warp parks its tile in shared memory and writes it back along m
(common.cuh, store_parked).  Every config, forced, on shapes that end inside
a warp tile, every transpose, beta == 0 on a NaN-poisoned C and beta != 0, a
strided batch; the padding around C must stay NaN.  Rung 9's configs run the
same checks in test_rung9_edges.py."""
from __future__ import annotations

import itertools

import pytest

from sgemm.kernels.registry import KERNELS

from .test_rung9_edges import _check

pytestmark = pytest.mark.gpu
pytest.importorskip("cupy")

CASES = [(name, cfg) for name in ("tile", "small") for cfg in KERNELS[name].configs]


@pytest.mark.parametrize("name,cfg", CASES, ids=[f"{n}@{c}" for n, c in CASES])
def test_unaligned_store_every_config(name, cfg):
    spec = KERNELS[name]
    p = spec.configs[cfg]
    shapes = [(p.BM + 1, p.BN + 3, 7), (3 * p.BM - 5, 2 * p.BN + 1, 40), (37, 129, 65)]
    for i, (m, n, k) in enumerate(shapes):
        for ta, tb in itertools.product((False, True), repeat=2):
            for beta in (0.0, 0.5):
                _check(cfg, m, n, k, ta, tb, False, beta, seed=i, spec=spec)
    _check(cfg, 2 * p.BM + 3, p.BN + 5, 33, True, False, False, -0.75, batch=3, seed=7,
           spec=spec)
