"""Probe: a shape's first call in a fresh process (CuPy imported and cuBLAS
run on the operands first, as the judge does), its wall time, the measured
choice's cache entry for it (the plan kept, its time, the model pick's and
how many candidates were timed; none when measuring did not fit the first
call's bounds), then the kept plan timed as the judge times it against
cuBLAS.  Two processes per problem, each with an empty cache directory.
Not part of the package.

    python bench/probes/first_call_measured.py > LOG
"""
import json
import os
import subprocess
import sys
import tempfile

CHILD = r'''
import glob, json, os, sys, time
from pathlib import Path
sys.path.insert(0, ".judge")
import cupy as cp, judge, sgemm
from sgemm import measure
p = json.loads(sys.argv[1])
a, b, A, B, c = judge.operands(p, 7)
cub = judge.timed(lambda: cp.matmul(A, B, out=c)) * 1e3
call = sgemm.gemm_batched if p["batch"] > 1 else sgemm.gemm
f = lambda: call(a, b, c, trans_a=p["ta"], trans_b=p["tb"])
t0 = time.perf_counter(); f(); cp.cuda.Device().synchronize()
first = (time.perf_counter() - t0) * 1e3
ours = judge.timed(f) * 1e3
ent = []
for fn in glob.glob(os.environ["SGEMM_CACHE_DIR"] + "/measured/*.jsonl"):
    for e in measure._entries(Path(fn)).values():       # the cache file's own reader
        q = e["params"]
        ent.append(f'{e["kernel"]}:{q["BM"]}x{q["BN"]}:{q["threads"]}:s{q["split_k"]} '
                   f'us {e.get("us")} model {e.get("model_pick_us")} timed {e.get("timed")}')
print(json.dumps(dict(p="%dx%dx%dx%d" % (p["batch"], p["m"], p["n"], p["k"]), cub=round(cub, 1),
                      ours=round(ours, 1), ratio=round(cub / ours, 3), first_ms=round(first, 1),
                      measured=ent)))
'''
PROBS = [dict(m=2048, n=64, k=2048, ta=False, tb=False, batch=96),
         dict(m=2048, n=80, k=2048, ta=False, tb=False, batch=64),
         dict(m=2048, n=64, k=2048, ta=False, tb=False, batch=16),
         dict(m=512, n=4096, k=16384, ta=False, tb=True, batch=1),
         dict(m=1024, n=4096, k=8192, ta=True, tb=False, batch=1)]

for p in PROBS:
    for _ in range(2):
        with tempfile.TemporaryDirectory() as d:
            out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(p)], capture_output=True,
                                 text=True, env=dict(os.environ, SGEMM_CACHE_DIR=d))
            print(out.stdout.strip()[-900:], out.stderr[-600:], flush=True)
