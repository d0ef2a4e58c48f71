"""Probe (CPU, no GPU): the ieee error of committed judge rows against the
longest FP32 accumulation chain of the plan the model picks now, and
cuBLAS's error against K, on outputs where the chain limit is ACC_SLICE
(4096).  If both follow err = c * sqrt(chain) with one c, cuBLAS's own
chain is K / (c * sqrt(K) / err)^2: how far it splits K itself.

    python bench/probes/chain_error.py bench/results/judge-h100-2026-11-26-{a,b,c}.json
"""
import json
import math
import statistics
import sys

from model_picks import canonical
from sgemm import planner
from sgemm.tune import DEVICE_MODELS

dev = DEVICE_MODELS["h100"]
ours, theirs = [], []
for f in sys.argv[1:]:
    for r in json.load(open(f))["rows"]:
        p = canonical(r)
        if r["k"] < 2048 or planner.acc_slice(p, dev) != planner.ACC_SLICE:
            continue
        chain = planner._slice(planner.candidates(p, dev, "ieee")[0], p)
        ours.append(r["ieee"]["err"] / math.sqrt(chain))
        theirs.append((r, r["cublas_err"] / math.sqrt(r["k"])))
c = statistics.median(ours)
print(f"{len(ours)} rows; ours err / sqrt(chain): median {c:.3g}, "
      f"min {min(ours):.3g}, max {max(ours):.3g}")
splits = sorted((c / x) ** 2 for _, x in theirs)
print("cuBLAS's K split implied by its error (K / its chain): "
      + " ".join(f"{s:.1f}" for s in splits))
for r, x in theirs:
    s = (c / x) ** 2
    if s > 1.5:
        print(f"  {r['m']}x{r['n']}x{r['k']} {'T' if r['ta'] else 'N'}{'T' if r['tb'] else 'N'}: "
              f"cuBLAS chain ~{r['k'] / s:.0f}")
