"""Rung 9 (double_buffer) on the edges of C, every named config forced.

Blocks on the bottom/right edge of C may compute the last full tile inside C
(shifted back, unguarded loop) and store only the rows/columns they own; the
others take the guarded EDGE instantiation (09_double_buffer.cu).  These
shapes hit each case: one row/column past a tile (BM+1), odd sizes that forbid
the aligned shift (M % 4 != 0), 1000 (M % 4 == 0: aligned shift), M < BM (no
shift possible), on every transpose, aligned and unaligned operands, beta == 0
with NaN-poisoned C (an unwritten element shows up) and beta != 0 (a row
written by two blocks would be scaled twice), and a strided batch.  C sits in
a NaN-filled buffer with padding rows: only the m x n block may change.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from sgemm.kernels.registry import KERNELS
from sgemm.problem import Problem
from sgemm.runtime import device as sgdev
from sgemm.runtime import launcher

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

SPEC = KERNELS["double_buffer"]
TILES = SPEC.configs          # "wide" (32x256) shifts along m by 1..31 rows
CONFIGS = list(TILES)


def _shapes(bm: int, bn: int) -> list[tuple[int, int, int]]:
    return [(bm + 1, bn + 1, 33),            # one row/column past a tile
            (2 * bm - 3, 2 * bn - 3, 40),    # odd: aligned m shift impossible
            (1000, 1000, 72),                # M % 4 == 0: shifted on both sides
            (1021, 1000, 65),                # odd M, N % 4 == 0
            (1000, 1021, 17),
            (bm - 5, 2 * bn + 4, 50),        # M < BM: guarded along m only
            (3 * bm + 4, bn - 4, 24)]        # N < BN


class Buf:
    """rows x cols column-major matrix (pitch ld) at element offset off of a
    NaN-filled buffer, batch entries stride apart."""

    def __init__(self, rows, cols, ld, off, batch=1, stride=0):
        self.rows, self.cols, self.ld, self.off = rows, cols, ld, off
        self.batch, self.stride = batch, stride or ld * cols
        self.buf = cp.full(off + self.stride * (batch - 1) + ld * cols + 8, np.nan,
                           dtype=cp.float32)

    def view(self, b=0):
        s = self.off + b * self.stride
        return self.buf[s:s + self.ld * self.cols].reshape(self.cols, self.ld)

    def fill(self, rng, entries):
        for b in range(entries):
            self.view(b)[:, :self.rows] = cp.asarray(
                rng.standard_normal((self.cols, self.rows)), dtype=cp.float32)

    def mat(self, b=0):
        """float64 rows x cols matrix of entry b."""
        return self.view(b)[:, :self.rows].T.astype(cp.float64)

    @property
    def ptr(self):
        return self.buf.data.ptr + 4 * self.off


def _check(cfg, m, n, k, ta, tb, aligned, beta, batch=1, seed=0, spec=SPEC):
    p = spec.configs[cfg]
    rng = np.random.default_rng(seed)
    dev = sgdev.info(0)
    ar, ac = (k, m) if ta else (m, k)
    br, bc = (n, k) if tb else (k, n)

    def ld(rows, extra):   # aligned: padded to a multiple of 4; else odd pitch
        return -(-rows // 4) * 4 + 4 if aligned else rows + extra
    off = 0 if aligned else 1
    lda, ldb, ldc = ld(ar, 0), ld(br, 1), ld(m, 3)
    sa = lda * ac + (4 if aligned else 5)
    sc = ldc * n + (8 if aligned else 3)
    A = Buf(ar, ac, lda, off, batch, sa)
    B = Buf(br, bc, ldb, 0 if aligned else 2)            # broadcast over the batch
    C = Buf(m, n, ldc, 0 if aligned else 3, batch, sc)
    A.fill(rng, batch)
    B.fill(rng, 1)
    if beta != 0:
        C.fill(rng, batch)
    c0 = [C.mat(b) for b in range(batch)] if beta != 0 else None
    alpha = 1.5
    prob = Problem(m=m, n=n, k=k, ta=ta, tb=tb, a=A.ptr, lda=lda, b=B.ptr, ldb=ldb,
                   c=C.ptr, ldc=ldc, alpha=alpha, beta=beta, batch=batch,
                   stride_a=sa if batch > 1 else 0, stride_b=0,
                   stride_c=sc if batch > 1 else 0)
    assert prob.aligned == aligned
    launcher.run(spec, p, prob, dev, 0)   # the legacy stream, ordered after the fills
    cp.cuda.Device().synchronize()
    what = (f"{spec.name}@{cfg} {m}x{n}x{k} ta={ta} tb={tb} aligned={aligned} beta={beta} "
            f"batch={batch}")
    for b in range(batch):
        opa = A.mat(b).T if ta else A.mat(b)
        opb = B.mat(0).T if tb else B.mat(0)
        ref = alpha * (opa @ opb) + (beta * c0[b] if beta != 0 else 0)
        out = C.mat(b)
        assert bool(cp.isfinite(out).all()), f"unwritten or NaN element: {what}"
        err = float(cp.linalg.norm(out - ref) / cp.linalg.norm(ref))
        assert err < 1e-5, f"err {err:.2e}: {what}"
    # nothing outside the m x n blocks was written (the padding is still NaN)
    mask = cp.ones(C.buf.shape, dtype=bool)
    for b in range(batch):
        s = C.off + b * C.stride
        mask[s:s + ldc * n].reshape(n, ldc)[:, :m] = False
    assert bool(cp.isnan(C.buf[mask]).all()), f"wrote outside m x n: {what}"


@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("aligned", [True, False], ids=["aligned", "unaligned"])
def test_rung9_edge_shapes(cfg, aligned):
    p = TILES[cfg]
    for i, (m, n, k) in enumerate(_shapes(p.BM, p.BN)):
        for ta, tb in itertools.product((False, True), repeat=2):
            for beta in (0.0, 0.5):
                _check(cfg, m, n, k, ta, tb, aligned, beta, seed=i)


@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("aligned", [True, False], ids=["aligned", "unaligned"])
def test_rung9_edge_batched(cfg, aligned):
    p = TILES[cfg]
    for ta, tb in itertools.product((False, True), repeat=2):
        _check(cfg, 2 * p.BM + 4, p.BN + 8, 45, ta, tb, aligned, -0.75, batch=3, seed=9)
