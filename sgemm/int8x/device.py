"""The integer engine on CuPy arrays, step by step as reference.py emulates
them, and the whole pipeline in one call:

    C = device.gemm(a, b, c, alpha, beta)       # float32 CuPy arrays

exponents (40_int8x.cu) -> int8 residue planes (40_int8x.cu) -> INT8 GEMMs
of all moduli in one launch (42_int8_wgmma.cu on sm_90a, 41_int8_mma.cu
elsewhere) -> Garner reconstruction with alpha/beta (40_int8x.cu).  Every
step after the scaling is integer arithmetic, so the result equals
reference.gemm(...) rounded to float32 bit for bit
(tests/gpu/test_int8x_gpu.py).

Workspace (allocated per call from CuPy's pool, freed on return): the
residue planes, n_moduli * (m + n) * K16 bytes (K16 = k rounded up to 16),
and the INT32 planes of C', 4 * n_moduli * m * n bytes -- 32 m n bytes for 8
moduli, the larger term unless k is deep; `workspace_bytes` says how much.

Not a public entry point yet: sgemm.gemm's precision modes do not reach it
(docs/notes/int8x.md lists what that wiring needs).
"""
from __future__ import annotations

import math

import numpy as np

from ..kernels import utility as U
from . import moduli as M


class NonFiniteInput(ValueError):
    """Inf or NaN in a or b: they have no integer form; FP32 must take the call."""


def _launch(spec, grid, args, p=None):
    """One launch on CuPy's current device and stream."""
    import cupy
    from ..runtime import device as devmod
    from ..runtime import launcher
    p = p or spec.configs["default"]
    dev = devmod.info(cupy.cuda.Device().id)
    k = launcher.get_kernel(spec, p, False, False, False, dev)
    launcher.launch(k, grid, spec.block(p), spec.dynamic_smem(p),
                    cupy.cuda.get_current_stream().ptr, args)


_constants: dict[tuple[int, int], object] = {}


def constants(n: int = U.INT8X_MODULI):
    """The kernels' int array: the moduli, then Garner's inverses row by row
    (one copy per device and n, kept)."""
    import cupy
    key = (cupy.cuda.Device().id, n)
    arr = _constants.get(key)
    if arr is None:
        ms = M.moduli(n)
        inv = M.garner_inverses(ms)
        flat = list(ms) + [x for row in inv for x in row]
        arr = _constants[key] = cupy.asarray(np.array(flat, np.int32))
    return arr


def _as_rows(x, axis: int):
    """(rows, cols, row stride, column stride) in elements of the matrix whose
    rows are x's rows (axis=1) or x's columns (axis=0)."""
    st = [s // 4 for s in x.strides]
    if axis == 1:
        return x.shape[0], x.shape[1], st[0], st[1]
    return x.shape[1], x.shape[0], st[1], st[0]


def padded_k(k: int) -> int:
    """The residue planes' row length: k rounded up to the 16 bytes of one
    cp.async chunk (at least 16), zeros past k."""
    return -(-max(k, 1) // U.INT8_K_ALIGN) * U.INT8_K_ALIGN


def workspace_bytes(m: int, n: int, k: int, n_moduli: int = U.INT8X_MODULI) -> int:
    """Device memory gemm() allocates besides its output: residue planes of A
    and B, INT32 planes of C', exponents."""
    return n_moduli * ((m + n) * padded_k(k) + 4 * m * n) + 4 * (m + n)


def exponents(x, axis: int, bits: int):
    """(exponents per row (axis=1) or column (axis=0) of a 2-D float32 CuPy
    array, whether it holds Inf or NaN).  The flag is read back to the host
    (one synchronisation)."""
    import cupy
    rows, cols, sr, sc = _as_rows(x, axis)
    e = cupy.zeros(rows, cupy.int32)
    bad = cupy.zeros(1, cupy.int32)
    if rows:
        _launch(U.INT8X_EXPONENTS, (math.ceil(rows * 32 / 256), 1, 1),
                (np.int32(rows), np.int32(cols), x.data.ptr, sr, sc, np.int32(bits),
                 e.data.ptr, bad.data.ptr))
    return e, bool(int(bad[0]))


RESIDUE_TILE = (32, 128)      # rows x columns of X per block (40_int8x.cu, i8x::TR, TC)


def residue_grid(rows: int, ld: int) -> tuple[int, int, int]:
    """int8x_residues' grid: one block per 32 x 128 tile, row tiles in x,
    column tiles (up to ld, the zero padding included) in y."""
    return (math.ceil(rows / RESIDUE_TILE[0]), math.ceil(ld / RESIDUE_TILE[1]), 1)


def residues(x, e, axis: int, mods, ld: int | None = None):
    """int8 planes (n, rows, ld): row r of X (rows of x for axis=1, columns
    for axis=0) scaled by 2^e_r and reduced modulo each modulus; columns
    [cols, ld) are zeros."""
    import cupy
    n = U.INT8X_MODULI
    rows, cols, sr, sc = _as_rows(x, axis)
    ld = ld or padded_k(cols)
    if ld % U.INT8_K_ALIGN or ld < cols:
        raise ValueError(f"int8x.residues: ld={ld} must be a multiple of {U.INT8_K_ALIGN} "
                         f"and >= {cols}")
    if math.ceil(ld / RESIDUE_TILE[1]) > 65535:
        raise ValueError(f"int8x.residues: ld={ld} needs more than 65535 column tiles of "
                         f"{RESIDUE_TILE[1]} (k above {65535 * RESIDUE_TILE[1]})")
    out = cupy.empty((n, rows, ld), cupy.int8)
    if rows:
        _launch(U.INT8X_RESIDUES, residue_grid(rows, ld),
                (np.int32(rows), np.int32(cols), x.data.ptr, sr, sc, e.data.ptr, mods.data.ptr,
                 out.data.ptr, ld, rows * ld))
    return out


def gemm_spec(kernel: str = "auto"):
    """The INT8 GEMM spec for the current device: "auto" is wgmma
    (42_int8_wgmma.cu) on sm_90a and mma.sync (41_int8_mma.cu) elsewhere;
    "wgmma" or "mma" force one (wgmma only on sm_90a)."""
    import cupy
    from ..runtime import device as devmod
    return U.int8_gemm_spec(devmod.info(cupy.cuda.Device().id).arch, kernel)


def int8_gemm(pa, pb, mods, config: str | None = None, kernel: str = "auto"):
    """C'_l = A'_l B'_l for every plane l, exactly modulo p_l (exactly for
    K <= 131008 with mma.sync, 131056 with wgmma; deeper K is folded modulo
    p_l inside the kernel).

    pa: int8 (n, m, K) C-contiguous (rows of A'_l, k contiguous), pb: int8
    (n, ncols, K) (columns of B'_l); K a multiple of 16, zeros past the real
    depth.  mods: constants(); the kernel reads p_l = mods[l].  kernel:
    "auto" (wgmma on sm_90a, else mma), "mma" or "wgmma"; config: one of that
    kernel's configs (None: its "default").  Returns int32 (n, m, ncols)
    whose planes are column-major (strides (m ncols, 1, m) elements): what
    garner() reads without a copy."""
    import cupy
    spec = gemm_spec(kernel)
    config = config or "default"
    if config not in spec.configs:
        raise ValueError(f"int8x.int8_gemm: config {config!r} is not one of {spec.name}'s "
                         f"{sorted(spec.configs)}")
    p = spec.configs[config]
    for name, x in (("pa", pa), ("pb", pb)):
        if x.dtype != cupy.int8 or x.ndim != 3 or not x.flags.c_contiguous:
            raise ValueError(f"int8x.int8_gemm: {name} must be C-contiguous int8 (planes, rows, "
                             f"K), got {x.dtype} {x.shape}")
    n, m, kp = pa.shape
    if pb.shape[0] != n or pb.shape[2] != kp:
        raise ValueError(f"int8x.int8_gemm: planes {pa.shape} and {pb.shape} do not match")
    if kp % U.INT8_K_ALIGN:
        raise ValueError(f"int8x.int8_gemm: K={kp} must be padded to a multiple of "
                         f"{U.INT8_K_ALIGN}")
    if n > mods.size:
        raise ValueError(f"int8x.int8_gemm: {n} planes but {mods.size} constants")
    ncols = pb.shape[1]
    from ..runtime import device as devmod
    why = spec.can_implement(p, devmod.info(cupy.cuda.Device().id).smem_optin)
    if why:
        raise ValueError(f"int8x.int8_gemm: {spec.name} config {config!r} cannot run here: " +
                         "; ".join(why))
    buf = cupy.empty((n, ncols, m), cupy.int32)     # plane l: column j at [l, j, :]
    if buf.size:
        _launch(spec, spec.grid_for(m, ncols, n, p),
                (np.int32(m), np.int32(ncols), np.int32(kp),
                 pa.data.ptr, kp, m * kp, pb.data.ptr, kp, ncols * kp,
                 mods.data.ptr, np.int32(p.swizzle), buf.data.ptr, m, m * ncols), p)
    return buf.transpose(0, 2, 1)


def garner_grid(m: int, ncols: int) -> tuple[int, int, int]:
    """int8x_garner's grid: blocks of 256 rows in x, one column each in y
    (at most 65535; the kernel loops over the rest)."""
    return (math.ceil(m / 256), min(ncols, 65535), 1)


def garner(planes, mods, mu, nu, alpha: float = 1.0, beta: float = 0.0, c=None):
    """planes: int32 (n, m, ncols) residues of C' (element (i, j) at
    [l, i, j]; column-major planes as int8_gemm returns them are read in
    place, any other layout is copied); returns C (float32, m x ncols,
    Fortran order) = alpha C' 2^-(mu_i+nu_j) + beta c."""
    import cupy
    n, m, ncols = planes.shape
    if n != U.INT8X_MODULI or planes.dtype != cupy.int32:
        raise ValueError(f"int8x.garner: planes must be int32 ({U.INT8X_MODULI}, m, n), got "
                         f"{planes.dtype} {planes.shape}")
    if beta != 0.0 and c is None:
        raise ValueError("int8x.garner: beta != 0 needs c")
    out = cupy.asfortranarray(c.astype(cupy.float32)) if c is not None else \
        cupy.empty((m, ncols), cupy.float32, order="F")
    st = [s // 4 for s in planes.strides]
    if not (st[1] == 1 and st[2] >= m and st[0] >= st[2] * ncols):
        planes = cupy.ascontiguousarray(planes.transpose(0, 2, 1)).transpose(0, 2, 1)
        st = [s // 4 for s in planes.strides]
    if m * ncols:
        _launch(U.INT8X_GARNER, garner_grid(m, ncols),
                (np.int32(m), np.int32(ncols), planes.data.ptr, st[2], st[0], mods.data.ptr,
                 mu.data.ptr, nu.data.ptr, np.float32(alpha), np.float32(beta), out.data.ptr,
                 m))
    return out


def gemm(a, b, c=None, alpha: float = 1.0, beta: float = 0.0, *,
         n_moduli: int = U.INT8X_MODULI, config: str | None = None, kernel: str = "auto"):
    """C = alpha a @ b + beta c through the integer pipeline (Ozaki scheme II,
    8 moduli: FP32-level accuracy for k up to a few thousand, see
    moduli.budget).  a (m x k), b (k x n), c (m x n): float32 CuPy arrays of
    any strides (a column-major problem's Fortran-ordered operands are read
    in place).  kernel/config choose the INT8 GEMM (int8_gemm).  Returns a
    new Fortran-ordered float32 (m, n) array; c is never read when
    beta == 0.

    alpha == 0 or k == 0 give beta c without reading a or b (netlib).  Inf or
    NaN in a or b raise NonFiniteInput: they have no integer form, and the
    FP32 path must take the call (checked with one device-to-host read).
    Rows of a or columns of b whose entries span more than about 2^25 lose
    their small entries (reference.py): the caller decides whether to go to
    FP32 instead."""
    import cupy
    if n_moduli != U.INT8X_MODULI:
        raise ValueError(f"int8x.gemm: n_moduli={n_moduli}: the kernels are built for "
                         f"{U.INT8X_MODULI}")
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"int8x.gemm: shapes {a.shape} and {b.shape} do not multiply")
    for name, x in (("a", a), ("b", b)) + ((("c", c),) if c is not None else ()):
        if x.dtype != cupy.float32:
            raise ValueError(f"int8x.gemm: {name} must be float32, got {x.dtype}")
    m, k = a.shape
    n = b.shape[1]
    if c is not None and c.shape != (m, n):
        raise ValueError(f"int8x.gemm: c has shape {c.shape}, the product {(m, n)}")
    if beta != 0.0 and c is None:
        raise ValueError("int8x.gemm: beta != 0 needs c")
    if m == 0 or n == 0 or k == 0 or alpha == 0.0:
        if beta == 0.0 or c is None:
            return cupy.zeros((m, n), cupy.float32, order="F")
        return cupy.asfortranarray(np.float32(beta) * c)
    bud = M.budget(n_moduli, k)
    mu, bad_a = exponents(a, 1, bud.alpha)
    nu, bad_b = exponents(b, 0, bud.beta)
    if bad_a or bad_b:
        raise NonFiniteInput("int8x.gemm: Inf or NaN in " + ("a" if bad_a else "b") +
                             " has no integer form; use the FP32 path")
    mods = constants(n_moduli)
    pa = residues(a, mu, 1, mods)
    pb = residues(b, nu, 0, mods)
    planes = int8_gemm(pa, pb, mods, config, kernel)
    del pa, pb                                  # back to the pool before Garner's output
    return garner(planes, mods, mu, nu, alpha, beta, c if beta != 0.0 else None)
