"""Probe: the cost model's ten best candidates (ieee), each forced and
timed, on rows where sgemm lost to cuBLAS in the judges of 2026-11-27 --
is a better plan inside the plan space (the model's ranking) or not (the
kernels)?  Not part of the package.  Each candidate is checked against
fp64 on a NaN-poisoned output before it is timed (_gpu.checked_time); the
model's own plan (measured choice on) is timed as ``auto``.

    OUT=dir python bench/probes/forced_cands.py
    PROBS='[{"m":..,"n":..,"k":..,"ta":..,"tb":..,"batch":..}, ...]' TOP=15 OUT=dir \
        python bench/probes/forced_cands.py          # other problems, more candidates
    DRAW=deep-k:14:6464:40000 TOP=16 OUT=dir python bench/probes/forced_cands.py

DRAW=CATEGORY:N:SEED[:MAX_OUTPUTS] draws N problems of one category of the
judge's distribution (draw() of .judge/judge.py, a copy of
../shared/tools/judge.py) with this seed, at most MAX_OUTPUTS m x n.

Writes $OUT/forced-cands.json and prints each row's best candidate.
"""
import json, os, sys
os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp
import sgemm
from sgemm import planner, tune
from sgemm.plan import Plan
from sgemm.runtime import device as devmod
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _gpu import checked_time, tfn
dev = devmod.info(0)
ROWS = [(360,99,15,404,0,0),(1638,46,21,359,0,0),(1,40,3848,7789,0,0),(1,750,231,25605,1,0),
        (1,62,8698,11872,0,0),(1,226,307,232699,0,0),(1,642,848,58017,0,1),(1,699,333,72147,0,1),
        (1,478,626,30237,1,1),(1,788,50257,2048,0,1),(1,8,8192,32768,0,1),(16,2048,64,2048,0,0),
        (1,3,1413,4036,0,1),(1,4,3072,768,0,1)]
if os.environ.get("DRAW"):
    import random
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".judge"))
    import judge
    cat, count, seed, *cap = os.environ["DRAW"].split(":")
    r, drawn = random.Random(int(seed)), []
    while len(drawn) < int(count):
        p = judge.draw(r, cat)
        if judge.fits(p) and (not cap or p["m"] * p["n"] <= int(cap[0])):
            drawn.append(p)
    os.environ["PROBS"] = json.dumps(drawn)
if os.environ.get("PROBS"):
    ROWS = [(p["batch"], p["m"], p["n"], p["k"], int(p["ta"]), int(p["tb"]))
            for p in json.loads(os.environ["PROBS"])]
TOP = int(os.environ.get("TOP", "10"))
out = []
for (b, m, n, k, ta, tb) in ROWS:
    sa = (k, m) if ta else (m, k); sb = (n, k) if tb else (k, n)
    if b > 1: sa, sb = (b,) + sa, (b,) + sb
    a = cp.random.standard_normal(sa, dtype=cp.float32); bb = cp.random.standard_normal(sb, dtype=cp.float32)
    tr = lambda x: x.swapaxes(-1, -2)
    A = tr(a) if ta else a; B = tr(bb) if tb else bb
    C = cp.empty(((b,) if b > 1 else ()) + (m, n), cp.float32)
    ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64)); nr = float(cp.linalg.norm(ref))
    cub = tfn(lambda: cp.matmul(A, B, out=C)); cerr = float(cp.linalg.norm(C - ref)) / nr
    call = sgemm.gemm_batched if b > 1 else sgemm.gemm
    auto = tfn(lambda: call(a, bb, C, trans_a=bool(ta), trans_b=bool(tb)))
    pl = Plan(a, bb, C, trans_a=bool(ta), trans_b=bool(tb), _ndims=(3,) if b > 1 else (2,), _what="gemm_batched" if b > 1 else "gemm")
    probs = pl.problems
    res = []
    for c in planner.candidates(probs[0], dev, "ieee")[:TOP]:
        q = c.params
        try:
            err, t = checked_time(tune.launches_for(c.spec, q, probs, dev), C, ref, nr)
        except Exception as ex:
            res.append(dict(c=f"{c.spec.name}", error=str(ex)[:100])); continue
        res.append(dict(c=f"{c.spec.name}:{q.BM}x{q.BN}x{q.BK}:{q.threads}:s{q.split_k}", us=round(t, 1), pred=round(c.predicted * 1e6, 1), err=round(err / cerr, 2)))
    best = min((r for r in res if "us" in r and r["err"] <= 2), key=lambda r: r["us"])
    print(f"{b}x{m}x{n}x{k} {'T' if ta else 'N'}{'T' if tb else 'N'} cub {cub:.1f} auto {auto:.1f} best {best['c']} {best['us']} ({cub/best['us']:.2f}x)", flush=True)
    for r in res: print("    ", r)
    out.append(dict(b=b, m=m, n=n, k=k, ta=ta, tb=tb, cublas_us=cub, auto_us=auto, plan=repr(pl)[:200], cands=res))
    del a, bb, A, B, C, ref; cp.get_default_memory_pool().free_all_blocks()
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "forced-cands.json"), "w"), indent=1)
