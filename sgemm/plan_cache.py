"""The plan cache behind every one-call entry point: a repeated call on the
same shapes skips validation, layout, dispatch and launch building.

    from sgemm import plan_cache
    c = plan_cache.gemm(a, b, c, alpha=..., beta=...)   # same contract as sgemm.gemm

One mechanism serves ``gemm``, ``gemm_batched``, ``matmul`` (api.py) and
``blas.sgemm``.  Each entry point hands ``call`` its operands (a, b[, c]), a
tuple of its other arguments (``extra``: scalars, flags, kernel, precision,
the BLAS sizes...) and its uncached implementation, which returns
``(plan, result)``; ``plan`` is a Plan, or anything with its ``launches``,
``device`` and ``_operands`` (the device-side operand descriptions, output
last).

What is cached: float32 operands that are all CuPy arrays, all PyTorch CUDA
tensors (``torch.Tensor`` itself or ``nn.Parameter``, strided: no other
subclass, whose pointer may mean nothing) or all NumPy arrays (copied to
GPU 0 per call; the GPU plan is cached and the result copied back), with
non-negative strides and no zero extent, and arguments of plain types.
Anything else, and every first call, takes the uncached path, which raises
the ordinary errors; only calls that completed are stored, so a key that hits
implies every check the uncached path made.

The key is everything the launches depend on except the operands'
addresses: entry point, array kind, device, shapes, strides, address
alignment (mod 16), ``extra``, and whether an output was passed.  Launch
arguments are stored with their pointer slots as (operand, byte offset) and
relocated to the new addresses on a hit, so a loop that allocates fresh
arrays each call still hits.  A pointer belongs to an operand when it lies
in the operand's byte span (its whole N-D extent; for ``blas.sgemm`` the
part its leading dimension addresses).  When a and b overlap (``x @ x``)
every pointer into them is taken relative to a, and their distance is part
of the key.  An output allocated by the call is allocated on a hit with the
stored shape; its alignment, and that of NumPy inputs' GPU copies, is
checked against the entry's (a mismatch takes the uncached path).

A bias (the fused epilogue, epilogue.py) is a fourth operand: its shape and
strides are in the key (the activation is in ``extra``), its pointer slot is
relocated like the others', and a bias that overlaps a, b or c takes the
uncached path (which raises for c; an overlap with a or b would make its
pointer ambiguous).  Calls without a bias pay one ``is None`` test.

On a hit the only checks left are what the key cannot imply: the operands
share a device (and it is the current CuPy device for CuPy and NumPy), and
an output passed in does not overlap a or b (a range test).  An output the
call allocates is, for CuPy, one of the entry's last two outputs when
nothing else holds it (see RECYCLE_BYTES below), for PyTorch a new tensor
like the entry's template (_TORCH_TEMPLATE).  ``blas.sgemm`` on three 1-D
CuPy buffers takes ``call_blas`` and ``sgemm.matmul`` on two torch matrices
``call_torch2``: call()'s steps written out, the same keys.  Plans with a
workspace (split-K) include the stream in the key: a workspace must not be
shared by two streams.  The integer engine's plans (precision="int8x", and
"fp32" where route.weigh picks it) store their runner instead of launches
(sgemm/int8x/route.py): a hit hands it the operands' addresses and arrays
(for its fallback), and its workspace keys it per stream too.  Entries
whose output overlapped an input, or whose addresses are too low to be told
from sizes, are keyed by address (only when no operand is allocated or
copied by the call, which would never hit).
FIFO eviction at ``MAX_ENTRIES``; ``clear()`` empties it (and drops the kept
outputs); ``SGEMM_PLAN_CACHE=0`` turns it off, ``SGEMM_RECYCLE=0`` only the
keeping of outputs.
"""
from __future__ import annotations

import os
import sys
import threading
import weakref

import numpy as np

from . import _call_began
# plan.py imports these at import time already; here they save the per-call
# import statements of the hit path
from .runtime import device as devmod
from .runtime import launcher

MAX_ENTRIES = 512
_PTR_MIN = 1 << 32          # addresses below this are not told apart from sizes
_F32 = np.dtype(np.float32)
_SCALARS = (int, float, np.float32, np.float64, np.int32, np.int64)
_NP = np.ndarray
NUMPY, CUPY, TORCH = 0, 1, 2  # array kinds, as they appear in keys

_lock = threading.Lock()
_entries: dict = {}
stats = {"hits": 0, "misses": 0, "bypass": 0}
# exact operand type -> (kind, reader): one dict lookup tells a call's kind.
# Filled when a package is bound (_torch, _cupy); torch.Tensor and
# nn.Parameter share one value, so operands of both mix as one kind.
_KIND: dict = {}

# Modules and the attributes the hit path uses, bound once: a module
# attribute lookup per call is cheap, an import statement is not.
_cp = None                   # the cupy module once imported; False: not installed
_ndarray = None              # cupy.ndarray
_getdev = None               # cupy.cuda.runtime.getDevice
_cur_stream = None           # cupy.cuda.get_current_stream
_TT = None                   # torch.Tensor once torch is imported by the caller
_TP = None                   # torch.nn.Parameter (a layer's weight and bias), or torch.Tensor
_T32 = _TSTRIDED = _tcur = _tempty = None
_tdevs: dict = {}            # device id -> torch.device
_Plan = None                 # plan.Plan, bound at the first miss: importing plan.py from
                             # here at import time would make a cycle once plan.py uses the cache


class _Entry:
    __slots__ = ("device", "launches", "relocs", "has_ws", "keep", "prepared",
                 "out_shape", "align", "spare", "nxt", "nbytes", "run")

    def __init__(self, device, launches, relocs, has_ws, keep, out_shape, align,
                 kind=None, run=None):
        self.device = device
        # run(ptrs, stream, (a, b, out)) replaces the launches: the integer
        # engine (sgemm/int8x/route.py), which synchronises once mid-call
        self.run = run
        self.launches = launches      # [(kernel, grid, block, smem, args)]
        self.relocs = relocs          # per launch: [(arg index, operand 0/1/2, byte offset)]
        self.has_ws = has_ws
        self.keep = keep              # the plan's launches, while they own a workspace
        self.out_shape = out_shape    # shape of the output the call allocates (None: passed in)
        self.align = align            # the three device pointers mod 16, 4 bits each
        self.nbytes = 4 * _prod(out_shape) if out_shape is not None else 0
        # CuPy: outputs kept for reuse ([stream, array, reference counts]);
        # PyTorch: the template its outputs are allocated like; None: neither
        self.spare = None
        if kind == CUPY and _RECYCLE and self.nbytes <= RECYCLE_BYTES:
            self.spare = []
        elif kind == TORCH and _TORCH_TEMPLATE and out_shape is not None:
            self.spare = _torch_template(out_shape, device)
        self.nxt = 0
        # the same launches packed once for cuLaunchKernelEx (launcher.PreparedLaunch)
        self.prepared = ([launcher.PreparedLaunch(k, g, b, sm, args, rel)
                          for (k, g, b, sm, args), rel in zip(launches, relocs)]
                         if launcher.DRIVER_LAUNCH and run is None else None)


def _prod(shape) -> int:
    n = 1
    for x in shape:
        n *= x
    return n


def enabled() -> bool:
    return os.environ.get("SGEMM_PLAN_CACHE", "1") not in ("0", "off", "no")


_ON = enabled()


def clear() -> None:
    global _ON
    with _lock:
        _entries.clear()
        _held[0] = 0
    for k in stats:
        stats[k] = 0
    _ON = enabled()
    # the integer engine's kept workspaces now, not when the entries' runners
    # are collected (a plan and its runner form a cycle)
    engine = sys.modules.get("sgemm.int8x.runner")
    if engine is not None:
        engine.release()


def _cupy():
    global _cp, _ndarray, _getdev, _cur_stream
    if _cp is None:
        try:
            import cupy
        except ImportError:
            _cp, _ndarray = False, ()
            return False
        _cp, _ndarray = cupy, cupy.ndarray
        _getdev, _cur_stream = cupy.cuda.runtime.getDevice, cupy.cuda.get_current_stream
        _KIND[_ndarray] = (CUPY, _read_cupy)
    if _cp:                          # NumPy operands are copied to the GPU by CuPy
        _KIND.setdefault(_NP, (NUMPY, _read_numpy))
    return _cp


def _torch():
    """Bind torch's names once the caller has imported torch (never import it
    here: a CuPy-only program must not pay for it)."""
    global _TT, _TP, _T32, _TSTRIDED, _tcur, _tempty, _tempty_like
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "Tensor"):
        return False
    _T32, _TSTRIDED = torch.float32, torch.strided
    # the raw handle of the current stream without building a torch Stream
    # object (4.7 us a call on an H100 host, against ~0.3)
    raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
    _tcur = raw if raw is not None else (lambda d: torch.cuda.current_stream(d).cuda_stream)
    _tempty, _tempty_like = torch.empty, getattr(torch, "empty_like", None)
    _TT = torch.Tensor
    k = (TORCH, _read_torch)
    _KIND[_TT] = k
    param = getattr(getattr(torch, "nn", None), "Parameter", None)
    if param is not None:           # a Parameter's storage is a plain tensor's
        _KIND[param] = k
    _TP = param or _TT
    return True


def _kind_of(t):
    """(kind, reader) for an operand type, binding the packages on first
    sight: torch's names when the caller has imported torch, then CuPy (so a
    PyTorch-only program never pays for importing CuPy).  None: not cached."""
    if _TT is None:
        _torch()
    k = _KIND.get(t)
    if k is None and _cp is None:
        _cupy()
        k = _KIND.get(t)
    return k


def plain(kernel, precision, activation=None) -> bool:
    """kernel=, precision= and activation= of types the key can hold
    (anything else takes the uncached path, which names the bad value)."""
    return ((kernel is None or type(kernel) is str or type(kernel) is int)
            and (precision is None or type(precision) is str)
            and (activation is None or type(activation) is str))


# -- operands: (ptr, shape, strides, device, end of span), read once --------------
# Matrices, blas.sgemm's 1-D buffers and batches of matrices are unrolled:
# the loop over zip(shape, strides) builds an iterator and a tuple per
# dimension (the readers were the second largest part of the hit path under
# cProfile, on the CPU stand-in bench/probes/hit_path_cpu.py).
def _read_cupy(x):
    if x.dtype is not _F32:
        return None
    d = x.data
    ptr, sh, st = d.ptr, x.shape, x.strides
    nd = len(sh)
    if nd == 2:
        (m, n), (s0, s1) = sh, st
        if m and n and s0 >= 0 and s1 >= 0:
            return ptr, sh, st, d.device_id, ptr + (m - 1) * s0 + (n - 1) * s1 + 4
        return None
    if nd == 1:
        n, s0 = sh[0], st[0]
        if n and s0 >= 0:
            return ptr, sh, st, d.device_id, ptr + (n - 1) * s0 + 4
        return None
    if nd == 3:
        (z, m, n), (s0, s1, s2) = sh, st
        if z and m and n and s0 >= 0 and s1 >= 0 and s2 >= 0:
            return ptr, sh, st, d.device_id, ptr + (z - 1) * s0 + (m - 1) * s1 + (n - 1) * s2 + 4
        return None
    last = 0
    for n, s in zip(sh, st):
        if n == 0 or s < 0:
            return None
        last += (n - 1) * s
    return ptr, sh, st, d.device_id, ptr + last + 4


def _read_torch(x):
    if x.dtype is not _T32 or x.layout is not _TSTRIDED:
        return None
    dev = x.get_device()
    if dev < 0:                                     # a CPU tensor: the uncached path says so
        return None
    ptr, sh, st = x.data_ptr(), x.shape, x.stride()   # strides in elements
    if len(sh) == 2:
        (m, n), (s0, s1) = sh, st
        if m and n and s0 >= 0 and s1 >= 0:
            return ptr, sh, st, dev, ptr + 4 * ((m - 1) * s0 + (n - 1) * s1) + 4
        return None
    last = 0
    for n, s in zip(sh, st):
        if n == 0 or s < 0:
            return None
        last += (n - 1) * s
    return ptr, sh, st, dev, ptr + 4 * last + 4


def _read_numpy(x):
    if x.dtype is not _F32:
        return None
    ptr, sh, st = x.ctypes.data, x.shape, x.strides
    last = 0
    for n, s in zip(sh, st):
        if n == 0 or s < 0:
            return None
        last += (n - 1) * s
    return ptr, sh, st, 0, ptr + last + 4


def _bypass(slow, args):
    stats["bypass"] += 1
    return slow(*args)[1]


def call(tag, xs, extra, stream, slow, args, ext=None, bias=None):
    """One cached call of an entry point.

    tag: the entry point (part of the key).  xs: its operands, (a, b) or
    (a, b, c) with c the output passed in.  extra: a hashable tuple of every
    other argument the launches depend on.  slow(*args): the uncached entry
    point, returning (plan or None, result); it runs on a miss (and the
    result is stored) and on anything this path does not handle.  ext:
    optional per-operand byte extents that replace the spans the shapes
    imply (blas.sgemm: what the leading dimension addresses).  bias: the
    epilogue's bias vector, or None."""
    if not _ON:
        return _bypass(slow, args)
    k = _KIND.get(type(xs[0])) or _kind_of(type(xs[0]))
    if k is None:
        return _bypass(slow, args)
    kind, read = k
    has_c = len(xs) == 3
    ra = read(xs[0]) if _KIND.get(type(xs[1])) is k else None
    rb = read(xs[1]) if ra is not None else None
    if rb is None:
        return _bypass(slow, args)
    pa, sha, sta, dev, ha = ra
    pb, shb, stb, devb, hb = rb
    if ext is not None:
        ha, hb = pa + ext[0], pb + ext[1]
    if has_c:
        c = xs[2]
        rc = read(c) if _KIND.get(type(c)) is k else None
        if rc is None:
            return _bypass(slow, args)
        pc, shc, stc, devc, hc = rc
        if ext is not None:
            hc = pc + ext[2]
        # the output must not overlap a or b: the uncached path raises (or,
        # for blas.sgemm with A and B unread, computes) what this would be
        if (devc != dev or pc < ha and pa < hc or pc < hb and pb < hc
                or kind == NUMPY and not c.flags.writeable):
            return _bypass(slow, args)
    else:
        pc = shc = stc = None
    if devb != dev:
        return _bypass(slow, args)
    if bias is None:
        pz = shz = stz = None
    else:
        rz = read(bias) if _KIND.get(type(bias)) is k else None
        if rz is None:
            return _bypass(slow, args)
        pz, shz, stz, devz, hz = rz
        if (devz != dev or pz < ha and pa < hz or pz < hb and pb < hz
                or has_c and pz < hc and pc < hz):
            return _bypass(slow, args)
    try:
        if kind == TORCH:
            s = _tcur(dev) if stream is None else None
        elif _getdev() != dev:      # CuPy allocates and streams on the current device
            return _bypass(slow, args)
        else:
            s = _cur_stream().ptr if stream is None else None
    except Exception:               # no driver or no device: the uncached path checks
        return _bypass(slow, args)  # the arguments first, then says so
    if s is None:
        try:
            s = launcher.stream_handle(stream)
        except Exception:           # the uncached path raises it in its own order
            return _bypass(slow, args)
    if kind == NUMPY:               # the GPU copies' alignment is checked on a hit
        bits, alias = 0, None
    else:
        bits = (pa & 15) | (pb & 15) << 4 | ((pc & 15) << 8 if has_c else 0)
        alias = pb - pa if pa < hb and pb < ha else None
    key = (tag, kind, dev, bits, alias, extra, sha, sta, shb, stb, shc, stc, shz, stz)

    e = _entries.get(key)
    if e is not None and e.has_ws:
        e = _entries.get((key, s))
    if e is None and has_c and kind != NUMPY:
        e = _entries.get((key, (pa, pb, pc), s))
    if e is None:
        stats["misses"] += 1
        p, res = slow(*args)
        if p is not None:
            _store(key, s, p, res, kind, has_c, alias, ext)
        return res
    if kind == NUMPY:
        r = _hit_numpy(e, xs, s, bias)
        return r if r is not None else _bypass(slow, args)
    if not has_c:
        shape = e.out_shape
        if kind == CUPY:
            sp = e.spare
            out = _reuse(e, s, shape) if sp else None       # (an array has no truth value)
            if out is None:
                out = _ndarray(shape, _F32) if sp is None else _spare_new(e, s, shape)
            pc = out.data.ptr
        else:
            t = e.spare                 # torch: the entry's template, or None
            out = (_tempty_like(t) if t is not None else
                   _tempty(shape, dtype=_T32, device=_tdevs.get(dev) or _tdev(dev)))
            pc = out.data_ptr()
        if (bits | (pc & 15) << 8) != e.align:
            _drop_spares(e)         # a kept output aligned unlike the entry's never fits
            return _bypass(slow, args)
    else:
        out = xs[2]
    stats["hits"] += 1
    ptrs = (pa, pb, pc) if bias is None else (pa, pb, pc, pz)
    if e.prepared is None:
        _run(e, ptrs, s, (xs[0], xs[1], out))
        return out
    devmod.make_current(e.device)   # _run, inlined: one frame less a call
    for p in e.prepared:
        p(s, ptrs)
    return out


# -- outputs kept for reuse (CuPy) ---------------------------------------------------
# An allocating call on a small problem pays CuPy's pool twice, the
# allocation and, when the caller drops the result, the free: 1.8-4.6 us
# back to back on two H100 hosts, where sgemm.gemm(a, b) took 11.1-22.2
# (eager-probe-h100-2026-11-26.log; kept outputs: 16.5 against 20.8).  An entry
# keeps its last two outputs; a hit returns one of them again when nothing
# but the entry holds it (not the array, its MemoryPointer or its Memory:
# every view, DLPack capsule, ``ndarray(memptr=...)`` and
# ``__cuda_array_interface__`` consumer holds one of the three) and it was
# made on the same stream.  That is when CuPy's pool would hand the same
# block to the next allocation on that stream, so the kernel writes memory
# no one can read, ordered after everything the stream did with it.  Two
# outputs, not one: ``y = sgemm.gemm(a, b)`` in a loop still holds the
# previous result while the next call runs.  Outputs over RECYCLE_BYTES are
# not kept (their kernel outlasts an allocation), nor more than
# RECYCLE_TOTAL bytes in all; ``clear()`` drops them.  PyTorch outputs are
# never kept: a block its allocator frees waits for the streams that
# ``record_stream`` named, which a kept tensor would bypass.  The reference
# counts are compared with the same array's counts taken when it was made,
# in the same code shape (_refs called on a local that a list also holds);
# builds without the GIL, or whose interpreter may borrow references (3.14),
# could count differently, so they do not keep outputs.
RECYCLE_BYTES = 1 << 20
RECYCLE_TOTAL = 64 << 20
_RECYCLE = (os.environ.get("SGEMM_RECYCLE", "1") not in ("0", "off", "no")
            and sys.version_info < (3, 14)
            and getattr(sys, "_is_gil_enabled", lambda: True)())
_held = [0]                  # bytes of all kept outputs
# PyTorch outputs: torch.empty_like of the template cost 4.4-4.5 us a call
# against 7.2-7.4 for torch.empty(shape, dtype=, device=), whose keyword
# arguments are parsed per call (one H100 host; on another, empty_like of a
# tensor 1.7 against 3.1; eager-probe-h100-2026-11-26.log).  The template is
# the entry's own float32 tensor of the output's shape on its device, with
# zero strides: one element of storage.  empty_like's default
# (preserve_format) copies the strides only of a dense, non-overlapping
# tensor and gives any other the suggested memory format, which for 1 to 3
# dimensions is contiguous; a 4-D or 5-D one could be suggested channels-last,
# so those use torch.empty.  The output is a fresh tensor from torch's
# allocator: nothing of torch's stream bookkeeping is bypassed.
_TORCH_TEMPLATE = True
_tempty_like = None
_getrc = sys.getrefcount
_getwrc = weakref.getweakrefcount


def _refs(o):
    d = o.data
    return _getrc(o), _getrc(d), _getrc(d.mem)


def _reuse(e, s, shape):
    """A kept output on stream s that nothing else holds, or None."""
    sp = e.spare
    for t in sp:
        if t[0] == s:
            o = t[1]
            if _refs(o) == t[2]:
                # CuPy lets a caller reshape an array in place; a weak reference
                # (a finalizer, a WeakValueDictionary) must see it die
                if o.shape == shape and o.dtype is _F32 and not _getwrc(o):
                    return o
                try:                    # let it go now (another thread may have)
                    sp.remove(t)
                    _held[0] -= e.nbytes
                except ValueError:
                    pass
                return None
    return None


def _spare_new(e, s, shape):
    """A new output, kept by the entry (in place of its older one)."""
    o = _ndarray(shape, _F32)
    t = [s, o, None]
    t[2] = _refs(o)          # held by o and t alone, as _reuse counts
    sp = e.spare
    if len(sp) == 2:
        sp[e.nxt] = t
        e.nxt ^= 1
    elif _held[0] + e.nbytes <= RECYCLE_TOTAL:
        sp.append(t)
        _held[0] += e.nbytes
    return o


def _drop_spares(e) -> None:
    if type(e.spare) is list:
        _held[0] -= len(e.spare) * e.nbytes
    e.spare = None


def _torch_template(shape, device):
    """A float32 tensor of ``shape`` on ``device`` with zero strides (see
    _TORCH_TEMPLATE), or None where torch.empty is kept."""
    if not 1 <= len(shape) <= 3 or _tempty_like is None:
        return None
    torch = sys.modules.get("torch")
    try:
        t = torch.empty_strided(shape, (0,) * len(shape), dtype=_T32,
                                device=_tdevs.get(device) or _tdev(device))
    except Exception:               # whatever torch refuses here, torch.empty still does
        return None
    return t


def call_blas(A, B, C, extra, ext, stream, slow, args):
    """blas.sgemm's cached call: ``call("blas", (A, B, C), extra, stream, slow,
    args, ext)``, with its steps written out for the common case, three 1-D
    CuPy buffers on the caller's stream (the same key, the same entries);
    anything else goes to call().  A 1-D buffer's shape is its size (a C
    attribute; the shape property builds a tuple), and the spans are the
    extents blas.sgemm computed, so no operand reader runs."""
    t = type(A)
    if (t is not _ndarray or type(B) is not t or type(C) is not t or stream is not None
            or not _ON or A.dtype is not _F32 or B.dtype is not _F32 or C.dtype is not _F32):
        return call("blas", (A, B, C), extra, stream, slow, args, ext)
    sta, stb, stc = A.strides, B.strides, C.strides
    na, nb, nc = A.size, B.size, C.size
    # call()'s reader takes nothing else: N-D, empty or reversed buffers go there
    if (len(sta) != 1 or len(stb) != 1 or len(stc) != 1 or not (na and nb and nc)
            or sta[0] < 0 or stb[0] < 0 or stc[0] < 0):
        return call("blas", (A, B, C), extra, stream, slow, args, ext)
    da, db, dc = A.data, B.data, C.data
    pa, pb, pc = da.ptr, db.ptr, dc.ptr
    dev = da.device_id
    ha, hb, hc = pa + ext[0], pb + ext[1], pc + ext[2]
    # as in call(): C must not overlap A or B; one device, the current one
    if (db.device_id != dev or dc.device_id != dev
            or pc < ha and pa < hc or pc < hb and pb < hc):
        return _bypass(slow, args)
    try:
        if _getdev() != dev:
            return _bypass(slow, args)
        s = _cur_stream().ptr
    except Exception:
        return _bypass(slow, args)
    alias = pb - pa if pa < hb and pb < ha else None
    key = ("blas", CUPY, dev, (pa & 15) | (pb & 15) << 4 | (pc & 15) << 8, alias, extra,
           (na,), sta, (nb,), stb, (nc,), stc, None, None)
    e = _entries.get(key)
    if e is not None and e.has_ws:
        e = _entries.get((key, s))
    if e is None:
        e = _entries.get((key, (pa, pb, pc), s))
        if e is None:
            stats["misses"] += 1
            p, res = slow(*args)
            if p is not None:
                _store(key, s, p, res, CUPY, True, alias, ext)
            return res
    stats["hits"] += 1
    ptrs = (pa, pb, pc)
    if e.prepared is None:
        _run(e, ptrs, s)
        return C
    devmod.make_current(e.device)
    for p in e.prepared:
        p(s, ptrs)
    return C


def call_torch2(tag, a, b, extra, slow, args, bias=None):
    """``call(tag, (a, b), extra, None, slow, args, bias=bias)`` written out
    for two 2-D PyTorch tensors (torch.Tensor or nn.Parameter itself) and an
    optional 1-D bias on the caller's stream, output allocated
    (``sgemm.matmul`` on matrices, ``sgemm.torch.linear``): the same key and
    entries, without the readers' calls and the branches for c and streams;
    anything else goes to call()."""
    ta, tb = type(a), type(b)
    if (ta is not _TT and ta is not _TP) or (tb is not _TT and tb is not _TP) or not _ON:
        return call(tag, (a, b), extra, None, slow, args, bias=bias)
    sha, shb = a.shape, b.shape
    if (a.dtype is not _T32 or b.dtype is not _T32 or a.layout is not _TSTRIDED
            or b.layout is not _TSTRIDED or len(sha) != 2 or len(shb) != 2):
        return call(tag, (a, b), extra, None, slow, args, bias=bias)
    dev = a.get_device()
    sta, stb = a.stride(), b.stride()
    (m, k), (s0, s1) = sha, sta
    (k2, n), (t0, t1) = shb, stb
    # call()'s reader takes nothing else: host tensors, empty or reversed ones go there
    if dev < 0 or not (m and k and k2 and n) or s0 < 0 or s1 < 0 or t0 < 0 or t1 < 0:
        return call(tag, (a, b), extra, None, slow, args, bias=bias)
    if b.get_device() != dev:
        return _bypass(slow, args)
    pa, pb = a.data_ptr(), b.data_ptr()
    ha = pa + 4 * ((m - 1) * s0 + (k - 1) * s1) + 4
    hb = pb + 4 * ((k2 - 1) * t0 + (n - 1) * t1) + 4
    if bias is None:
        pz = shz = stz = None
    else:       # call()'s checks for a bias, for the one shape a linear layer's has
        shz = bias.shape
        tz = type(bias)
        if ((tz is not _TT and tz is not _TP) or bias.dtype is not _T32
                or bias.layout is not _TSTRIDED or len(shz) != 1):
            return call(tag, (a, b), extra, None, slow, args, bias=bias)
        (nz,), stz = shz, bias.stride()
        if not nz or stz[0] < 0 or bias.get_device() < 0:
            return call(tag, (a, b), extra, None, slow, args, bias=bias)
        pz = bias.data_ptr()
        hz = pz + 4 * (nz - 1) * stz[0] + 4
        if bias.get_device() != dev or pz < ha and pa < hz or pz < hb and pb < hz:
            return _bypass(slow, args)
    try:
        s = _tcur(dev)
    except Exception:
        return _bypass(slow, args)
    bits = (pa & 15) | (pb & 15) << 4
    alias = pb - pa if pa < hb and pb < ha else None
    key = (tag, TORCH, dev, bits, alias, extra, sha, sta, shb, stb, None, None, shz, stz)
    e = _entries.get(key)
    if e is not None and e.has_ws:
        e = _entries.get((key, s))
    if e is None:
        stats["misses"] += 1
        p, res = slow(*args)
        if p is not None:
            _store(key, s, p, res, TORCH, False, alias, None)
        return res
    t = e.spare
    out = (_tempty_like(t) if t is not None else
           _tempty(e.out_shape, dtype=_T32, device=_tdevs.get(dev) or _tdev(dev)))
    pc = out.data_ptr()
    if (bits | (pc & 15) << 8) != e.align:
        _drop_spares(e)
        return _bypass(slow, args)
    stats["hits"] += 1
    ptrs = (pa, pb, pc) if bias is None else (pa, pb, pc, pz)
    if e.prepared is None:
        _run(e, ptrs, s, (a, b, out))
        return out
    devmod.make_current(e.device)
    for p in e.prepared:
        p(s, ptrs)
    return out


def _tdev(dev):
    import torch
    d = _tdevs[dev] = torch.device("cuda", dev)
    return d


def _hit_numpy(e, xs, s, bias=None):
    """NumPy operands: copy to GPU 0, launch, copy the result back (the
    uncached path's steps, without its validation and dispatch).  None when
    the copies are aligned unlike the entry's operands."""
    g = [_cp.asarray(x) for x in xs]
    out = g[2] if len(g) == 3 else _ndarray(e.out_shape, _F32)
    ptrs = (g[0].data.ptr, g[1].data.ptr, out.data.ptr)
    if (ptrs[0] & 15) | (ptrs[1] & 15) << 4 | (ptrs[2] & 15) << 8 != e.align:
        return None
    if bias is not None:
        gz = _cp.asarray(bias)
        ptrs += (gz.data.ptr,)
    stats["hits"] += 1
    _run(e, ptrs, s, (g[0], g[1], out))
    launcher.as_stream(s).sync()
    host = out.get()
    if len(xs) == 3:
        xs[2][...] = host
        return xs[2]
    return host


def _run(e: _Entry, ptrs, s_handle, arrays=None) -> None:
    """The entry's launches on operands at ``ptrs`` (``arrays``: the same
    operands as arrays, a, b, out, for an entry that may fall back to
    another plan)."""
    if e.run is not None:
        e.run(ptrs, s_handle, arrays)
        return
    devmod.make_current(e.device)
    if e.prepared is not None:
        for p in e.prepared:
            p(s_handle, ptrs)
        return
    for (k, grid, block, smem, args), rel in zip(e.launches, e.relocs):
        if rel:
            args = list(args)
            for i, op, off in rel:
                args[i] = ptrs[op] + off
        launcher.launch(k, grid, block, smem, s_handle, args)


def _span(d, ext):
    """[lo, hi) bytes of a device-side operand description."""
    if ext is not None:
        return d.ptr, d.ptr + ext
    return d.byte_span()


def _layout_matches(desc, shape) -> bool:
    """The result the caller got has the layout of the plan's C-order output
    (the same extents, less some of extent 1: matmul's 1-D results)."""
    acc, st = 1, []
    for n in reversed(desc.shape):
        st.append(acc)
        acc *= n
    return (tuple(desc.strides) == tuple(reversed(st))
            and [n for n in desc.shape if n != 1] == [n for n in shape if n != 1])


def _store(key, s_handle, plan, res, kind, has_c, alias, ext) -> None:
    ops = plan._operands
    if len(ops) != 3 or ops[2] is None:
        return
    bias = getattr(plan, "_bias", None)
    ptrs = tuple(d.ptr for d in ops)
    spans = [_span(d, None if ext is None else ext[i]) for i, d in enumerate(ops)]
    if bias is not None:
        spans.append(bias.byte_span())
    out_shape = None
    if not has_c:
        out_shape = tuple(res.shape)
        if not _layout_matches(ops[2], out_shape):
            return
    ab = spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1]
    if ab != (alias is not None):          # not the operands the key was made from
        return
    c_overlap = any(spans[2][0] < spans[j][1] and spans[j][0] < spans[2][1] for j in (0, 1))
    relocatable = not c_overlap and min(sp[0] for sp in spans) >= _PTR_MIN
    if not relocatable and (not has_c or kind == NUMPY or bias is not None):
        return      # keyed by address it would never hit (or, with a bias, hit stale)
    # with a and b overlapping, every pointer into either is relative to a
    owners = [(spans[2], 2, ptrs[2])]
    if ab:
        owners.append(((min(spans[0][0], spans[1][0]), max(spans[0][1], spans[1][1])),
                       0, ptrs[0]))
    else:
        owners += [(spans[0], 0, ptrs[0]), (spans[1], 1, ptrs[1])]
    if bias is not None:
        owners.append((spans[3], 3, bias.ptr))
    # the integer engine's plans: a runner instead of launches, its
    # workspace per stream like split-K's (sgemm/int8x/route.py)
    run = getattr(getattr(plan, "_int8x", None), "replay", None)
    launches, relocs, has_ws = [], [], run is not None
    for l in plan.launches:
        if getattr(l, "workspace", None) is not None:
            has_ws = True
        rel = []
        if relocatable:
            for i, x in enumerate(l.args):
                if type(x) is int:
                    for (lo, hi), op, base in owners:
                        if lo <= x < hi:        # a pointer into operand op
                            rel.append((i, op, x - base))
                            break
        relocs.append(rel)
        launches.append((l.kernel, l.grid, l.block, l.smem, tuple(l.args)))
    align = (ptrs[0] & 15) | (ptrs[1] & 15) << 4 | (ptrs[2] & 15) << 8
    e = _Entry(plan.device.id, launches, relocs, has_ws, plan.launches if has_ws else None,
               out_shape, align, kind, run)
    if not relocatable:
        k = (key, ptrs, s_handle)
    elif has_ws:
        k = (key, s_handle)
    else:
        k = key
    with _lock:
        if len(_entries) >= MAX_ENTRIES:
            for old in list(_entries)[: MAX_ENTRIES // 4]:      # FIFO: drop the oldest
                _drop_spares(_entries.pop(old))
        _entries[k] = e
        if relocatable and has_ws:
            _entries.setdefault(key, e)   # marker: look up again with the stream


# -- gemm --------------------------------------------------------------------------
def _plan_cls():
    global _Plan
    if _Plan is None:
        from .plan import Plan
        _Plan = Plan
    return _Plan


def gemm_uncached(a, b, c, alpha, beta, trans_a, trans_b, kernel, precision, stream,
                  bias=None, activation=None, ndims=(2,), what="gemm"):
    """The full path: validate, lay out, dispatch, launch; (plan, result)."""
    since = _call_began()    # before the imports a first call makes (measure.CALL_S)
    with workspace_for(a):
        p = _plan_cls()(a, b, c, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b,
                        kernel=kernel, precision=precision, stream=stream, bias=bias,
                        activation=activation, _ndims=ndims, _what=what, _since=since)
    return p, p.execute()


def workspace_for(a):
    """The context a Plan of operand ``a`` is built in: PyTorch tensors get
    their split-K / pack workspaces from torch's allocator (launches.py)."""
    if _TT is None:
        _torch()
    from .launches import workspace_package
    return workspace_package("torch" if _TT is not None and isinstance(a, _TT) else None)


def _gemm_like(tag, uncached, args):
    """``gemm`` and ``gemm_batched``: plain scalars and flags go through the
    cache, anything else takes the uncached path (which names it)."""
    a, b, c, alpha, beta, trans_a, trans_b, kernel, precision, stream, bias, act = args
    if not (type(alpha) in _SCALARS and type(beta) in _SCALARS and type(trans_a) is bool
            and type(trans_b) is bool
            and (type(kernel) is str and precision is None and act is None
                 or plain(kernel, precision, act))):
        return _bypass(uncached, args)
    # alpha and beta as given: scalars of _SCALARS that compare equal are the
    # same float32 in the launches, and they hash alike (float() cost ~0.1 us)
    return call(tag, (a, b) if c is None else (a, b, c),
                (alpha, beta, trans_a, trans_b, kernel, precision, act),
                stream, uncached, args, bias=bias)


def gemm(a, b, c=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False,
         kernel="auto", precision=None, stream=None, bias=None, activation=None):
    """``sgemm.gemm`` with a plan cache (same arguments, same result)."""
    return _gemm_like("gemm", gemm_uncached, (a, b, c, alpha, beta, trans_a, trans_b,
                                              kernel, precision, stream, bias, activation))


def _batched_uncached(a, b, c, alpha, beta, trans_a, trans_b, kernel, precision, stream,
                      bias=None, activation=None):
    return gemm_uncached(a, b, c, alpha, beta, trans_a, trans_b, kernel, precision, stream,
                         bias, activation, (3,), "gemm_batched")


def gemm_batched(a, b, c=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False,
                 kernel="auto", precision=None, stream=None, bias=None, activation=None):
    """``sgemm.gemm_batched`` with a plan cache (same arguments, same result)."""
    return _gemm_like("gemm_batched", _batched_uncached, (a, b, c, alpha, beta, trans_a,
                                                          trans_b, kernel, precision, stream,
                                                          bias, activation))
