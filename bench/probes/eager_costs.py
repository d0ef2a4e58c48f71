"""Probe: where the host time of a 64^3 call goes -- each entry point, the
pieces of the cached path (allocation, stream queries, one prepared launch)
and cProfile of four entry points.  Not part of the package; its output is
in bench/results/eager-probe-h100-2026-11-25.log.

    python bench/probes/eager_costs.py
"""
import cProfile, pstats, io, time, statistics, os
os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp, sgemm, torch
from sgemm import plan_cache
from sgemm.runtime import launcher

def per_call(f, n=2000):
    for _ in range(50): f()
    cp.cuda.Device().synchronize()
    v = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n): f()
        cp.cuda.Device().synchronize()
        v.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(v)

a = cp.random.standard_normal((64, 64), dtype=cp.float32)
b = cp.random.standard_normal((64, 64), dtype=cp.float32)
c = cp.empty((64, 64), cp.float32)
a3 = cp.random.standard_normal((8, 64, 64), dtype=cp.float32)
b3 = cp.random.standard_normal((8, 64, 64), dtype=cp.float32)
c3 = cp.empty((8, 64, 64), cp.float32)
ta, tb = torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda")
torch.backends.cuda.matmul.allow_tf32 = False
fs = {
 "gemm(a,b,c)": lambda: sgemm.gemm(a, b, c),
 "gemm(a,b)": lambda: sgemm.gemm(a, b),
 "matmul(a,b)": lambda: sgemm.matmul(a, b),
 "gemm_batched": lambda: sgemm.gemm_batched(a3, b3, c3),
 "matmul3": lambda: sgemm.matmul(a3, b3),
 "blas": lambda: sgemm.blas.sgemm("N", "N", 64, 64, 64, 1.0, a.ravel(), 64, b.ravel(), 64, 0.0, c.ravel(), 64),
 "matmul(torch)": lambda: sgemm.matmul(ta, tb),
 "cupy.matmul out": lambda: cp.matmul(a, b, out=c),
 "cupy.matmul": lambda: cp.matmul(a, b),
 "torch.matmul": lambda: torch.matmul(ta, tb),
 "cp.ndarray alloc": lambda: cp.ndarray((64, 64), cp.float32),
 "torch.empty": lambda: torch.empty((64, 64), device="cuda"),
 "a.ravel()": lambda: a.ravel(),
 "cur_stream": lambda: cp.cuda.get_current_stream().ptr,
 "torch cur_stream": lambda: torch.cuda.current_stream(0).cuda_stream,
 "getDevice": lambda: cp.cuda.runtime.getDevice(),
}
sgemm.gemm(a, b, c)
e = next(iter(plan_cache._entries.values()))
if e.prepared:
    p0 = e.prepared[0]; s = cp.cuda.get_current_stream().ptr; ptrs = (a.data.ptr, b.data.ptr, c.data.ptr)
    fs["prepared launch"] = lambda: p0(s, ptrs)
    fs["_run"] = lambda: plan_cache._run(e, ptrs, s)
print(f"{'call':20s} us/call")
for k, f in fs.items():
    print(f"{k:20s} {per_call(f):7.2f}", flush=True)
print("plan_cache stats", plan_cache.stats, "launches", [len(x.launches) for x in plan_cache._entries.values()])
for k in ("gemm(a,b)", "blas", "matmul(torch)", "gemm(a,b,c)"):
    pr = cProfile.Profile(); f = fs[k]
    pr.enable()
    for _ in range(3000): f()
    pr.disable(); cp.cuda.Device().synchronize()
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(12)
    print("=====", k); print("\n".join(s.getvalue().splitlines()[:30]))
