"""Probe (CPU, no GPU): a precision's ratio to cuBLAS in committed judge
files, geometric mean per category and per band of min(m, n).

    python bench/probes/judge_bands.py ieee bench/results/judge-h100-2026-11-26-{a,b,c}.json
"""
import collections
import json
import math
import sys

prec, files = sys.argv[1], sys.argv[2:]
groups = collections.defaultdict(list)
for f in files:
    for r in json.load(open(f))["rows"]:
        small = min(r["m"], r["n"])
        band = "<=16" if small <= 16 else "17-64" if small <= 64 else "65-256" if small <= 256 \
            else ">256"
        groups[(r["cat"], band)].append(r[prec]["ratio"])
for (cat, band), v in sorted(groups.items()):
    g = math.exp(sum(map(math.log, v)) / len(v))
    print(f"{cat:9s} min(m,n) {band:>7s}  n {len(v):3d}  geomean {g:.2f}")
