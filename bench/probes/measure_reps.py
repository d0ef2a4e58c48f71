"""Probe: the measured choice's timing of each shortlisted candidate (one
warm-up run, the faster of two batches of ``reps`` back-to-back runs, as
sgemm/measure.py times) at reps 1, 3 and 10, beside the judge's own timing
of the same launches (back-to-back calls for ~20 ms, median of five
batches), on attention PV problems and a few rows the judges lost.  Does a
short batch rank the candidates as a caller's loop does?  Not part of the
package.

    OUT=dir python bench/probes/measure_reps.py

Writes $OUT/reps-diag.json: per problem, cuBLAS's time and per candidate
the predicted, r1, r3, r10 and steady us.
"""
import json, os, sys
sys.path.insert(0, ".judge")
os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp
import judge
from sgemm import measure, tune
from sgemm.plan import Plan
from sgemm.runtime import device as devmod, events, launcher

dev = devmod.info(0)
PROBS = [dict(m=2048, n=64, k=2048, ta=False, tb=False, batch=b) for b in (8, 12, 16, 32)] + [
    dict(m=1024, n=80, k=1024, ta=False, tb=False, batch=32),
    dict(m=1504, n=1392, k=657, ta=False, tb=True, batch=1),
    dict(m=3623, n=848, k=1120, ta=True, tb=True, batch=1),
    dict(m=566, n=208, k=43906, ta=False, tb=True, batch=1),
    dict(m=178, n=62, k=16753, ta=True, tb=True, batch=1)]
stream = cp.cuda.Stream(non_blocking=True)
out = []
for p in PROBS:
    a, b, A, B, c = judge.operands(p, 3)
    bt = p["batch"]
    pl = Plan(a, b, c, trans_a=p["ta"], trans_b=p["tb"], _ndims=(3,) if bt > 1 else (2,),
              _what="gemm_batched" if bt > 1 else "gemm")
    probs = pl.problems
    short = measure.shortlist(probs[0], dev, "ieee")
    timer = events.Timer(stream.ptr)
    rows = []
    with stream:
        cub = judge.timed(lambda: cp.matmul(A, B, out=c)) * 1e3
        for cand in short:
            ls = tune.launches_for(cand.spec, cand.params, probs, dev)
            prep = [launcher.PreparedLaunch(l.kernel, l.grid, l.block, l.smem, l.args) for l in ls]
            def run():
                for launch in prep:
                    launch(stream.ptr)
            q = cand.params
            r = {"c": f"{cand.spec.name}:{q.BM}x{q.BN}:{q.threads}:s{q.split_k}"
                      f"{':pack' if cand.pack else ''}", "pred": round(cand.predicted * 1e6, 1)}
            for reps in (1, 3, 10):
                r[f"r{reps}"] = round(measure._gpu_time(ls, stream.ptr, timer, reps) * 1e6, 1)
            r["steady"] = round(judge.timed(run) * 1e3, 1)
            rows.append(r)
    timer.close()
    rec = dict(p=p, cublas_us=round(cub, 1), cands=rows)
    out.append(rec)
    print(json.dumps(p), "cub", round(cub, 1))
    for r in rows:
        print("   ", r)
    sys.stdout.flush()
    cp.get_default_memory_pool().free_all_blocks()
json.dump({"probe": "bench/probes/measure_reps.py", "device": dev.name, "rows": out},
          open(os.path.join(os.environ.get("OUT", "."), "reps-diag.json"), "w"), indent=1)
