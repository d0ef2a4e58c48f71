"""A small plan cache for the one-call API: repeated ``gemm`` calls on the
same shapes skip validation, layout, dispatch and launch building.

    from sgemm import plan_cache
    c = plan_cache.gemm(a, b, c, alpha=..., beta=...)   # same contract as sgemm.gemm

Wiring (api.py): have ``api.gemm`` return ``plan_cache.gemm(...)`` with the
same arguments; it falls back to ``Plan(...).execute()`` for everything it
does not cache.

What is cached: 2-D float32 CuPy operands on the current device, flags and
scalars of plain Python/NumPy types (anything else takes the ordinary path,
which also raises the ordinary errors).  The key is everything a Plan's
launches depend on except the operands' addresses: shapes, strides, address
alignment (mod 16), alpha, beta, flags, kernel, precision, device, and
whether a C was passed.  Launch arguments are stored with their pointer
slots recorded as (operand, offset) and relocated to the new addresses on a
hit, so a loop that allocates fresh arrays each call still hits.  Entries
whose operands' address ranges overlap when built, or whose addresses are too
low to be told from sizes, are keyed by address instead.  On a hit the only
check left is that C does not overlap A or B (a range test); everything else
is implied by the key.  Plans with a workspace (split-K) include the stream
in the key: a workspace must not be shared by two streams.  FIFO eviction
at ``MAX_ENTRIES``; ``clear()`` empties it; ``SGEMM_PLAN_CACHE=0`` turns it off.
"""
from __future__ import annotations

import os
import threading

import numpy as np

# plan.py imports these at import time already; here they save the per-call
# import statements of the hit path
from .runtime import device as devmod
from .runtime import launcher

MAX_ENTRIES = 512
_PTR_MIN = 1 << 32          # addresses below this are not told apart from sizes
_F32 = np.dtype(np.float32)
_SCALARS = (int, float, np.float32, np.float64, np.int32, np.int64)

_lock = threading.Lock()
_entries: dict = {}
stats = {"hits": 0, "misses": 0, "bypass": 0}
_cp = None                   # the cupy module, once imported
_ndarray = None


class _Entry:
    __slots__ = ("device", "launches", "relocs", "has_ws", "keep", "prepared")

    def __init__(self, device, launches, relocs, has_ws, keep):
        self.device = device
        self.launches = launches      # [(kernel, grid, block, smem, args)]
        self.relocs = relocs          # per launch: [(arg index, operand 0/1/2, byte offset)]
        self.has_ws = has_ws
        self.keep = keep              # the plan's launches, while they own a workspace
        # the same launches packed once for cuLaunchKernelEx (launcher.PreparedLaunch)
        self.prepared = ([launcher.PreparedLaunch(k, g, b, sm, args, rel)
                          for (k, g, b, sm, args), rel in zip(launches, relocs)]
                         if launcher.DRIVER_LAUNCH else None)


def enabled() -> bool:
    return os.environ.get("SGEMM_PLAN_CACHE", "1") not in ("0", "off", "no")


_ON = enabled()


def clear() -> None:
    global _ON
    with _lock:
        _entries.clear()
    for k in stats:
        stats[k] = 0
    _ON = enabled()


def _cupy():
    global _cp, _ndarray
    if _cp is None:
        try:
            import cupy
        except ImportError:
            _cp, _ndarray = False, ()
            return False
        _cp, _ndarray = cupy, cupy.ndarray
    return _cp


def _slow(a, b, c, alpha, beta, trans_a, trans_b, kernel, precision, stream):
    from .plan import Plan
    stats["bypass"] += 1
    return Plan(a, b, c, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b,
                kernel=kernel, precision=precision, stream=stream).execute()


def gemm(a, b, c=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False,
         kernel="auto", precision=None, stream=None):
    """``sgemm.gemm`` with a plan cache (same arguments, same result)."""
    # The hit path is host time on every small call (issue 5 keeps it under
    # cupy.matmul's): each CuPy shape/strides read builds a tuple, so each is
    # read once, and the spans are computed inline.
    cp = _cp if _cp is not None else _cupy()
    if not (_ON and cp and type(a) is _ndarray and type(b) is _ndarray
            and (c is None or type(c) is _ndarray) and a.ndim == 2 and b.ndim == 2
            and a.dtype is _F32 and b.dtype is _F32 and type(alpha) in _SCALARS
            and type(beta) in _SCALARS and type(trans_a) is bool and type(trans_b) is bool
            and (type(kernel) is str or type(kernel) is int)):
        return _slow(a, b, c, alpha, beta, trans_a, trans_b, kernel, precision, stream)
    da, db = a.data, b.data
    dev = da.device_id
    if db.device_id != dev or cp.cuda.runtime.getDevice() != dev:
        return _slow(a, b, c, alpha, beta, trans_a, trans_b, kernel, precision, stream)
    ash, ast, bsh, bst = a.shape, a.strides, b.shape, b.strides
    if c is None:
        if beta != 0:
            return _slow(a, b, c, alpha, beta, trans_a, trans_b, kernel, precision, stream)
        out = _ndarray((ash[1] if trans_a else ash[0], bsh[0] if trans_b else bsh[1]), _F32)
    else:
        if c.ndim != 2 or c.dtype is not _F32 or c.data.device_id != dev:
            return _slow(a, b, c, alpha, beta, trans_a, trans_b, kernel, precision, stream)
        out = c
    osh, ost = out.shape, out.strides
    # byte ranges [lo, hi) of the three operands; empty ones or negative
    # strides take the ordinary path
    if (0 in ash or 0 in bsh or 0 in osh
            or ast[0] < 0 or ast[1] < 0 or bst[0] < 0 or bst[1] < 0 or ost[0] < 0 or ost[1] < 0):
        return _slow(a, b, c, alpha, beta, trans_a, trans_b, kernel, precision, stream)
    pa, pb, pc = da.ptr, db.ptr, out.data.ptr
    sa = (pa, pa + (ash[0] - 1) * ast[0] + (ash[1] - 1) * ast[1] + 4)
    sb = (pb, pb + (bsh[0] - 1) * bst[0] + (bsh[1] - 1) * bst[1] + 4)
    sc = (pc, pc + (osh[0] - 1) * ost[0] + (osh[1] - 1) * ost[1] + 4)
    if stream is None:
        s_handle = cp.cuda.get_current_stream().ptr
    else:
        s_handle = launcher.stream_handle(stream)
    shape_key = (ash, ast, bsh, bst, osh, ost, dev,
                 (pa & 15) | (pb & 15) << 4 | (pc & 15) << 8, float(alpha), float(beta),
                 trans_a, trans_b, kernel, precision, c is None)
    e = _entries.get(shape_key)
    if e is not None and e.has_ws:
        e = _entries.get((shape_key, s_handle))
    ptrs = (pa, pb, pc)
    if e is None:
        e = _entries.get((shape_key, ptrs, s_handle))
    # c must not overlap a or b (their address ranges may have changed)
    if e is not None and (pc < sa[1] and pa < sc[1] or pc < sb[1] and pb < sc[1]):
        e = None
    if e is None:
        from .plan import Plan
        stats["misses"] += 1
        p = Plan(a, b, out, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b,
                 kernel=kernel, precision=precision, stream=stream)
        _store(shape_key, ptrs, s_handle, p, (sa, sb, sc))
        p.execute(s_handle)
        return out
    stats["hits"] += 1
    _run(e, ptrs, s_handle)
    return out


def _run(e: _Entry, ptrs, s_handle) -> None:
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


def _store(shape_key, ptrs, s_handle, plan, spans) -> None:
    overlap = any(spans[i][0] < spans[j][1] and spans[j][0] < spans[i][1]
                  for i in range(3) for j in range(i + 1, 3))
    relocatable = not overlap and min(s[0] for s in spans) >= _PTR_MIN
    launches, relocs, has_ws = [], [], False
    for l in plan.launches:
        if getattr(l, "workspace", None) is not None:
            has_ws = True
        rel = []
        if relocatable:
            for i, x in enumerate(l.args):
                if type(x) is int:
                    for op, (lo, hi) in enumerate(spans):
                        if lo <= x < hi:        # a pointer into operand op
                            rel.append((i, op, x - ptrs[op]))
                            break
        relocs.append(rel)
        launches.append((l.kernel, l.grid, l.block, l.smem, tuple(l.args)))
    e = _Entry(plan.device.id, launches, relocs, has_ws, plan.launches if has_ws else None)
    if not relocatable:
        key = (shape_key, ptrs, s_handle)
    elif has_ws:
        key = (shape_key, s_handle)
    else:
        key = shape_key
    with _lock:
        if len(_entries) >= MAX_ENTRIES:
            for k in list(_entries)[: MAX_ENTRIES // 4]:      # FIFO: drop the oldest
                del _entries[k]
        _entries[key] = e
        if relocatable and has_ws:
            _entries.setdefault(shape_key, e)   # marker: look up again with the stream
