"""Probe: deep-K problems (the judge's deep-k distribution, own seed): the
planner's plan timed whole and launch by launch (GEMM, a shorter last slice,
the reduction), and the cost model's six best candidates predicted and
measured, against cuBLAS.  Not part of the package; its outputs are
bench/results/deepk-probe-h100-2026-11-25-{before,after}.json (seed 11,
before and after the split-K changes of docs/notes/dispatch.md).

    OUT=dir python bench/probes/deepk_plans.py [SEED]
"""
import os, random, sys, json
os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp
from sgemm import tune, planner
from sgemm.plan import Plan
from sgemm.runtime import device as devmod
dev = devmod.info(0)
from _gpu import loguni, operands, stream, tfn  # noqa: E402
r = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 11)
lu = loguni(r)
probs = [(642, 335, 46691, False, False)]
for _ in range(14):
    probs.append((lu(16, 1024), lu(16, 1024), lu(8192, 262144), r.random() < 0.3, r.random() < 0.3))
rows = []
for (m, n, k, ta, tb) in probs:
    a, b, c, A, B = operands(m, n, k, ta, tb)
    cub = tfn(lambda: cp.matmul(A, B, out=c))
    with stream:
        pl = Plan(a, b, c, trans_a=ta, trans_b=tb)
    auto = tfn(lambda: pl.execute())
    pr = pl.problems
    parts = []
    for l in pl.launches:
        parts.append(round(tune.time_launches([l], stream, reps=5, target_ms=1.0) * 1e3, 1))
    cands = planner.candidates(pr[0], dev, "ieee")[:6]
    ct = []
    for cand in cands:
        try:
            ls = tune.launches_for(cand.spec, cand.params, pr, dev)
            t = tune.time_launches(ls, stream, reps=5, target_ms=1.0) * 1e3
        except Exception:  # noqa: BLE001 -- recorded as nan
            t = float('nan')
        q = cand.params
        ct.append((f"{cand.spec.name}:{q.BM}x{q.BN}x{q.BK}:{q.threads}:s{q.split_k}{':pack' if cand.pack else ''}", round(cand.predicted * 1e6, 1), round(t, 1)))
    row = dict(m=m, n=n, k=k, ta=ta, tb=tb, aligned=pr[0].aligned, cublas_us=cub, auto_us=auto, plan=repr(pl), parts=parts, cands=ct)
    rows.append(row)
    print(f"{m:5d} {n:5d} {k:6d} {'T' if ta else 'N'}{'T' if tb else 'N'} al={pr[0].aligned} cub {cub:7.1f} auto {auto:7.1f} ({cub/auto:.2f}) parts {parts} | " + "  ".join(f"{n_} p{p_} m{t_}" for n_, p_, t_ in ct), flush=True)
    del a, b, c; cp.get_default_memory_pool().free_all_blocks()
json.dump(rows, open(os.path.join(os.environ.get("OUT", "/tmp"), "deepk-probe.json"), "w"), indent=1)
