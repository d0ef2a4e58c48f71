"""Probe: problems from committed judge files whose ratio was below a bar,
run the way the judge runs them (contiguous C-order operands, sgemm.gemm /
gemm_batched with an output, the measured choice on), each timed against
cuBLAS in this run, with the plan the cache holds: its source (table,
measured, model), scheme, launches, and each launch timed alone.  For
finding why a plan is slow, not for reporting: the scorecard comes from
fresh judge runs.  Output $OUT/judge-replay.json.

    OUT=dir python bench/probes/judge_replay.py BAR FILE.json [FILE.json ...]
"""
import json, os, sys
os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp  # noqa: E402
import sgemm  # noqa: E402
from sgemm import tune  # noqa: E402

bar = float(sys.argv[1])
probs = []
for f in sys.argv[2:]:
    for r in json.load(open(f))["rows"]:
        for prec in ("ieee", "tf32x3"):
            if r.get(prec, {}).get("ratio", 9) < bar:
                probs.append((r, prec))
stream = cp.cuda.Stream(non_blocking=True)


def timed(fn, reps=20):
    fn(); cp.cuda.Device().synchronize()
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for _ in range(5):
        e0.record()
        for _ in range(reps):
            fn()
        e1.record(); e1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(e0, e1) / reps)
    return sorted(ts)[2] * 1e3


rows = []
for r, prec in probs:
    m, n, k, ta, tb, bt = r["m"], r["n"], r["k"], r["ta"], r["tb"], r["batch"]
    sa, sb = ((k, m) if ta else (m, k)), ((n, k) if tb else (k, n))
    if bt > 1:
        sa, sb = (bt,) + sa, (bt,) + sb
    a = cp.random.standard_normal(sa, dtype=cp.float32)
    b = cp.random.standard_normal(sb, dtype=cp.float32)
    A = a.swapaxes(-1, -2) if ta else a
    B = b.swapaxes(-1, -2) if tb else b
    c = cp.empty(((bt,) if bt > 1 else ()) + (m, n), cp.float32)
    cub = timed(lambda: cp.matmul(A, B, out=c))
    if bt > 1:
        f = lambda: sgemm.gemm_batched(a, b, c, trans_a=ta, trans_b=tb, precision=prec)  # noqa: E731
        p = sgemm.plan(a, b, c, trans_a=ta, trans_b=tb, precision=prec, _ndims=(3,),
                       _what="gemm_batched")
    else:
        f = lambda: sgemm.gemm(a, b, c, trans_a=ta, trans_b=tb, precision=prec)  # noqa: E731
        p = sgemm.plan(a, b, c, trans_a=ta, trans_b=tb, precision=prec)
    f()
    ours = timed(f)
    planned = timed(lambda: p.execute())
    ex = p.explain(top=3)
    parts = [round(tune.time_launches([l], stream, reps=5, target_ms=0.5) * 1e3, 1)
             for l in p.launches]
    row = dict(r, prec=prec, cublas_us=cub, gemm_us=ours, plan_us=planned, plan=repr(p),
               source=ex.get("source"), parts=parts,
               top=[(t.get("kernel"), t.get("predicted_us")) for t in ex.get("candidates", [])])
    rows.append(row)
    print(f"{r['cat']:8s} {m}x{n}x{k} {'T' if ta else 'N'}{'T' if tb else 'N'} b{bt} {prec:6s} "
          f"judge {r[prec]['ratio']:.2f} | cub {cub:6.1f} gemm {ours:6.1f} ({cub / ours:.2f}) "
          f"plan.execute {planned:6.1f} src={ex.get('source')} parts {parts} {repr(p)[:160]}",
          flush=True)
    del a, b, c
    cp.get_default_memory_pool().free_all_blocks()
json.dump(rows, open(os.path.join(os.environ.get("OUT", "/tmp"), "judge-replay.json"), "w"),
          indent=1, default=str)
