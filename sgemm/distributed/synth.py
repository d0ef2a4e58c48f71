"""Deterministic test matrices defined element by element, so that any rank
can build its own local blocks in place (no scatter from a root: data is
born resident on its GPU) and any process can recompute any row of A or
column of B to check sampled entries of C.

Element (i, j) of matrix ``seed`` is a 32-bit integer hash of (i, j, seed)
mapped to a multiple of 2^-23 in [-1, 1): exactly representable in float32,
so NumPy on the host and CuPy on a GPU produce bit-identical values.
"""
from __future__ import annotations

import numpy as np

from .layout import BlockCyclic, GemmLayout

_U = np.uint32


def values(xp, rows, cols, seed: int):
    """Matrix of hash values for global ``rows`` x ``cols`` indices."""
    r = xp.asarray(rows).astype(xp.uint32).reshape(-1, 1)
    c = xp.asarray(cols).astype(xp.uint32).reshape(1, -1)
    h = (r * _U(0x9E3779B1)) ^ (c * _U(0x85EBCA77) + _U((seed * 0x27D4EB2F + 0x165667B1) & 0xFFFFFFFF))
    h ^= h >> _U(16)
    h *= _U(0x7FEB352D)
    h ^= h >> _U(15)
    h *= _U(0x846CA68B)
    h ^= h >> _U(16)
    return (h >> _U(8)).astype(xp.float32) * xp.float32(2.0 ** -23) - xp.float32(1.0)


def fill_local(xp, desc: BlockCyclic, rank: int, seed: int, out=None, chunk_rows: int = 2048):
    """This rank's local array of matrix ``seed`` under ``desc`` (built in
    row chunks to bound the integer temporaries)."""
    shape = desc.local_shape(rank)
    if out is None:
        out = xp.empty(shape, dtype=xp.float32)
    rows = desc.row_indices(rank)
    cols = xp.asarray(desc.col_indices(rank))
    for s in range(0, shape[0], chunk_rows):
        out[s:s + chunk_rows] = values(xp, xp.asarray(rows[s:s + chunk_rows]), cols, seed)
    return out


def global_matrix(shape, seed: int) -> np.ndarray:
    return values(np, np.arange(shape[0]), np.arange(shape[1]), seed)


def reference_entries(layout: GemmLayout, ij, seed_a: int, seed_b: int, alpha: float = 1.0):
    """float64 reference alpha * (op(A) @ op(B))[i, j] for each (i, j), and the
    scale sum_k |alpha * a_ik * b_kj| each error should be measured against."""
    k = np.arange(layout.k)
    ref, scale = [], []
    for i, j in ij:
        if layout.trans_a:
            arow = values(np, k, [i], seed_a)[:, 0]
        else:
            arow = values(np, [i], k, seed_a)[0]
        if layout.trans_b:
            bcol = values(np, [j], k, seed_b)[0]
        else:
            bcol = values(np, k, [j], seed_b)[:, 0]
        a64, b64 = arow.astype(np.float64), bcol.astype(np.float64)
        ref.append(alpha * float(a64 @ b64))
        scale.append(abs(alpha) * float(np.abs(a64) @ np.abs(b64)))
    return np.array(ref), np.array(scale)


def check_samples(xp, layout: GemmLayout, rank: int, c_loc, seed_a: int, seed_b: int,
                  alpha: float = 1.0, nsamples: int = 16, rng_seed: int = 0) -> float:
    """Largest |C - ref| / scale over ``nsamples`` random entries of this
    rank's local C (beta == 0 runs).  0.0 when the rank holds no C."""
    m_loc, n_loc = layout.c.local_shape(rank)
    if m_loc == 0 or n_loc == 0 or layout.k == 0:
        return 0.0
    rng = np.random.default_rng(rng_seed + 7919 * rank)
    li = rng.integers(0, m_loc, nsamples)
    lj = rng.integers(0, n_loc, nsamples)
    gi = layout.c.row_indices(rank)[li]
    gj = layout.c.col_indices(rank)[lj]
    got = c_loc[xp.asarray(li), xp.asarray(lj)]
    got = got.get() if hasattr(got, "get") else np.asarray(got)
    ref, scale = reference_entries(layout, list(zip(gi.tolist(), gj.tolist())), seed_a, seed_b,
                                   alpha)
    return float(np.max(np.abs(got.astype(np.float64) - ref) / np.maximum(scale, 1e-30)))
