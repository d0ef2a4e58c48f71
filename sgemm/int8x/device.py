"""The integer engine on CuPy arrays, step by step as reference.py emulates
them (runner.py puts the steps together: ``runner.gemm(a, b, c, alpha,
beta)`` is the whole pipeline in one call):

int8 residue planes with their exponents, one read of each operand where
its rows are contiguous (40_int8x.cu) -> INT8 GEMMs
of all moduli in one launch, each accumulator reduced to a byte (42_int8_wgmma.cu
on sm_90a, 41_int8_mma.cu elsewhere) -> Garner reconstruction with
alpha/beta (40_int8x.cu).  Every
step after the scaling is integer arithmetic, so the result equals
reference.gemm(...) rounded to float32 bit for bit
(tests/gpu/test_int8x_gpu.py).

runner.py runs the pipeline with the launches prepared once per shape and
the INT8 GEMMs launched before the one synchronisation; the step functions
here (convert, int8_gemm, garner) launch one step each on CuPy arrays, for
tests and probes, and both take their grids and arguments from the same
builders (convert_launches, int8_gemm_args, garner_args).

Workspace (``runner.gemm``: one buffer from CuPy's pool per call, freed on return):
the residue planes, n_moduli * (m + n) * K16 bytes (K16 = k rounded up to
16), and the byte planes of C' (C'_l mod p_l, reduced in the GEMM's
epilogue), n_moduli * n * M16 bytes (M16 = m rounded up to 16) -- 8 m n
bytes for 8 moduli, a quarter of the INT32 planes of the first version;
`workspace_bytes` says how much (runner.layout adds the summaries and the
tiles route's per-row scratch, at most 44 (m + n) bytes and 1.5 KiB).

The public entry points reach it through sgemm/int8x/route.py
(precision="int8x", and "fp32" where its cost model wins), which keeps each
shape's runner in the plan cache.
"""
from __future__ import annotations

import math

import numpy as np

from ..kernels import utility as U
from . import bound as BD
from . import moduli as M
from .bound import Int8xAccuracyWarning, ScalingLoss  # noqa: F401 -- re-exported


class NonFiniteInput(ValueError):
    """Inf or NaN in a or b: they have no integer form; FP32 must take the call."""


_summary_init: dict[int, object] = {}


def summary_template():
    """The kept uint64 (2, bound.WORDS) device array of both operands'
    initial summaries (A's row 0, B's row 1) on the current device; never
    written."""
    import cupy
    dev = cupy.cuda.Device().id
    t = _summary_init.get(dev)
    if t is None:
        t = _summary_init[dev] = cupy.asarray(
            np.array([BD.Summary.initial_words()] * 2, np.uint64))
    return t


def summary_words():
    """A fresh uint64 (2, bound.WORDS) device array holding both operands'
    initial summaries, copied on the stream from summary_template() (no
    host transfer)."""
    return summary_template().copy()


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
    """The kernels' int array (moduli.kernel_constants: the moduli, then
    Garner's CRT weights, their float quotients and P); one copy per device
    and n, kept."""
    import cupy
    key = (cupy.cuda.Device().id, n)
    arr = _constants.get(key)
    if arr is None:
        arr = _constants[key] = cupy.asarray(np.array(M.kernel_constants(M.moduli(n)),
                                                      np.int32))
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


def padded_rows(m: int) -> int:
    """Rows of a byte plane of C': m rounded up to 16, so that its columns
    start 16-byte aligned (42's chunk stores, Garner's 4-byte loads)."""
    return -(-max(m, 1) // 16) * 16


def workspace_bytes(m: int, n: int, k: int, n_moduli: int = U.INT8X_MODULI) -> int:
    """Device memory gemm() allocates besides its output: residue planes of A
    and B, byte planes of C' (one byte an element and modulus, rows padded
    to 16), exponents."""
    return n_moduli * ((m + n) * padded_k(k) + n * padded_rows(m)) + 4 * (m + n)


RESIDUE_TILE = (32, 128)      # rows x columns of X per block (40_int8x.cu, i8x::TR, TC)
ROWMAX_COLS = 256             # columns per int8x_rowmax block (i8x::MAX_COLS)


def residue_grid(rows: int, ld: int) -> tuple[int, int, int]:
    """int8x_residues' grid: one block per 32 x 128 tile, column tiles (up
    to ld, the zero padding included) in x, row tiles in y."""
    return (math.ceil(ld / RESIDUE_TILE[1]), math.ceil(rows / RESIDUE_TILE[0]), 1)


def rowmax_grid(rows: int, cols: int) -> tuple[int, int, int]:
    """int8x_rowmax's grid: 128 rows by ROWMAX_COLS columns a block."""
    return (math.ceil(rows / 128), max(1, math.ceil(cols / ROWMAX_COLS)), 1)


def route_for(sr: int, sc: int) -> str:
    """Which conversion route a matrix with these element strides takes:
    "tiles" (int8x_rowmax, then int8x_residues reading down columns) when
    the row index is the contiguous one, else "rows" (int8x_convert_rows,
    one read of each row)."""
    return "tiles" if sr == 1 and sc != 1 else "rows"


def pick_route(rows: int, cols: int, sr: int, sc: int, route: str | None = None) -> str:
    """The conversion route a matrix of rows x cols with element strides (sr,
    sc) takes: ``route`` if given ("rows" or "tiles"), else route_for's;
    "tiles" falls back to "rows" past its grid's y limit."""
    route = route or route_for(sr, sc)
    if route not in ("rows", "tiles"):
        raise ValueError(f"int8x.convert: route={route!r} must be 'rows' or 'tiles'")
    if route == "tiles" and (math.ceil(rows / RESIDUE_TILE[0]) > 65535 or
                             math.ceil(cols / ROWMAX_COLS) > 65535):
        route = "rows"        # rows above 2 million or k above 16 million: grid y limits
    return route


def convert_launches(route: str, rows: int, cols: int, x, sr: int, sc: int, bits: int, e,
                     bad, stats, out, ld: int, maxbits=0, units=0, counts=0, norm=0,
                     n_moduli: int = U.INT8X_MODULI) -> list:
    """[(spec, grid, args)] of one operand's conversion by ``route`` (pick_route)
    into n_moduli planes.  The moduli are the kernels' constants (40_int8x.cu,
    i8x::modulus).  Pointers (x, e, bad, stats, out and the tiles route's
    scratch: maxbits uint32 (rows,), units uint64 (rows,), counts uint32
    (len(THRESHOLDS), rows) and norm uint64 (rows,), all zeroed beforehand)
    are placed as given, so a caller may pass stand-ins that it relocates
    later (runner.py).  stats 0: the kernels skip the statistics."""
    if not rows:
        return []
    if route == "rows":
        return [(U.INT8X_CONVERT_BY_N[n_moduli], (rows, 1, 1),
                 (np.int32(rows), np.int32(cols), x, sr, sc, np.int32(bits), e, bad, stats,
                  out, ld, rows * ld))]
    out_l = [(U.INT8X_ROWMAX, rowmax_grid(rows, cols),
              (np.int32(rows), np.int32(cols), x, sr, sc, maxbits, bad)),
             (U.INT8X_ROWNORM, rowmax_grid(rows, cols),
              (np.int32(rows), np.int32(cols), x, sr, sc, maxbits, norm)),
             (U.INT8X_RESIDUES_BY_N[n_moduli], residue_grid(rows, ld),
              (np.int32(rows), np.int32(cols), x, sr, sc, maxbits, norm, np.int32(bits), e,
               out, ld, rows * ld, units if stats else 0, counts if stats else 0))]
    if stats:
        out_l.append((U.INT8X_ROW_STATS, (math.ceil(rows / 256), 1, 1),
                      (np.int32(rows), maxbits, norm, units, counts, stats)))
    return out_l


def convert(x, axis: int, bits: int, bad=None, ld: int | None = None,
            route: str | None = None, stats=None, n_moduli: int = U.INT8X_MODULI):
    """(int8 planes (n_moduli, rows, ld), int32 exponents (rows,)): row r of X
    (rows of x for axis=1, columns for axis=0) scaled by 2^e_r, e_r from the
    row's norm bound (reference.exponents; 0 for an all-zero row), rounded
    and reduced modulo each modulus; columns [cols, ld) are zeros.  bad: an int32 CuPy
    array whose element 0 the kernels set to 1 if x holds Inf or NaN (not
    read back here: no synchronisation).  route: "rows" or "tiles" forces
    one (tests); None picks route_for(strides).  stats: a uint64 CuPy array
    of bound.WORDS words holding Summary.initial_words(), where the kernels
    gather the scaling check's statistics (sgemm/int8x/bound.py; words 1
    onwards, word 0 is left to `bad`); None: a scratch one; False: the
    kernels skip the statistics (timing the check's cost)."""
    import cupy
    n = n_moduli
    if n not in U.INT8X_COUNTS:
        raise ValueError(f"int8x.convert: n_moduli={n}: the kernels are built for "
                         f"{U.INT8X_COUNTS}")
    rows, cols, sr, sc = _as_rows(x, axis)
    ld = ld or padded_k(cols)
    if ld % U.INT8_K_ALIGN or ld < cols:
        raise ValueError(f"int8x.convert: ld={ld} must be a multiple of {U.INT8_K_ALIGN} "
                         f"and >= {cols}")
    if bits < 18 or bits > 31:
        raise ValueError(f"int8x.convert: bits={bits} must be in [18, 31] (the "
                         f"scaling's exponent range, 40_int8x.cu scaled())")
    route = pick_route(rows, cols, sr, sc, route)
    if bad is None:
        bad = cupy.zeros(1, cupy.int32)
    if stats is None:
        stats = summary_words()[0]
    if stats is not False and (stats.dtype != cupy.uint64 or stats.size != BD.WORDS
                               or not stats.flags.c_contiguous):
        raise ValueError(f"int8x.convert: stats must be {BD.WORDS} contiguous uint64 words")
    st_ptr = 0 if stats is False else stats.data.ptr
    out = cupy.empty((n, rows, ld), cupy.int8)
    e = cupy.empty(rows, cupy.int32)
    scratch = (0, 0, 0, 0)
    if route == "tiles" and rows:
        maxbits = cupy.zeros(rows, cupy.uint32)
        norm = cupy.zeros(rows, cupy.uint64)
        row_units = cupy.zeros(rows, cupy.uint64) if st_ptr else None
        row_cnt = cupy.zeros((len(BD.THRESHOLDS), rows), cupy.uint32) if st_ptr else None
        scratch = (maxbits.data.ptr, row_units.data.ptr if st_ptr else 0,
                   row_cnt.data.ptr if st_ptr else 0, norm.data.ptr)
    for spec, grid, args in convert_launches(route, rows, cols, x.data.ptr, sr, sc, bits,
                                             e.data.ptr, bad.data.ptr, st_ptr,
                                             out.data.ptr, ld, *scratch, n_moduli=n):
        _launch(spec, grid, args)
    return out, e


def exponents(x, axis: int, bits: int, route: str | None = None):
    """(exponents per row (axis=1) or column (axis=0) of a 2-D float32 CuPy
    array, whether it holds Inf or NaN), by convert() (the planes are
    dropped).  The flag is read back to the host (one synchronisation)."""
    import cupy
    bad = cupy.zeros(1, cupy.int32)
    _, e = convert(x, axis, bits, bad, route=route)
    return e, bool(int(bad[0]))


def summaries(a, b, route: str | None = None, n_moduli: int = U.INT8X_MODULI):
    """(bound.Summary of a's rows, of b's columns) as gemm() gathers them,
    for a k-deep product (tests; one synchronisation)."""
    k = a.shape[1]
    bud = M.budget(n_moduli, max(k, 1))
    words = summary_words()
    flags = words.view(np.int32).reshape(-1)
    convert(a, 1, bud.alpha, flags[0:1], route=route, stats=words[0], n_moduli=n_moduli)
    convert(b, 0, bud.beta, flags[BD.WORDS * 2:BD.WORDS * 2 + 1], route=route,
            stats=words[1], n_moduli=n_moduli)
    w = words.get()
    return BD.Summary.from_words(w[0]), BD.Summary.from_words(w[1])


def gemm_spec(kernel: str = "auto"):
    """The INT8 GEMM spec for the current device: "auto" is wgmma
    (42_int8_wgmma.cu) on sm_90a and mma.sync (41_int8_mma.cu) elsewhere;
    "wgmma" or "mma" force one (wgmma only on sm_90a)."""
    import cupy
    from ..runtime import device as devmod
    return U.int8_gemm_spec(devmod.info(cupy.cuda.Device().id).arch, kernel)


def int8_gemm(pa, pb, mods, config: str | None = None, kernel: str = "auto"):
    """C'_l = A'_l B'_l mod p_l for every plane l (any K: deeper than one
    exact INT32 sum, 131008 with mma.sync and 131056 with wgmma, the kernel
    folds its accumulators modulo p_l).

    pa: int8 (n, m, K) C-contiguous (rows of A'_l, k contiguous), pb: int8
    (n, ncols, K) (columns of B'_l); K a multiple of 16, zeros past the real
    depth.  mods: constants(); the kernel reads p_l = mods[l].  kernel:
    "auto" (wgmma on sm_90a, else mma), "mma" or "wgmma"; config: one of that
    kernel's configs (None: its "default").  Returns the byte planes, uint8
    (n, m, ncols) holding C'_l mod p_l in [0, p_l), each plane column-major
    with its rows padded to padded_rows(m) (strides (ncols ld, 1, ld) bytes,
    the padding rows written too): what garner() reads without a copy."""
    import cupy
    spec, p = gemm_choice(kernel, config)
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
    ld = padded_rows(m)
    buf = cupy.empty((n, ncols, ld), cupy.uint8)    # plane l: column j at [l, j, :]
    if m and ncols:
        _launch(spec, spec.grid_for(m, ncols, n, p),
                int8_gemm_args(p, m, ncols, kp, pa.data.ptr, pb.data.ptr, mods.data.ptr,
                               buf.data.ptr), p)
    return buf[:, :, :m].transpose(0, 2, 1)


def gemm_choice(kernel: str = "auto", config: str | None = None):
    """(spec, params) of the INT8 GEMM ``kernel`` (gemm_spec) with ``config``
    (None: "default") on the current device; ValueError naming a config
    the kernel lacks or cannot run here."""
    import cupy
    from ..runtime import device as devmod
    spec = gemm_spec(kernel)
    config = config or "default"
    if config not in spec.configs:
        raise ValueError(f"int8x.int8_gemm: config {config!r} is not one of {spec.name}'s "
                         f"{sorted(spec.configs)}")
    p = spec.configs[config]
    why = spec.can_implement(p, devmod.info(cupy.cuda.Device().id).smem_optin)
    if why:
        raise ValueError(f"int8x.int8_gemm: {spec.name} config {config!r} cannot run here: " +
                         "; ".join(why))
    return spec, p


def int8_gemm_args(p, m: int, ncols: int, kp: int, pa, pb, mods, buf) -> tuple:
    """The INT8 GEMMs' arguments: planes pa (n, m, kp) and pb (n, ncols, kp),
    byte planes written to buf (n, ncols, padded_rows(m)), column-major;
    pointers placed as given (see convert_launches)."""
    ld = padded_rows(m)
    return (np.int32(m), np.int32(ncols), np.int32(kp), pa, kp, m * kp, pb, kp, ncols * kp,
            mods, np.int32(p.swizzle), buf, ld, ld * ncols)


GARNER_ROWS, GARNER_COLS = 1024, 4    # rows and columns per block (40_int8x.cu)


def garner_grid(m: int, ncols: int) -> tuple[int, int, int]:
    """int8x_garner's grid: blocks of 1024 rows (64 threads x 16) in x, 4
    columns a block in y (at most 65535; the kernel loops over the rest)."""
    return (math.ceil(m / GARNER_ROWS), min(math.ceil(ncols / GARNER_COLS), 65535), 1)


def byte_planes(planes, n_moduli: int = U.INT8X_MODULI):
    """Any integer planes (n, m, ncols) of C' (exact products, or congruent
    ones) as the byte planes the GEMMs write and garner() reads: C'_l mod
    p_l as uint8, column-major, rows padded to padded_rows(m) with zeros."""
    import cupy
    n, m, ncols = planes.shape
    ms = cupy.asarray(np.array(M.moduli(n_moduli), np.int64))[:n, None, None]
    buf = cupy.zeros((n, ncols, padded_rows(m)), cupy.uint8)
    buf[:, :, :m] = cupy.mod(planes.astype(cupy.int64), ms).astype(cupy.uint8).transpose(0, 2, 1)
    return buf[:, :, :m].transpose(0, 2, 1)


def output_array(m: int, ncols: int, c, beta: float, out):
    """The float32 array Garner writes (unit stride down columns), holding
    beta's operand when beta != 0: out itself if given (c copied into it
    unless c is out), else a new Fortran-ordered array."""
    import cupy
    if out is None:
        return cupy.asfortranarray(c.astype(cupy.float32)) if beta != 0.0 else \
            cupy.empty((m, ncols), cupy.float32, order="F")
    check_output(m, ncols, out)
    if beta != 0.0 and c is not out:
        out[...] = c
    return out


def check_output(m: int, ncols: int, out) -> None:
    import cupy
    if out.dtype != cupy.float32 or out.shape != (m, ncols) or (
            m > 1 and out.strides[0] != 4) or (ncols > 1 and out.strides[1] < 4 * m):
        raise ValueError(f"int8x: out must be float32 {(m, ncols)} with unit stride down its "
                         f"columns, got {out.dtype} {out.shape} strides {out.strides}")


def garner(planes, mods, mu, nu, alpha: float = 1.0, beta: float = 0.0, c=None, out=None):
    """planes: the byte planes of C' as int8_gemm returns them (uint8 (n, m,
    ncols), C'_l mod p_l; byte_planes() makes them from integer planes);
    returns C = alpha C' 2^-(mu_i+nu_j) + beta c (float32 m x ncols): out
    (unit stride down columns; c may be out itself) or a new Fortran-ordered
    array.  n, the planes' count, is the moduli count: mods = constants(n)."""
    import cupy
    n, m, ncols = planes.shape
    if n not in U.INT8X_COUNTS or planes.dtype != cupy.uint8:
        raise ValueError(f"int8x.garner: planes must be uint8 (N, m, n), N moduli in "
                         f"{U.INT8X_COUNTS}, got {planes.dtype} {planes.shape} (byte_planes() "
                         f"converts integer planes)")
    if mods.size != len(M.kernel_constants(M.moduli(n))):
        raise ValueError(f"int8x.garner: mods must be constants({n}) for {n} planes")
    st = planes.strides
    ld = padded_rows(m)
    # the kernel reads 4 rows at a time from 4-byte-aligned columns of ld rows
    if not (st[1] == 1 and st[2] % 16 == 0 and st[2] >= ld and st[0] >= st[2] * ncols
            and st[0] % 16 == 0 and planes.data.ptr % 16 == 0):
        raise ValueError(f"int8x.garner: planes with strides {st} are not column-major byte "
                         f"planes with 16-byte aligned columns of >= {ld} rows (int8_gemm's "
                         f"or byte_planes()' layout)")
    if beta != 0.0 and c is None:
        raise ValueError("int8x.garner: beta != 0 needs c")
    out = output_array(m, ncols, c, beta, out)
    if m * ncols:
        _launch(U.INT8X_GARNER_BY_N[n], garner_grid(m, ncols),
                garner_args(m, ncols, planes.data.ptr, st[2], st[0], mods.data.ptr, mu.data.ptr,
                            nu.data.ptr, alpha, beta, out.data.ptr, out.strides[1] // 4))
    return out


def garner_args(m: int, ncols: int, planes, col_bytes: int, plane_bytes: int, mods, mu, nu,
                alpha: float, beta: float, out, ldc: int) -> tuple:
    """int8x_garner's arguments: byte planes with columns col_bytes and
    planes plane_bytes apart, C written to out with columns ldc elements
    apart (at least m: a single column's stride may be anything); pointers
    placed as given (see convert_launches)."""
    return (np.int32(m), np.int32(ncols), planes, col_bytes, plane_bytes, mods, mu, nu,
            np.float32(alpha), np.float32(beta), out, max(ldc, m))
