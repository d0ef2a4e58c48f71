"""Probe: the plan cache's hit path on the CPU, piece by piece, for the
judge's CuPy calls at 64^3.  Not part of the package; no GPU, no CuPy.

    python bench/probes/hit_path_cpu.py

A stand-in for CuPy: an array class with CuPy's attribute names (dtype,
data.ptr, data.device_id, shape and strides as fresh tuples per read) over
host memory, so that the first call (a miss) runs the real Plan with the
host "kernel" of tests/test_plan_cache.py, and the hits relaunch through a
launch that does nothing.  Device and stream queries return constants and
``make_current`` is a no-op: on the GPU those are measured apart
(bench/probes/eager_costs.py --judge).  What is left is the Python of the
entry points and of ``plan_cache.call``: a before/after number for one
machine, not a GPU number.  Each row: best of 7 repeats of 20000 calls.
"""
from __future__ import annotations

import importlib
import os
import sys
import timeit
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("SGEMM_ROOT") or os.path.dirname(os.path.dirname(HERE))   # the tree measured
sys.path.insert(0, ROOT)
F32 = np.dtype(np.float32)
_keep = []


class _Mem:
    __slots__ = ("ptr", "device_id", "mem")

    def __init__(self, ptr):
        self.ptr, self.device_id, self.mem = ptr, 0, object()


class Arr:
    """CuPy's attributes, over a float32 host array."""
    __slots__ = ("_a", "data", "dtype")

    def __init__(self, shape, dtype=F32, _a=None):
        if _a is None:
            _a = np.empty(shape, np.float32)
        self._a, self.data, self.dtype = _a, _Mem(_a.ctypes.data), _a.dtype

    shape = property(lambda self: tuple(self._a.shape))
    strides = property(lambda self: tuple(self._a.strides))
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    device = property(lambda self: types.SimpleNamespace(id=0))

    @property
    def __cuda_array_interface__(self):
        a = self._a
        return {"shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False),
                "strides": a.strides, "version": 3}

    def __getitem__(self, idx):
        return Arr(None, _a=self._a[idx])

    def ravel(self):
        return Arr(None, _a=self._a.reshape(-1))

    def get(self):
        return np.array(self._a)


Arr.__module__ = "cupy"


def arr(shape, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    raw = np.zeros(x.nbytes + 128, np.uint8)       # 64-byte aligned, like the pool's
    _keep.append(raw)
    s = (-raw.ctypes.data) % 64
    a = raw[s:s + x.nbytes].view(np.float32).reshape(x.shape)
    a[...] = x
    return Arr(None, _a=a)


def install():
    """Fake CuPy and the GPU the way tests/test_plan_cache.py does, with a
    launch that does nothing once a plan is cached."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import test_plan_cache as T
    from sgemm import plan_cache
    from sgemm.runtime import device as devmod
    from sgemm.runtime import launcher
    plan_mod = importlib.import_module("sgemm.plan")
    cp = types.ModuleType("cupy")
    cp.ndarray = Arr
    cp.asarray = lambda x: x
    cp.empty = lambda shape, dtype=F32: arr(shape, 0)
    stream = types.SimpleNamespace(ptr=0)
    cp.cuda = types.SimpleNamespace(
        Device=T._Device, runtime=types.SimpleNamespace(getDevice=lambda: 0),
        get_current_stream=lambda: stream)
    sys.modules["cupy"] = cp
    # the tests' stand-in torch (properties), allocating without keeping
    # every buffer alive as the tests' allocator does
    tm = types.ModuleType("torch")
    tm.__dict__.update(T._torch_mod.__dict__)
    tm.empty = lambda shape, dtype=None, device=None: T.FakeTensor(np.empty(shape, np.float32))
    tm.empty_like = lambda t: T.FakeTensor(np.empty(t._a.shape, np.float32))
    T._torch_mod.empty, T._torch_mod.empty_like = tm.empty, tm.empty_like
    sys.modules["torch"] = T._torch_mod
    launcher.DRIVER_LAUNCH = False
    launcher.launch = T.fake_launch
    launcher.as_stream = lambda s: types.SimpleNamespace(sync=lambda: None)
    devmod.require_gpu = lambda: None
    devmod.info = lambda i=0: types.SimpleNamespace(id=i)
    devmod.make_current = lambda i: None
    plan_mod.prepare = T.fake_prepare
    plan_cache.clear()
    plan_cache._ON = True


def nop_launches():
    """Every stored entry relaunches through a launch that does nothing."""
    from sgemm import plan_cache
    for e in plan_cache._entries.values():
        e.prepared = [lambda s, p: None] * len(e.launches)


def timed(rows: dict, samples: int = 25, number: int = 5000) -> dict:
    """Per row: (min, median) us a call over ``samples`` samples of ``number``
    calls, the rows' samples interleaved (the CPU is shared: a slow moment
    hits every row alike)."""
    got = {k: [] for k in rows}
    for f in rows.values():
        for _ in range(200):
            f()
    for _ in range(samples):
        for k, f in rows.items():
            got[k].append(timeit.timeit(f, number=number) / number * 1e6)
    return {k: (min(v), sorted(v)[len(v) // 2]) for k, v in got.items()}


def main() -> int:
    install()
    import sgemm
    import sgemm.blas
    from sgemm import plan_cache
    s = 64
    a, b, c = arr((s, s), 1), arr((s, s), 2), arr((s, s), 3)
    a3, b3, c3 = arr((8, s, s), 4), arr((8, s, s), 5), arr((8, s, s), 6)
    A, B, C = a.ravel(), b.ravel(), c.ravel()
    rows = {
        "sgemm.gemm(a, b, c)": lambda: sgemm.gemm(a, b, c),
        "sgemm.gemm(a, b)": lambda: sgemm.gemm(a, b),
        "sgemm.gemm(a, b, c, trans_a=, trans_b=, precision=) (the judge's call)": lambda: sgemm.gemm(
            a, b, c, trans_a=True, trans_b=False, precision="ieee"),
        "sgemm.matmul(a, b)": lambda: sgemm.matmul(a, b),
        "sgemm.gemm_batched(a3, b3, c3)": lambda: sgemm.gemm_batched(a3, b3, c3),
        "sgemm.matmul(a3, b3)": lambda: sgemm.matmul(a3, b3),
        "sgemm.blas.sgemm(...) on raveled buffers": lambda: sgemm.blas.sgemm(
            "N", "N", s, s, s, 1.0, A, s, B, s, 0.0, C, s),
    }
    import test_plan_cache as T
    ta, tb = T.tarr(np.random.default_rng(7).standard_normal((s, s))), T.tarr(
        np.random.default_rng(8).standard_normal((s, s)))
    rows["sgemm.matmul(torch a, b) (stand-in tensors)"] = lambda: sgemm.matmul(ta, tb)
    for f in rows.values():
        f()                                    # the miss: the real Plan, on the host
        f()
    nop_launches()
    api = sys.modules["sgemm.api"]
    if hasattr(api, "_call_torch2"):
        via_call = (lambda tag, a_, b_, x, sl, ar, bias=None:
                    plan_cache.call(tag, (a_, b_), x, None, sl, ar))
        rows["matmul(torch a, b) through call() (not call_torch2)"] = lambda: (
            setattr(api, "_call_torch2", via_call), sgemm.matmul(ta, tb),
            setattr(api, "_call_torch2", plan_cache.call_torch2))
    rows["alloc: Arr((64, 64), f32) (stand-in)"] = lambda: Arr((s, s), F32)
    rows["a.ravel() (stand-in)"] = lambda: a.ravel()
    blas_mod = sys.modules["sgemm.blas"]
    if hasattr(plan_cache, "call_blas"):       # this tree: its switches, in one process
        call = plan_cache.call
        rows["blas through call() (not call_blas)"] = lambda: (
            setattr(blas_mod, "_call_blas", lambda A_, B_, C_, x, e, st, sl, ar: call(
                "blas", (A_, B_, C_), x, st, sl, ar, e)),
            sgemm.blas.sgemm("N", "N", s, s, s, 1.0, A, s, B, s, 0.0, C, s),
            setattr(blas_mod, "_call_blas", plan_cache.call_blas))
        rows["blas: the two setattr of the row above"] = lambda: (
            setattr(blas_mod, "_call_blas", plan_cache.call_blas),
            setattr(blas_mod, "_call_blas", plan_cache.call_blas))

        def no_keep(f):
            entries = list(plan_cache._entries.values())

            def g():                 # the kept outputs set aside for one call
                spares = [e.spare for e in entries]
                for e in entries:
                    e.spare = None
                f()
                for e, sp in zip(entries, spares):
                    e.spare = sp
            return g
        rows["sgemm.gemm(a, b), outputs not kept"] = no_keep(rows["sgemm.gemm(a, b)"])
        rows["sgemm.gemm(a, b, c), the set-aside of the row above"] = no_keep(
            rows["sgemm.gemm(a, b, c)"])
    us = timed(rows)
    print(f"stand-in hit path (CPU, Python {sys.version.split()[0]}, tree {ROOT}), "
          f"us a call, min / median of 25 interleaved samples of 5000 calls")
    for name, (lo, med) in us.items():
        print(f"  {name:44s} {lo:6.2f} {med:6.2f}")
    print(f"plan cache {plan_cache.stats}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
