"""Probe, GPU: where blas.sgemm's eager cost at 64^3 goes as the judge
calls it (three cupy ``ravel()`` calls build its 1-D buffers inside the
timed lambda).  Per call, as the judge times it (back-to-back, wall clock,
synchronised at the end, 400 calls, median of 5), in three rounds whose
order alternates so clock drift falls on every entry alike:

  blas.sgemm as the judge calls it   -- ravel() x3 inside the call
  blas.sgemm, buffers raveled once   -- the library's own cost
  ravel() x3 alone                   -- cupy's part
  sgemm.gemm(a, b, c), cupy.matmul, torch.matmul  -- the references

    OUT=dir python bench/probes/eager_blas_ravel.py       # $OUT/eager-blas-ravel.json
Not part of the package.
"""
import json
import os
import statistics
import time
from pathlib import Path

import cupy as cp

import sgemm


def per_call(f, n=400):
    for _ in range(30):
        f()
    cp.cuda.Device().synchronize()
    v = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            f()
        cp.cuda.Device().synchronize()
        v.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(v)


def main() -> None:
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    a = cp.random.standard_normal((64, 64), dtype=cp.float32)
    b = cp.random.standard_normal((64, 64), dtype=cp.float32)
    c = cp.empty((64, 64), cp.float32)
    fa, fb, fc = a.ravel(), b.ravel(), c.ravel()
    ta, tb = torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda")
    calls = {
        "blas.sgemm as the judge calls it": lambda: sgemm.blas.sgemm(
            "N", "N", 64, 64, 64, 1.0, a.ravel(), 64, b.ravel(), 64, 0.0, c.ravel(), 64),
        "blas.sgemm, buffers raveled once": lambda: sgemm.blas.sgemm(
            "N", "N", 64, 64, 64, 1.0, fa, 64, fb, 64, 0.0, fc, 64),
        "ravel() x3 alone": lambda: (a.ravel(), b.ravel(), c.ravel()),
        "sgemm.gemm(a, b, c)": lambda: sgemm.gemm(a, b, c),
        "cupy.matmul(a, b)": lambda: cp.matmul(a, b),
        "torch.matmul(a, b)": lambda: torch.matmul(ta, tb),
    }
    rounds = []
    for r in range(3):
        names = list(calls) if r % 2 == 0 else list(reversed(calls))
        rounds.append({k: per_call(calls[k]) for k in names})
    med = {k: statistics.median(rd[k] for rd in rounds) for k in calls}
    doc = {"probe": "bench/probes/eager_blas_ravel.py", "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "cupy": cp.__version__, "torch": torch.__version__, "sgemm": sgemm.__version__,
           "us_per_call_median_of_rounds": med, "rounds": rounds}
    out = Path(os.environ.get("OUT", ".")) / "eager-blas-ravel.json"
    out.write_text(json.dumps(doc, indent=1))
    for k, v in med.items():
        print(f"{k:40s} {v:7.2f} us")


if __name__ == "__main__":
    main()
