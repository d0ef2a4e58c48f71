"""Probe: a fresh process's first calls with the kernel bundle -- CUDA
context created first (excluded, as the first-call target says), then the
first sgemm call profiled (what the one-time cost is), then first calls of
new shapes and of tf32x3.  Not part of the package.

    python bench/probes/first_call.py      (after python -m sgemm.build)
"""
import cProfile
import io
import pstats
import time

t0 = time.perf_counter()
import cupy as cp  # noqa: E402
t1 = time.perf_counter()
import sgemm  # noqa: E402
t2 = time.perf_counter()
a = cp.random.standard_normal((4096, 4096), dtype=cp.float32)
cp.cuda.Device().synchronize()                      # the context exists from here on


def first(f):
    t = time.perf_counter()
    f()
    cp.cuda.Device().synchronize()
    return (time.perf_counter() - t) * 1e3


pr = cProfile.Profile()
pr.enable()
r = {"gemm 4096^3 first": first(lambda: sgemm.gemm(a, a))}
pr.disable()
r["gemm 4096^3 second"] = first(lambda: sgemm.gemm(a, a))
x = cp.random.standard_normal((1000, 777), dtype=cp.float32)
y = cp.random.standard_normal((777, 333), dtype=cp.float32)
r["gemm 1000x333x777 first"] = first(lambda: sgemm.gemm(x, y))
r["tf32x3 4096^3 first"] = first(lambda: sgemm.gemm(a, a, precision="tf32x3"))
z = cp.random.standard_normal((37, 50001), dtype=cp.float32)
w = cp.random.standard_normal((50001, 91), dtype=cp.float32)
r["deep-k 37x91x50001 first"] = first(lambda: sgemm.gemm(z, w))
print(f"import cupy {1e3 * (t1 - t0):.0f} ms, import sgemm {1e3 * (t2 - t1):.1f} ms")
for k, v in r.items():
    print(f"{k:28s} {v:8.1f} ms")
s = io.StringIO()
pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(30)
print("\n".join(s.getvalue().splitlines()[:50]))
