"""Probe, CPU: the host work of one int8x call, where it falls around the
pipeline's one synchronisation, on a stand-in GPU.  Not part of the package;
no GPU, no CuPy.

    python bench/probes/int8_api_host_cpu.py                          # this tree
    SGEMM_ROOT=/path/to/other/tree python bench/probes/int8_api_host_cpu.py

The stand-in is tests/int8x/fake_gpu.py (of this tree) with every kernel a
no-op -- but for the conversions, which write a realistic summary (N(0,1)
data's) so that the scaling check runs its whole test -- and CuPy's pool a
memo by size once the operands exist (a pool hit, not a fresh host
allocation).  Each launch and
the synchronisation are time-stamped; per call (median of CALLS, 512^3,
column-major operands, C-order output as sgemm.gemm allocates it):

  before: call entry -> first conversion launch (the GPU has nothing of
          this call yet; behind a previous call's GEMMs in a loop, exposed
          in a single timed call);
  window: the synchronisation -> the INT8 GEMMs' launch (the GPU idles:
          every microsecond here is lost in any loop);
  after:  the last of the two -> return (overlaps the GEMMs);
and how many allocations, launches and runtime calls a call makes, then
cProfile's top functions by own time.  The Python of the host path on this
machine, not a GPU number: cuLaunchKernelEx, the CuPy pool and the device
queries are stand-ins (measured on the GPU by bench/probes/int8_api_cost.py).
"""
from __future__ import annotations

import cProfile
import importlib
import importlib.util
import io
import os
import pstats
import sys
import time
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OWN = os.path.dirname(os.path.dirname(HERE))
ROOT = os.environ.get("SGEMM_ROOT") or OWN                  # the tree measured
sys.path.insert(0, ROOT)
CALLS, SIZE = 300, 512


class _Patch:
    def setattr(self, obj, name, value):
        setattr(obj, name, value)

    def setitem(self, mapping, key, value):
        mapping[key] = value


def _fake():
    spec = importlib.util.spec_from_file_location(
        "fake_gpu", os.path.join(OWN, "tests", "int8x", "fake_gpu.py"))
    F = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(F)
    return F


def install():
    """The stand-in GPU, with no-op kernels and time stamps; returns (F, stamps)."""
    F = _fake()
    from sgemm import plan_cache
    from sgemm.int8x import bound as BD
    from sgemm.int8x import device as D
    from sgemm.runtime import device as devmod
    from sgemm.runtime import launcher
    P = _Patch()
    sys.modules["cupy"] = F.module()
    for name in ("_cp", "_ndarray", "_getdev", "_cur_stream", "_TT", "_T32", "_TSTRIDED",
                 "_tcur", "_tempty", "_tempty_like"):
        P.setattr(plan_cache, name, None)
    plan_cache._KIND.clear()
    launcher.DRIVER_LAUNCH = False
    devmod.require_gpu = lambda: None
    devmod.info = F.device_info
    devmod.make_current = lambda i: None
    launcher.as_stream = lambda s: types.SimpleNamespace(sync=lambda: None)
    importlib.import_module("sgemm.plan").prepare = F.prepare
    D._constants.clear()
    D._summary_init.clear()
    plan_cache.clear()
    allocs = [0]
    init = F.DevArr.__init__

    def counting(self, shape=None, *a, **k):
        if k.get("_a") is None:
            allocs[0] += 1
        init(self, shape, *a, **k)
    F.DevArr.__init__ = counting
    # N(0,1) data's statistics, written where the conversions gather them
    rng = np.random.default_rng(0)
    words = [BD.summarize(rng.standard_normal((16, SIZE)).astype(np.float32), 1)]

    def stats_at(st):
        if st:
            w = F._host(st, np.uint64, BD.WORDS)
            s = words[0]
            w[1], w[2:] = s.units, s.counts
    stamps = []
    kern = {"int8x_convert_rows": lambda *a: stats_at(a[8]),
            "int8x_row_stats": lambda *a: stats_at(a[4])}

    def launch(kernel, grid, block, smem, stream, args):
        stamps.append((kernel.name, time.perf_counter()))
        kern.get(kernel.name, lambda *a: None)(*args)
    launcher.launch = launch
    launcher.get_kernel = F.get_kernel
    rt = sys.modules["cupy"].cuda.runtime
    rt.eventSynchronize = lambda ev: stamps.append(("sync", time.perf_counter()))
    get = F.DevArr.get

    def timed_get(self):                     # the previous pipeline's words.get()
        stamps.append(("sync", time.perf_counter()))
        return get(self)
    F.DevArr.get = timed_get
    for name in ("memcpyAsync", "memsetAsync", "eventRecord"):
        f = getattr(rt, name)
        setattr(rt, name, lambda *a, _f=f, _n=name: (stamps.append((_n, 0.0)), _f(*a))[1])
    F.LOG.clear()
    return F, stamps, allocs


def split(stamps, t0, t1) -> dict:
    """before / window / after of one call from its stamps (microseconds)."""
    conv = next(t for n, t in stamps if n.startswith(("int8x_convert", "int8x_rowmax")))
    sync = next(t for n, t in stamps if n == "sync")
    gemm = next(t for n, t in stamps if n.startswith("int8_"))
    return {"before": (conv - t0) * 1e6, "window": max(gemm - sync, 0.0) * 1e6,
            "after": (t1 - max(gemm, sync)) * 1e6, "total": (t1 - t0) * 1e6,
            "launches": sum(1 for n, _ in stamps if n.startswith("int8")),
            "runtime_calls": sum(1 for n, t in stamps if t == 0.0)}


def measure(f, stamps, allocs) -> dict:
    rows = []
    for _ in range(20):
        f()
    n0 = allocs[0]
    for _ in range(CALLS):
        stamps.clear()
        t0 = time.perf_counter()
        f()
        rows.append(split(stamps, t0, time.perf_counter()))
    out = {k: float(np.median([r[k] for r in rows])) for k in rows[0]}
    out["allocations"] = (allocs[0] - n0) / CALLS
    return out


def profile(f, top=12) -> str:
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(CALLS):
        f()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(top)
    return s.getvalue()


def main() -> int:
    F, stamps, allocs = install()
    import sgemm
    from sgemm.int8x import runner as RN
    rng = np.random.default_rng(1)
    a = F.device_array(rng.standard_normal((SIZE, SIZE)).astype(np.float32), "F")
    b = F.device_array(rng.standard_normal((SIZE, SIZE)).astype(np.float32), "F")
    pool: dict = {}                  # from here on, allocations are pool hits
    real = F._aligned
    F._aligned = lambda n: pool.get(n) or pool.setdefault(n, real(n))
    rows = {"runner.gemm": lambda: RN.gemm(a, b),
            "sgemm.gemm int8x": lambda: sgemm.gemm(a, b, precision="int8x")}
    print(f"tree: {ROOT}\n{SIZE}^3, median of {CALLS} calls, microseconds on this CPU")
    for name, f in rows.items():
        r = measure(f, stamps, allocs)
        print(f"  {name:18s} before {r['before']:7.1f}  window {r['window']:7.1f}  after "
              f"{r['after']:7.1f}  total {r['total']:7.1f}  | allocations "
              f"{r['allocations']:.0f}, launches {r['launches']}, runtime calls "
              f"{r['runtime_calls']}")
    for name, f in rows.items():
        print(f"\n-- cProfile, {CALLS} calls of {name}, by own time --")
        print("\n".join(profile(f).splitlines()[:24]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
