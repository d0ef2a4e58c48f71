"""The integer pipeline for one problem shape, built once and run per call.

    r = Runner(device, m, n, k, a_strides, b_strides, ldc, alpha, beta, on_loss="raise")
    r(a_ptr, b_ptr, out_ptr, stream)   # out = alpha a @ b + beta out (column-major out)

A Runner is every launch of the pipeline (device.py: two conversions, the
INT8 GEMMs, Garner) for fixed shapes, strides, alpha, beta, on_loss and
device, with the kernels loaded, the grids and arguments built and packed
once (launcher.PreparedLaunch); a call writes the operands' and the
workspace's addresses into the packed arguments and launches.  gemm (below)
builds one per shape (its workspace allocated per call); the public entry
points keep one per plan in the plan cache (sgemm/int8x/route.py), with
its workspace kept between calls.

One call, in stream order: the two operand summaries set from a kept
template (one copy) and the tiles route's per-row scratch zeroed (one
memset, where an operand takes that route); the conversions; the summaries
(Inf/NaN flags and the scaling check's statistics, 144 bytes) copied into
pinned host memory and an event recorded behind them; then the INT8 GEMMs
are launched, and only then does the host wait -- for the event, not the
stream -- to read the summaries, decide, and launch Garner, which queues
behind the GEMMs.  Everything the host does after the wait (decoding,
the check, Garner's launch, returning the result) overlaps the GEMMs, where
a wait before their launch leaves the GPU idle from the end of the
conversions until the launch reaches it.

Launching the GEMMs before the check is safe because they read and write
only the workspace: a failed check (NonFiniteInput; ScalingLoss under
on_loss="raise") still leaves out untouched.  It costs one INT8 GEMM that
nobody uses; after such a failure the runner waits for the check before
launching the GEMMs, until a call passes again, so data that keeps failing
pays for the wait, not for the GEMMs.

Workspace: ``nbytes`` (``layout``: device.workspace_bytes plus 144 bytes of
summaries and, per operand converted by the tiles route, 44 bytes a row of
scratch; regions 256-byte aligned).  ``keep=False``: one buffer from CuPy's
pool per call, back to the pool on return (allocated on the call's stream,
so the pool hands it out again only behind that stream's work).
``keep=True``: the buffer stays with the runner between calls, on the
stream it was allocated on (a call on another stream takes a buffer of its
own for the call); all kept buffers together stay under KEEP_BYTES (8 GiB;
environment SGEMM_INT8X_KEEP, bytes, 0 keeps none), the least recently used
ones given back first; ``release()`` gives them all back, and a runner's
buffer goes when the runner does (with its plan or plan-cache entry).
Importing this module touches no CUDA.
"""
from __future__ import annotations

import os
import threading
import warnings
import weakref
from collections import OrderedDict, namedtuple

import numpy as np

from ..kernels import utility as U
from . import bound as BD
from . import device as D
from . import moduli as M

# kept workspaces, all runners together (see the docstring)
KEEP_BYTES = int(os.environ.get("SGEMM_INT8X_KEEP", str(8 << 30)))

# A pointer argument that moves from call to call: operand ``op`` (A, B,
# OUT: the call's a, b and out; WS: the workspace) plus ``off`` bytes.  The
# builders in device.py place these as given; _prepare turns them into
# PreparedLaunch relocations.
Ptr = namedtuple("Ptr", "op off")
A, B, OUT, WS = 0, 1, 2, 3
SUMMARY_BYTES = 2 * BD.WORDS * 8            # both operands' summaries (uint64 words)
ALIGN = 256


def layout(m: int, n: int, k: int, tiles_a: bool, tiles_b: bool,
           n_moduli: int = U.INT8X_MODULI) -> dict:
    """Byte offsets of the workspace's regions and "total": residue planes
    pa (N x m x K16) and pb (N x n x K16), byte planes of C' (N x n x M16),
    exponents mu (m) and nu (n), the summaries (A's words, then B's), then
    the tiles route's scratch of each operand that takes it (units uint64,
    norm uint64, maxbits uint32, counts uint32 x len(THRESHOLDS), per row),
    which is zeroed per call as one region [zero, total)."""
    nm, kp = n_moduli, D.padded_k(k)
    regions = [("pa", nm * m * kp), ("pb", nm * n * kp), ("planes", nm * n * D.padded_rows(m)),
               ("mu", 4 * m), ("nu", 4 * n), ("words", SUMMARY_BYTES)]
    zero = []
    for name, rows, on in (("a", m, tiles_a), ("b", n, tiles_b)):
        if on:
            zero += [("units_" + name, 8 * rows), ("norm_" + name, 8 * rows),
                     ("maxbits_" + name, 4 * rows),
                     ("counts_" + name, 4 * len(BD.THRESHOLDS) * rows)]
    out, at = {}, 0
    for name, size in regions + zero:
        if name.startswith("units_") and "zero" not in out:
            out["zero"] = at
        out[name] = at
        at += -(-size // ALIGN) * ALIGN
    out.setdefault("zero", at)
    out["total"] = at
    return out


class _CoreLaunch:
    """PreparedLaunch's call through cuda.core (SGEMM_LAUNCH=core)."""
    __slots__ = ("kernel", "grid", "block", "smem", "args", "relocs")

    def __init__(self, kernel, grid, block, smem, args, relocs):
        self.kernel, self.grid, self.block, self.smem = kernel, grid, block, smem
        self.args, self.relocs = tuple(args), tuple(relocs)

    def __call__(self, stream: int, ptrs) -> None:
        from ..runtime import launcher
        args = list(self.args)
        for i, op, off in self.relocs:
            args[i] = ptrs[op] + off
        launcher.launch(self.kernel, self.grid, self.block, self.smem, stream, args)


def _prepare(items, dev) -> list:
    """Loaded, packed launches of [(spec, grid, args, params or None)], each
    Ptr argument a relocation."""
    from ..runtime import launcher
    out = []
    for spec, grid, args, p in items:
        p = p or spec.configs["default"]
        kern = launcher.get_kernel(spec, p, False, False, False, dev)
        vals, rel = [], []
        for i, x in enumerate(args):
            if type(x) is Ptr:
                rel.append((i, x.op, x.off))
                x = 0
            vals.append(x)
        make = launcher.PreparedLaunch if launcher.DRIVER_LAUNCH else _CoreLaunch
        out.append(make(kern, tuple(grid), spec.block(p), spec.dynamic_smem(p), vals, rel))
    return out


class Runner:
    """The pipeline for a (m x k) @ b (k x n) into a column-major out, on one device:
    sa, sb the operands' (row, column) strides in elements, ldc out's column stride in
    elements.  kernel/config choose the INT8 GEMM (device.gemm_choice); n_moduli the
    moduli count (U.INT8X_COUNTS).  Call it with the three addresses and a stream
    handle; it raises NonFiniteInput or ScalingLoss (on_loss="raise") before Garner,
    with out untouched, and warns Int8xAccuracyWarning under on_loss="warn".
    ``before_garner``: a callable run once the inputs are found good, before Garner is
    launched (gemm copies c into out there).  m, n, k > 0."""

    def __init__(self, device: int, m: int, n: int, k: int, sa, sb, ldc: int, alpha: float,
                 beta: float, on_loss: str = "raise", kernel: str = "auto",
                 config: str | None = None, keep: bool = False,
                 n_moduli: int = U.INT8X_MODULI):
        import cupy
        from ..runtime import device as devmod
        if on_loss not in ("raise", "warn", "ignore"):
            raise ValueError(f"int8x.gemm: on_loss={on_loss!r} must be 'raise', 'warn' or "
                             f"'ignore'")
        self.device, self.m, self.n, self.k = device, m, n, k
        self.on_loss, self.keep = on_loss, keep
        if n_moduli not in U.INT8X_COUNTS:
            raise ValueError(f"int8x.gemm: n_moduli={n_moduli}: the kernels are built for "
                             f"{U.INT8X_COUNTS}")
        self.n_moduli = nm = n_moduli
        self.budget = bud = M.budget(nm, k)
        # rows of a are a's rows; rows of the matrix b is converted as are b's columns
        self.routes = ra, rb = D.pick_route(m, k, sa[0], sa[1]), D.pick_route(n, k, sb[1], sb[0])
        lay = layout(m, n, k, ra == "tiles", rb == "tiles", nm)
        self.nbytes = lay["total"]
        self._words, self._zero = lay["words"], (lay["zero"], lay["total"] - lay["zero"])
        check = on_loss != "ignore"
        kp, wb = D.padded_k(k), 8 * BD.WORDS

        def ws(name, extra=0):
            return Ptr(WS, lay[name] + extra)

        def scratch(name, on):
            return (ws("maxbits_" + name), ws("units_" + name), ws("counts_" + name),
                    ws("norm_" + name)) if on else (0, 0, 0, 0)
        with cupy.cuda.Device(device):
            dev = devmod.info(device)
            mods = D.constants(nm).data.ptr
            self._template = D.summary_template()     # held while its address is in use
            self._template_ptr = self._template.data.ptr
            spec, p = D.gemm_choice(kernel, config)
            rt = cupy.cuda.runtime
            self._event = rt.eventCreateWithFlags(rt.eventDisableTiming)
        conv = (D.convert_launches(ra, m, k, Ptr(A, 0), sa[0], sa[1], bud.alpha, ws("mu"),
                                   ws("words"), ws("words") if check else 0, ws("pa"), kp,
                                   *scratch("a", ra == "tiles"), n_moduli=nm)
                + D.convert_launches(rb, n, k, Ptr(B, 0), sb[1], sb[0], bud.beta, ws("nu"),
                                     ws("words", wb), ws("words", wb) if check else 0,
                                     ws("pb"), kp, *scratch("b", rb == "tiles"), n_moduli=nm))
        mp = D.padded_rows(m)
        self._convert = _prepare([(s_, g, a, None) for s_, g, a in conv], dev)
        self._gemm, self._garner = _prepare([
            (spec, spec.grid_for(m, n, nm, p),
             D.int8_gemm_args(p, m, n, kp, ws("pa"), ws("pb"), mods, ws("planes")), p),
            (U.INT8X_GARNER_BY_N[nm], D.garner_grid(m, n),
             D.garner_args(m, n, ws("planes"), mp, n * mp, mods, ws("mu"), ws("nu"), alpha, beta,
                           Ptr(OUT, 0), ldc), None)], dev)
        self._pinned = cupy.cuda.alloc_pinned_memory(SUMMARY_BYTES)
        self._host = np.frombuffer(self._pinned, np.uint64, 2 * BD.WORDS)
        self._host_ptr = self._host.ctypes.data
        self._rt = cupy.cuda.runtime
        self._lock = threading.Lock()
        self._ws = None               # the kept workspace (keep=True), once allocated
        self._ws_stream = None        # the stream it belongs to
        self.speculate = True         # launch the GEMMs before the check (see the docstring)
        self.summaries = None         # (a's, b's) bound.Summary of the last call

    def __call__(self, a: int, b: int, out: int, stream: int, before_garner=None) -> None:
        from ..runtime import device as devmod
        rt = self._rt
        with self._lock:
            ws = self._ws
            if ws is None or stream != self._ws_stream:
                ws = self._workspace(stream)
            elif self.keep:
                _touch(self)
            ptrs = (a, b, out, ws.data.ptr)
            base = ptrs[WS]
            devmod.make_current(self.device)
            if self._zero[1]:
                rt.memsetAsync(base + self._zero[0], 0, self._zero[1], stream)
            rt.memcpyAsync(base + self._words, self._template_ptr, SUMMARY_BYTES,
                           rt.memcpyDeviceToDevice, stream)
            for launch in self._convert:
                launch(stream, ptrs)
            rt.memcpyAsync(self._host_ptr, base + self._words, SUMMARY_BYTES,
                           rt.memcpyDeviceToHost, stream)
            rt.eventRecord(self._event, stream)
            early = self.speculate
            if early:
                self._gemm(stream, ptrs)
            rt.eventSynchronize(self._event)          # the call's one synchronisation
            self._check()
            if not early:
                self._gemm(stream, ptrs)
            if before_garner is not None:
                before_garner()
            self._garner(stream, ptrs)

    def _check(self) -> None:
        """Raise for Inf/NaN or (on_loss="raise") a failed scaling check, or
        warn (on_loss="warn"), from the summaries just read."""
        w = self._host.tolist()
        sa, sb = BD.Summary.from_words(w[:BD.WORDS]), BD.Summary.from_words(w[BD.WORDS:])
        self.summaries = sa, sb      # the same for any moduli count (route.py reads them)
        if sa.bad or sb.bad:
            self.speculate = False
            raise D.NonFiniteInput("int8x.gemm: Inf or NaN in " + ("a" if sa.bad else "b") +
                                   " has no integer form; use the FP32 path")
        bud = self.budget
        if self.on_loss != "ignore" and not BD.holds(sa, sb, self.k, bud.alpha, bud.beta):
            if self.on_loss == "raise":
                self.speculate = False
            BD.report_loss(sa, sb, self.k, bud, self.on_loss)
        self.speculate = True

    def _workspace(self, stream: int):
        """A workspace for this call: kept (keep=True, within KEEP_BYTES, and
        no kept one on another stream) or for the call alone."""
        buf = _alloc(self.nbytes, stream, self.device)
        if self.keep and self._ws is None and _keep(self):
            self._ws, self._ws_stream = buf, stream
        return buf

    def __del__(self):
        try:
            self._rt.eventDestroy(self._event)
        except Exception:     # noqa: BLE001 -- at exit the driver may be gone already
            pass


def _alloc(nbytes: int, stream: int, device: int):
    """nbytes from CuPy's pool, allocated on ``stream`` so that the pool
    reuses them only behind that stream's work."""
    import cupy
    with cupy.cuda.Device(device):
        if cupy.cuda.get_current_stream().ptr == stream:
            return cupy.empty(nbytes, cupy.uint8)
        # CuPy 14 deprecates ExternalStream; it is what tags the allocation
        # with a stream CuPy did not create (PyTorch's, stream=), and runs
        # only when a workspace is allocated, not per call
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            with cupy.cuda.ExternalStream(stream, device):
                return cupy.empty(nbytes, cupy.uint8)


# -- kept workspaces: least recently used first out, KEEP_BYTES in all --------------
_kept: OrderedDict = OrderedDict()    # id(runner) -> (weak reference, nbytes)
_kept_lock = threading.RLock()        # re-entered by a runner's death during an eviction


def _forget(key: int, ref) -> None:
    with _kept_lock:
        if _kept.get(key, (None,))[0] is ref:
            del _kept[key]


def _keep(r: Runner) -> bool:
    """Register r's workspace, giving back the least recently used others
    until all fit in KEEP_BYTES; False where r's alone does not."""
    if r.nbytes > KEEP_BYTES:
        return False
    with _kept_lock:
        total = sum(nb for _, nb in _kept.values())
        while _kept and total + r.nbytes > KEEP_BYTES:
            _, (ref, nb) = _kept.popitem(last=False)
            old = ref()
            if old is not None:
                old._ws = None     # a call in flight holds its own reference
            total -= nb
        key = id(r)
        _kept[key] = (weakref.ref(r, lambda ref, key=key: _forget(key, ref)), r.nbytes)
    return True


def _touch(r: Runner) -> None:
    with _kept_lock:
        if id(r) in _kept:
            _kept.move_to_end(id(r))


def kept_bytes() -> int:
    """Bytes of workspace the runners keep now."""
    with _kept_lock:
        return sum(nb for _, nb in _kept.values())


def release() -> None:
    """Give every kept workspace back to CuPy's pool (each runner allocates
    again at its next call)."""
    with _kept_lock:
        for ref, _ in list(_kept.values()):
            r = ref()
            if r is not None:
                r._ws = None
        _kept.clear()


# -- gemm's runners, one per problem ------------------------------------------------
_cache: dict = {}
MAX_RUNNERS = 16


def for_arrays(a, b, out, alpha: float, beta: float, on_loss: str, kernel: str,
               config: str | None, n_moduli: int = U.INT8X_MODULI) -> Runner:
    """gemm's runner (keep=False) for CuPy arrays a, b and out, built
    on first use and kept per problem (FIFO, MAX_RUNNERS)."""
    import cupy
    dev = cupy.cuda.Device().id
    m, k = a.shape
    n = b.shape[1]
    sa = (a.strides[0] // 4, a.strides[1] // 4)
    sb = (b.strides[0] // 4, b.strides[1] // 4)
    ldc = out.strides[1] // 4
    key = (dev, m, n, k, sa, sb, ldc, float(alpha), float(beta), on_loss, kernel, config,
           n_moduli)
    r = _cache.get(key)
    if r is None:
        r = Runner(dev, m, n, k, sa, sb, ldc, alpha, beta, on_loss, kernel, config,
                   n_moduli=n_moduli)
        if len(_cache) >= MAX_RUNNERS:
            _cache.pop(next(iter(_cache)), None)
        _cache[key] = r
    return r


def gemm(a, b, c=None, alpha: float = 1.0, beta: float = 0.0, *,
         n_moduli: int = U.INT8X_MODULI, config: str | None = None, kernel: str = "auto",
         out=None, on_loss: str = "raise"):
    """C = alpha a @ b + beta c through the integer pipeline (Ozaki scheme II, n_moduli
    8 or 7, see moduli.budget and docs/accuracy.md).  a (m x k), b (k x n), c (m x n):
    float32 CuPy arrays of any strides (a column-major problem's Fortran-ordered
    operands are read in place).  kernel/config choose the INT8 GEMM (int8_gemm).
    Returns a new Fortran-ordered float32 (m, n) array, or out (float32 (m, n), unit
    stride down columns; c may be out itself, updated in place); c is never read when
    beta == 0, and out is not written before the inputs are found finite.

    alpha == 0 or k == 0 give beta c without reading a or b (netlib).  Inf or
    NaN in a or b raise NonFiniteInput: they have no integer form, and the
    FP32 path must take the call (checked with one device-to-host read; the
    INT8 GEMMs, which write only the workspace, are queued before it, see
    the module docstring).

    The same read brings the scaling check (sgemm/int8x/bound.py): whether
    the per-row and per-column scaling provably keeps every entry's error
    within (k + 1) u (|a||b|)_ij, FP32's classical bound.  Where it cannot
    (rows or columns spanning a wide exponent range, see bound.py), on_loss
    says what happens: "raise" (ScalingLoss, before anything is written:
    the caller runs FP32 instead), "warn" (Int8xAccuracyWarning, then the
    engine's result) or "ignore" (the statistics are not even gathered)."""
    import cupy
    if on_loss not in ("raise", "warn", "ignore"):
        raise ValueError(f"int8x.gemm: on_loss={on_loss!r} must be 'raise', 'warn' or 'ignore'")
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
        if out is None:
            out = cupy.empty((m, n), cupy.float32, order="F")
        if beta == 0.0 or c is None:
            out[...] = 0.0
        else:
            out[...] = np.float32(beta) * c
        return out
    if out is None:
        out = D.output_array(m, n, c, beta, None)           # holds beta's c already
        fill = None
    else:
        D.check_output(m, n, out)
        # out is not written before the inputs are found finite: c goes
        # into it once the runner has checked them, before Garner
        fill = (lambda: out.__setitem__(Ellipsis, c)) if beta != 0.0 and c is not out else None
    r = for_arrays(a, b, out, alpha, beta, on_loss, kernel, config, n_moduli)
    r(a.data.ptr, b.data.ptr, out.data.ptr, cupy.cuda.get_current_stream().ptr, fill)
    return out
