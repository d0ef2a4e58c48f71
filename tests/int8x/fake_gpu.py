"""A stand-in GPU for the integer engine on the CPU (tests/int8x/test_runner.py).

* CuPy: arrays over host memory (``DevArr``: not a NumPy subclass, so the
  front end takes them for CUDA arrays, as it takes CuPy's), allocations
  256-byte aligned like CuPy's pool, and the runtime calls the runner makes
  (memsetAsync, memcpyAsync, events, pinned memory) done at once on host
  memory.
* Kernels: each of the engine's kernels emulated in NumPy from its raw
  arguments -- pointers, strides, leading dimensions, plane strides read as
  the CUDA code reads them (sgemm/kernels/cuda/40_int8x.cu, 41/42) -- with
  reference.py's arithmetic and bound.summarize's statistics, so a wrong
  pointer, offset, stride or relocation gives a wrong result or a wrong
  check, and a right one gives reference.gemm bit for bit.
* ``LOG``: every runtime call and launch in order (what a test asserts the
  order and the number of synchronisations on).

``install(monkeypatch)`` puts all of it in place (with the plan cache's
package bindings reset, the planner's ``prepare`` replaced by a host
"tf32x3" that records its precision); nothing here needs a GPU or CuPy.
"""
from __future__ import annotations

import ctypes
import functools
import sys
import types

import numpy as np

from sgemm.int8x import bound as BD
from sgemm.int8x import moduli as M
from sgemm.int8x import reference as R
from sgemm.kernels import utility as U

F32 = np.float32
LOG: list = []
STATE = {"device": 0, "stream": 0, "grid": (1, 1, 1)}
_keep: list = []


# -- memory ------------------------------------------------------------------------------
def _aligned(nbytes: int) -> int:
    raw = np.zeros(max(nbytes, 1) + 512, np.uint8)
    _keep.append(raw)
    return raw.ctypes.data + (-raw.ctypes.data) % 256


def _host(ptr: int, dtype, count: int) -> np.ndarray:
    dt = np.dtype(dtype)
    if count <= 0:
        return np.zeros(0, dt)
    return np.frombuffer((ctypes.c_char * (count * dt.itemsize)).from_address(ptr), dt)


def mat(ptr: int, rows: int, cols: int, sr: int, sc: int, dtype=F32) -> np.ndarray:
    """The rows x cols matrix at ptr with element strides (sr, sc), writable."""
    it = np.dtype(dtype).itemsize
    span = (rows - 1) * sr + (cols - 1) * sc + 1 if rows and cols else 0
    return np.lib.stride_tricks.as_strided(_host(ptr, dtype, span), (rows, cols),
                                           (sr * it, sc * it))


class _Mem:
    __slots__ = ("ptr", "device_id", "mem")

    def __init__(self, ptr, dev, mem):
        self.ptr, self.device_id, self.mem = ptr, dev, mem


def _wrap(x):
    return DevArr(_a=x) if isinstance(x, np.ndarray) else x


def _unwrap(x):
    return x._a if isinstance(x, DevArr) else x


class DevArr:
    """A CuPy array over host memory: CuPy's attributes, NumPy's operations
    (results wrapped again)."""

    def __init__(self, shape=None, dtype=F32, order="C", *, _a=None, _base=None):
        if _a is None:
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            dt = np.dtype(dtype)
            n = int(np.prod(shape)) if shape else 1
            buf = _host(_aligned(n * dt.itemsize), dt, n)
            _a = buf.reshape(shape, order=order) if n else np.zeros(shape, dt, order=order)
        self._a = _a
        self.base = _base
        self.data = _Mem(_a.ctypes.data, STATE["device"], object() if _base is None
                         else _base.data.mem)

    def __getattr__(self, name):
        v = getattr(self._a, name)
        if callable(v):
            return lambda *a, **k: _wrap(v(*map(_unwrap, a), **k))
        return v

    T = property(lambda self: DevArr(_a=self._a.T, _base=self.base or self))
    device = property(lambda self: types.SimpleNamespace(id=self.data.device_id))

    @property
    def __cuda_array_interface__(self):
        a = self._a
        return {"shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False),
                "strides": a.strides, "version": 3}

    def __getitem__(self, idx):
        return DevArr(_a=self._a[idx], _base=self.base or self)

    def __setitem__(self, idx, v):
        self._a[idx] = _unwrap(v)

    def __mul__(self, o):
        return _wrap(self._a * _unwrap(o))

    __rmul__ = __mul__

    def get(self):
        return np.array(self._a, copy=True)


DevArr.__module__ = "cupy"


def asarray(x):
    if isinstance(x, DevArr):
        return x
    x = np.asarray(x)
    out = DevArr(x.shape, x.dtype)
    out._a[...] = x
    return out


def device_array(x, order="C"):
    """A DevArr copy of x in the given order (tests)."""
    x = np.asarray(x)
    out = DevArr(x.shape, x.dtype, order)
    out._a[...] = x
    return out


class _Device:
    def __init__(self, i=None):
        self.id = STATE["device"] if i is None else int(i)

    def __enter__(self):
        self._prev = STATE["device"]
        STATE["device"] = self.id
        return self

    def __exit__(self, *exc):
        STATE["device"] = self._prev


class _ExternalStream:
    def __init__(self, ptr, device_id=-1):
        self.ptr = ptr
        LOG.append(("external_stream", ptr))

    def __enter__(self):
        self._prev = STATE["stream"]
        STATE["stream"] = self.ptr
        return self

    def __exit__(self, *exc):
        STATE["stream"] = self._prev


class _Pinned(np.ndarray):
    ptr = property(lambda self: self.ctypes.data)


def _memcpy(dst, src, size, kind, stream):
    LOG.append(("memcpy", {2: "dtoh", 3: "dtod"}.get(kind, kind), stream))
    ctypes.memmove(dst, src, size)


def _memset(ptr, value, size, stream):
    LOG.append(("memset", size, stream))
    ctypes.memset(ptr, value, size)


_events = [0]


def _event_create(flags):
    _events[0] += 1
    return 0x9000 + _events[0]


def module() -> types.ModuleType:
    cp = types.ModuleType("cupy")
    cp.ndarray = DevArr
    cp.asarray = asarray
    cp.empty = lambda shape, dtype=F32, order="C": DevArr(shape, dtype, order)
    cp.zeros = lambda shape, dtype=F32, order="C": asarray(np.zeros(shape, dtype, order=order))
    cp.asfortranarray = lambda x: device_array(_unwrap(x), "F")
    for name in ("float32", "int8", "uint8", "int32", "uint32", "uint64", "int64"):
        setattr(cp, name, getattr(np, name))
    rt = types.SimpleNamespace(
        getDevice=lambda: STATE["device"], memcpyAsync=_memcpy, memsetAsync=_memset,
        memcpyDeviceToHost=2, memcpyDeviceToDevice=3, eventDisableTiming=2,
        eventCreateWithFlags=_event_create,
        eventRecord=lambda ev, s: LOG.append(("record", ev, s)),
        eventSynchronize=lambda ev: LOG.append(("sync", ev)),
        eventDestroy=lambda ev: None)
    cp.cuda = types.SimpleNamespace(
        Device=_Device, runtime=rt, ExternalStream=_ExternalStream,
        get_current_stream=lambda: types.SimpleNamespace(ptr=STATE["stream"]),
        alloc_pinned_memory=lambda n: np.zeros(n, np.uint8).view(_Pinned))
    return cp


# -- the kernels ----------------------------------------------------------------------
class Kernel:
    def __init__(self, name, fn):
        self.name, self.fn, self.handle = name, fn, 0x7000 + len(KERNELS)

    def __call__(self, *args):
        self.fn(*(int(a) if isinstance(a, np.integer) else a for a in args))

    def __repr__(self):
        return f"Kernel({self.name})"


def _moduli(mods: int, n: int) -> tuple:
    return tuple(int(p) for p in _host(mods, np.int32, n))


def _merge(st: int, s: BD.Summary) -> None:
    """One operand's statistics into its summary words (atomicMax/Min)."""
    if s.counts[0] == BD.COUNT_NONE:
        return
    w = _host(st, np.uint64, BD.WORDS)
    w[1] = max(int(w[1]), s.units)
    for q, c in enumerate(s.counts):
        w[2 + q] = min(int(w[2 + q]), c)
    w[BD.WORDS - 1] = max(int(w[BD.WORDS - 1]), s.gap)


def _planes(x, e, out, ld, plane, n):
    rows, cols = x.shape
    xi = R.to_integers(x, e.astype(np.int64), 1)
    for l, p in enumerate(M.moduli(n)):      # the kernels' constant moduli
        o = mat(out + l * plane, rows, ld, ld, 1, np.int8)
        o[:, :cols] = R.residues(xi, p)
        o[:, cols:] = 0


def _finite_rows(x, bad):
    ok = np.isfinite(x).all(axis=1)
    if not ok.all():
        _host(bad, np.int32, 1)[0] |= 1
    return ok, np.where(ok[:, None], x, 0.0).astype(F32)


def convert_rows(n, rows, cols, X, sr, sc, bits, e, bad, st, out, ld, plane):
    x = np.array(mat(X, rows, cols, sr, sc))
    ok, xf = _finite_rows(x, bad)
    ee = R.exponents(xf, 1, bits)
    _host(e, np.int32, rows)[:] = ee
    _planes(xf, ee, out, ld, plane, n)
    if st:
        _merge(st, BD.summarize(xf[ok], 1))


def rowmax(rows, cols, X, sr, sc, maxbits, bad):
    x = np.array(mat(X, rows, cols, sr, sc))
    _, xf = _finite_rows(x, bad)
    amax = np.abs(xf).max(axis=1) if cols else np.zeros(rows, F32)
    mb = _host(maxbits, np.uint32, rows)
    mb[:] = np.maximum(mb, amax.astype(F32).view(np.uint32))


def rownorm(rows, cols, X, sr, sc, maxbits, norm):
    """The norm sums scaled by the maxima int8x_rowmax left (maxbits)."""
    x = np.array(mat(X, rows, cols, sr, sc))
    xf = np.where(np.isfinite(x).all(axis=1)[:, None], x, 0.0).astype(F32)
    mb = _host(maxbits, np.uint32, rows)
    e, s = R.norm_sums(xf, 1)
    assert (mb[s > 0] >> 23).astype(np.int64).tolist() == (e[s > 0] + 127).tolist()
    _host(norm, np.uint64, rows)[:] += s.astype(np.uint64)


def residues(n, rows, cols, X, sr, sc, maxbits, norm, bits, e, out, ld, plane, units, counts):
    x = np.array(mat(X, rows, cols, sr, sc))
    mb = _host(maxbits, np.uint32, rows)
    amax = mb.view(F32)
    xf = np.where(np.isfinite(x).all(axis=1)[:, None], x, 0.0).astype(F32)
    sq = _host(norm, np.uint64, rows)
    ee = np.array([min(bits - R.gap(int(v)), M.ENTRY_BITS) - (int(b >> 23) - 127) if b else 0
                   for b, v in zip(mb, sq)], np.int64)
    _host(e, np.int32, rows)[:] = ee
    _planes(xf, ee, out, ld, plane, n)
    if units:
        uu = _host(units, np.uint64, rows)
        cc = _host(counts, np.uint32, len(BD.THRESHOLDS) * rows).reshape(-1, rows)
        for r in np.flatnonzero(amax > 0):
            s = BD.summarize(xf[r:r + 1], 1)
            uu[r] += s.units
            cc[:, r] += np.array(s.counts, np.uint32)


def row_stats(rows, maxbits, norm, units, counts, st):
    mb = _host(maxbits, np.uint32, rows)
    sq = _host(norm, np.uint64, rows)
    uu = _host(units, np.uint64, rows)
    cc = _host(counts, np.uint32, len(BD.THRESHOLDS) * rows).reshape(-1, rows)
    live = np.flatnonzero(mb != 0)
    if live.size:
        gap = max(0, max(R.gap(int(sq[r])) for r in live))
        _merge(st, BD.Summary(int(uu[live].max()), tuple(int(c) for c in cc[:, live].min(1)),
                              gap=gap))


def int8_gemm(m, ncols, kp, pa, lda, sa, pb, ldb, sb, mods, swizzle, buf, ld, plane):
    for l, p in enumerate(_moduli(mods, STATE["grid"][2])):     # grid z: one per modulus
        a = mat(pa + l * sa, m, kp, lda, 1, np.int8).astype(np.int64)
        b = mat(pb + l * sb, ncols, kp, ldb, 1, np.int8).astype(np.int64)
        o = mat(buf + l * plane, ncols, ld, ld, 1, np.uint8)     # row j: column j of C'_l
        o[:, :m] = np.mod(a @ b.T, p).T
        o[:, m:] = 0


def garner(n, m, ncols, planes, col_bytes, plane_bytes, mods, mu, nu, alpha, beta, out, ldc):
    res = [mat(planes + l * plane_bytes, m, ncols, 1, col_bytes, np.uint8).astype(np.int64)
           for l in range(n)]
    _, x = R.garner(res, _moduli(mods, n))
    s = (_host(mu, np.int32, m).astype(np.int64)[:, None] +
         _host(nu, np.int32, ncols).astype(np.int64)[None, :])
    v = float(alpha) * np.ldexp(x, -s)                  # reference.gemm's order
    c = mat(out, m, ncols, 1, ldc)
    if float(beta) != 0.0:
        v = v + float(beta) * c.astype(np.float64)
    c[...] = v.astype(F32)


KERNELS: dict = {}
for _name, _fn in (("int8x_rowmax", rowmax), ("int8x_rownorm", rownorm),
                   ("int8x_row_stats", row_stats), ("int8_wgmma", int8_gemm),
                   ("int8_mma", int8_gemm)):
    KERNELS[_name] = Kernel(_name, _fn)
for _n in U.INT8X_COUNTS:        # one kernel per moduli count (utility._per_count's names)
    for _spec, _fn in ((U.INT8X_CONVERT_BY_N[_n], convert_rows),
                       (U.INT8X_RESIDUES_BY_N[_n], residues), (U.INT8X_GARNER_BY_N[_n], garner)):
        KERNELS[_spec.name] = Kernel(_spec.name, functools.partial(_fn, _n))


def get_kernel(spec, p, ta, tb, aligned, dev):
    return KERNELS[spec.name]


def launch(kernel, grid, block, smem, stream, args):
    from sgemm.runtime import launcher
    LOG.append(("launch", kernel.name, launcher.stream_handle(stream)))
    STATE["grid"] = tuple(grid)
    kernel(*args)


def names(kind="launch") -> list:
    """What LOG holds, one word an entry: launches by kernel name."""
    return [e[1] if e[0] == "launch" else e[0] for e in LOG if kind is None or e[0] == kind]


# -- the planner's tf32x3, on the host (the fallback) -----------------------------------
def _host_product(m, n, k, ta, tb, a, lda, b, ldb, c, ldc, alpha, beta):
    C = mat(c, m, n, 1, ldc)
    if k == 0 or alpha == 0.0:            # the scale kernel: reads neither A nor B
        C[...] = (float(beta) * C.astype(np.float64)).astype(F32) if beta else 0.0
        return
    A = mat(a, m, k, lda, 1) if ta else mat(a, m, k, 1, lda)
    B = mat(b, k, n, ldb, 1) if tb else mat(b, k, n, 1, ldb)
    r = float(alpha) * (A.astype(np.float64) @ B.astype(np.float64))
    if float(beta) != 0.0:
        r = r + float(beta) * C.astype(np.float64)
    C[...] = r.astype(F32)


_HOST = Kernel("host_tf32x3", _host_product)


class _Launch(types.SimpleNamespace):
    pass


def prepare(problems, dev, kernel="auto", precision=None, stream=None, since=None):
    LOG.append(("prepare", precision))
    out = []
    for p in problems:
        if p.m == 0 or p.n == 0:
            continue
        args = (p.m, p.n, p.k, p.ta, p.tb, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.alpha, p.beta)
        out.append(_Launch(kernel=_HOST, grid=(1, 1, 1), block=32, smem=0, args=args,
                           role="gemm", workspace=None))
    return None, None, "fake", out


# -- installing it ---------------------------------------------------------------------
def device_info(i=0):
    return types.SimpleNamespace(id=int(i), arch="sm_90a", smem_optin=232448, sm_count=132,
                                 cc=(9, 0), cc_int=90)


def install(monkeypatch) -> None:
    import importlib

    from sgemm import plan_cache
    from sgemm.int8x import device as D
    from sgemm.int8x import runner
    from sgemm.runtime import device as devmod
    from sgemm.runtime import launcher
    monkeypatch.setitem(sys.modules, "cupy", module())
    for name in ("_cp", "_ndarray", "_getdev", "_cur_stream", "_TT", "_T32", "_TSTRIDED",
                 "_tcur", "_tempty", "_tempty_like"):
        monkeypatch.setattr(plan_cache, name, None)
    monkeypatch.setattr(plan_cache, "_tdevs", {})
    monkeypatch.setattr(plan_cache, "_KIND", {})
    monkeypatch.setattr(plan_cache, "_ON", True)
    monkeypatch.setattr(launcher, "DRIVER_LAUNCH", False)
    monkeypatch.setattr(launcher, "launch", launch)
    monkeypatch.setattr(launcher, "get_kernel", get_kernel)
    monkeypatch.setattr(launcher, "as_stream", lambda s: types.SimpleNamespace(sync=lambda: None))
    monkeypatch.setattr(devmod, "require_gpu", lambda: None)
    monkeypatch.setattr(devmod, "info", device_info)
    monkeypatch.setattr(devmod, "make_current", lambda i: None)
    monkeypatch.setattr(importlib.import_module("sgemm.plan"), "prepare", prepare)
    # the engine's per-device constants and runners were made with another CuPy
    monkeypatch.setattr(D, "_constants", {})
    monkeypatch.setattr(D, "_summary_init", {})
    monkeypatch.setattr(runner, "_cache", {})
    runner.release()
    plan_cache.clear()
    STATE.update(device=0, stream=0, grid=(1, 1, 1))
    LOG.clear()
