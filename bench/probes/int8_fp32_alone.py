"""Probe, GPU: precision="fp32" against "int8x" at S^3 (8192), one call at a
time.  int8_api_cost.py timed "fp32" alone ~2 ms slower than "int8x" at
8192^3 (9.3-9.5 ms against 7.5); here each call alone on a fresh stream
(host ms: the call's Python until it returns; event ms: the GPU from before
the call to after it), alternating, then cProfile of five calls each.
Not part of the package.

    S=8192 python bench/probes/int8_fp32_alone.py
"""
import cProfile
import io
import os
import pstats
import time

import cupy as cp

import sgemm

s = int(os.environ.get("S", "8192"))
rng = cp.random.default_rng(s)
a = cp.asfortranarray(rng.standard_normal((s, s), dtype=cp.float32))
b = cp.asfortranarray(rng.standard_normal((s, s), dtype=cp.float32))
st = cp.cuda.Stream(non_blocking=True)


def alone(prec, n=7):
    host, gpu = [], []
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    with st:
        for _ in range(n):
            st.synchronize()
            e0.record(st)
            t0 = time.perf_counter()
            sgemm.gemm(a, b, precision=prec)
            t1 = time.perf_counter()
            e1.record(st)
            e1.synchronize()
            host.append((t1 - t0) * 1e3)
            gpu.append(cp.cuda.get_elapsed_time(e0, e1))
    return sorted(host)[n // 2], sorted(gpu)[n // 2]


for prec in ("int8x", "fp32", "int8x", "fp32"):
    print(prec, "host ms %.3f  event ms %.3f" % alone(prec), flush=True)
for prec in ("int8x", "fp32"):
    pr = cProfile.Profile()
    with st:
        st.synchronize()
        pr.enable()
        for _ in range(5):
            sgemm.gemm(a, b, precision=prec)
            st.synchronize()
        pr.disable()
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(12)
    print("=====", prec)
    print(out.getvalue()[:3500])
