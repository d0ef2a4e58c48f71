"""Probe, GPU: two sgemm.gemm(precision="int8x") calls at S^3 on N(0,1)
operands (ORDER=F column-major, as int8_api_cost.py draws them, or C), to
run under ncu: the engine's kernels one by one (conversions, INT8 GEMMs,
Garner).  Not part of the package.

    S=16384 ORDER=F ncu --clock-control none --metrics gpu__time_duration.sum,\
sm__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
python bench/probes/int8_steps.py
"""
import os

import cupy as cp

import sgemm

s = int(os.environ.get("S", "16384"))
order = os.environ.get("ORDER", "F")
rng = cp.random.default_rng(s)
a = rng.standard_normal((s, s), dtype=cp.float32)
b = rng.standard_normal((s, s), dtype=cp.float32)
if order == "F":
    a, b = cp.asfortranarray(a), cp.asfortranarray(b)
for _ in range(2):
    c = sgemm.gemm(a, b, precision="int8x")
cp.cuda.Device().synchronize()
