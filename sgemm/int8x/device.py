"""The integer engine's conversion and reconstruction kernels on CuPy arrays
(40_int8x.cu), step by step as reference.py emulates them.  The INT8 GEMMs
between them are not built yet: tests/gpu/test_int8x_gpu.py stands CuPy's
integer matmul in for them to check these kernels bit for bit.
"""
from __future__ import annotations

import math

import numpy as np

from ..kernels import utility as U
from . import moduli as M


def _launch(spec, grid, args, dev_id: int = 0):
    from ..runtime import device as devmod
    from ..runtime import launcher
    dev = devmod.info(dev_id)
    k = launcher.get_kernel(spec, spec.configs["default"], False, False, False, dev)
    import cupy
    launcher.launch(k, grid, 256, 0, cupy.cuda.get_current_stream().ptr, args)


def constants(n: int = U.INT8X_MODULI):
    """The kernels' int array: the moduli, then Garner's inverses row by row."""
    import cupy
    ms = M.moduli(n)
    inv = M.garner_inverses(ms)
    flat = list(ms) + [x for row in inv for x in row]
    return cupy.asarray(np.array(flat, np.int32))


def _as_rows(x, axis: int):
    """(rows, cols, row stride, column stride) in elements of the matrix whose
    rows are x's rows (axis=1) or x's columns (axis=0)."""
    st = [s // 4 for s in x.strides]
    if axis == 1:
        return x.shape[0], x.shape[1], st[0], st[1]
    return x.shape[1], x.shape[0], st[1], st[0]


def exponents(x, axis: int, bits: int):
    """(exponents per row (axis=1) or column (axis=0) of a 2-D float32 CuPy
    array, whether it holds Inf or NaN)."""
    import cupy
    rows, cols, sr, sc = _as_rows(x, axis)
    e = cupy.zeros(rows, cupy.int32)
    bad = cupy.zeros(1, cupy.int32)
    if rows:
        _launch(U.INT8X_EXPONENTS, (math.ceil(rows * 32 / 256), 1, 1),
                (np.int32(rows), np.int32(cols), x.data.ptr, sr, sc, np.int32(bits),
                 e.data.ptr, bad.data.ptr))
    return e, bool(int(bad[0]))


def residues(x, e, axis: int, mods, ld: int | None = None):
    """int8 planes (n, rows, ld): row r of X (rows of x for axis=1, columns
    for axis=0) scaled by 2^e_r and reduced modulo each modulus."""
    import cupy
    n = U.INT8X_MODULI
    rows, cols, sr, sc = _as_rows(x, axis)
    ld = ld or -(-max(cols, 1) // 16) * 16
    out = cupy.empty((n, rows, ld), cupy.int8)
    total = rows * ld
    if total:
        _launch(U.INT8X_RESIDUES, (max(1, min(math.ceil(total / 256), 65535)), 1, 1),
                (np.int32(rows), np.int32(cols), x.data.ptr, sr, sc, e.data.ptr, mods.data.ptr,
                 out.data.ptr, ld, rows * ld))
    return out


def garner(planes, mods, mu, nu, alpha: float = 1.0, beta: float = 0.0, c=None):
    """planes: int32 (n, m, ncols) residues of C' (C order: element (i, j) at
    [l, i, j]); returns C (float32, m x ncols) = alpha C' 2^-(mu_i+nu_j) + beta c."""
    import cupy
    n, m, ncols = planes.shape
    if n != U.INT8X_MODULI or planes.dtype != cupy.int32:
        raise ValueError(f"int8x.garner: planes must be int32 ({U.INT8X_MODULI}, m, n), got "
                         f"{planes.dtype} {planes.shape}")
    if beta != 0.0 and c is None:
        raise ValueError("int8x.garner: beta != 0 needs c")
    out = cupy.asfortranarray(c.astype(cupy.float32)) if c is not None else \
        cupy.empty((m, ncols), cupy.float32, order="F")
    colmajor = cupy.ascontiguousarray(planes.transpose(0, 2, 1))    # [l, j, i]: i contiguous
    total = m * ncols
    if total:
        _launch(U.INT8X_GARNER, (max(1, min(math.ceil(total / 256), 65535)), 1, 1),
                (np.int32(m), np.int32(ncols), colmajor.data.ptr, m, m * ncols, mods.data.ptr,
                 mu.data.ptr, nu.data.ptr, np.float32(alpha), np.float32(beta), out.data.ptr,
                 m))
    return out
