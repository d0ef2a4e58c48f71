"""Shared GPU-test helpers: fresh random inputs, fp64 reference, NaN poison."""
from __future__ import annotations

import numpy as np


def host(x) -> np.ndarray:
    """NumPy float64 copy of a CuPy, PyTorch or NumPy array."""
    if hasattr(x, "get"):
        x = x.get()
    elif type(x).__module__.startswith("torch"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def rel_err(out, ref) -> float:
    """max |out - ref| / max |ref| (inf if out has NaN where ref has none)."""
    out = host(out)
    ref = host(ref)
    if np.isnan(out).any() and not np.isnan(ref).any():
        return float("inf")
    scale = max(np.abs(ref).max(), 1e-30) if ref.size else 1.0
    return float(np.abs(out - ref).max() / scale) if ref.size else 0.0


def make(cp, rng, shape, order="C", pad=0, offset=0):
    """A float32 CuPy view of `shape` with the given order, row/column pitch
    padding and element offset (offset != 0 breaks 16-byte alignment)."""
    r, c = shape
    if order == "C":
        base = cp.asarray(rng.standard_normal(r * (c + pad) + offset + 1).astype(np.float32))
        v = base[offset:offset + r * (c + pad)].reshape(r, c + pad)[:, :c]
    else:
        base = cp.asarray(rng.standard_normal((r + pad) * c + offset + 1).astype(np.float32))
        v = base[offset:offset + (r + pad) * c].reshape(c, r + pad)[:, :r].T
    return v


def ref_gemm(a, b, c, alpha, beta, ta, tb):
    A, B = host(a), host(b)
    A = A.T if ta else A
    B = B.T if tb else B
    out = alpha * (A @ B)
    if beta != 0 and c is not None:
        out = out + beta * host(c)
    return out
