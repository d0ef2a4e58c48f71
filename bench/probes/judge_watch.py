"""Probe: the judge's own procedure (its sample(), run_problem() and timed(),
imported from .judge/judge.py, a copy of ../shared/tools/judge.py) with every
row under a bar re-timed at once, in the same process, and its plan
recorded.  For finding why a judge row is slow when a later replay of the
same problem is not (judges g and h of 2026-11-26: 49x80x29674 110 us in
the judge, 27-32 replayed; 3072x1024x4 50.6 against 11-17): a slow plan
chosen in that process, or a slow state of the process or the GPU.  A
diagnosis, not a scorecard: its seed is its own (random unless given) and
its numbers are not reported as a judge's.

    OUT=dir python bench/probes/judge_watch.py [N [BAR [SEED]]]

Each problem runs through judge.run_problem's steps written out here (the
same calls in the same order), keeping the five batches of the timing and
timing the call twice more at once.  Per watched row and precision: the
judge's ratio, those batches, the plan the cache holds (repr, source:
table / measured / model), and, on fresh operands, judge.timed(), a fixed
20 calls a batch and cuBLAS again.  Writes $OUT/judge-watch.json.
"""
import json
import os
import random
import sys
import time

sys.path.insert(0, os.environ.get("JUDGE_DIR", os.path.abspath(".judge")))
import cupy as cp  # noqa: E402
import judge  # noqa: E402
import sgemm  # noqa: E402


def timed_batches(fn, target_ms=20.0, reps=None):
    """judge.timed(), step for step, returning every batch (us a call) and
    the repetitions, not only their median; ``reps`` fixes the batch length
    instead of the judge's ~20 ms."""
    fn(); cp.cuda.Device().synchronize()
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    e0.record(); fn(); e1.record(); e1.synchronize()
    one = max(cp.cuda.get_elapsed_time(e0, e1), 1e-3)
    reps = reps or max(1, min(500, int(target_ms / one)))
    ts = []
    for _ in range(5):
        e0.record()
        for _ in range(reps):
            fn()
        e1.record(); e1.synchronize()
        ts.append(round(cp.cuda.get_elapsed_time(e0, e1) / reps * 1e3, 2))
    return dict(one_us=round(one * 1e3, 2), reps=reps, batches_us=ts)


def run_problem(p, precs, seed):
    """judge.run_problem's steps (cuBLAS, then per precision: NaN-filled C,
    the first call, the error, the timing), with the timing's batches kept
    and, right after it, the same call timed twice more the same way."""
    a, b, A, B, c = judge.operands(p, seed)
    row = dict(p)
    ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64))
    nref = max(float(cp.linalg.norm(ref)), 1e-300)
    cub = lambda: cp.matmul(A, B, out=c)  # noqa: E731
    cub(); row["cublas_err"] = float(cp.linalg.norm(c - ref)) / nref
    row["cublas_ms"] = judge.timed(cub)
    for prec in precs:
        kw = dict(trans_a=p["ta"], trans_b=p["tb"], precision=prec)
        if p["batch"] > 1:
            f = lambda: sgemm.gemm_batched(a, b, c, **kw)  # noqa: E731
        else:
            f = lambda: sgemm.gemm(a, b, c, **kw)  # noqa: E731
        c.fill(cp.nan)
        t0 = time.perf_counter(); f(); cp.cuda.Device().synchronize()
        r = {"first_call_s": time.perf_counter() - t0}
        r["err_vs_cublas"] = float(cp.linalg.norm(c - ref)) / nref / max(row["cublas_err"], 1e-30)
        r["timing"] = timed_batches(f)
        r["ms"] = sorted(r["timing"]["batches_us"])[2] / 1e3
        r["ratio"] = row["cublas_ms"] / r["ms"]
        r["again"] = [timed_batches(f), timed_batches(f)]
        row[prec] = r
    del a, b, A, B, c, ref
    return row


def watch(p, prec, seed):
    a, b, A, B, c = judge.operands(p, seed)
    kw = dict(trans_a=p["ta"], trans_b=p["tb"], precision=prec)
    if p["batch"] > 1:
        f = lambda: sgemm.gemm_batched(a, b, c, **kw)  # noqa: E731
        pl = sgemm.plan(a, b, c, _ndims=(3,), _what="gemm_batched", **kw)
    else:
        f = lambda: sgemm.gemm(a, b, c, **kw)  # noqa: E731
        pl = sgemm.plan(a, b, c, **kw)
    ex = pl.explain(top=3)
    out = dict(plan=repr(pl), source=ex.get("source"), launches=len(pl.launches),
               judge_timed_us=judge.timed(f) * 1e3,
               batch20_us=sorted(timed_batches(f, reps=20)["batches_us"])[2],
               cublas_us=judge.timed(lambda: cp.matmul(A, B, out=c)) * 1e3)
    del a, b, A, B, c
    return out


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    bar = float(sys.argv[2]) if len(sys.argv) > 2 else 0.8
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else random.SystemRandom().randrange(1 << 30)
    precs = ["ieee", "tf32x3"]
    rows, t0 = [], time.time()
    for i, p in enumerate(judge.sample(seed, n)):
        row = run_problem(p, precs, seed + i)
        for prec in precs:
            r = row.get(prec, {})
            if r.get("ratio", 9) < bar:
                r["watch"] = watch(p, prec, seed + i)
                w, t = r["watch"], r["timing"]
                print(f"{i:3d} {p['cat']:8s} {p['batch']}x{p['m']}x{p['n']}x{p['k']} "
                      f"{'T' if p['ta'] else 'N'}{'T' if p['tb'] else 'N'} {prec:6s} "
                      f"{r['ratio']:.2f} first {r['first_call_s'] * 1e3:.0f} ms | one "
                      f"{t['one_us']} reps {t['reps']} batches {t['batches_us']} | again "
                      f"{[sorted(x['batches_us'])[2] for x in r['again']]} | new operands "
                      f"{w['judge_timed_us']:.1f} b20 {w['batch20_us']:.1f} cub "
                      f"{row['cublas_ms'] * 1e3:.1f}/{w['cublas_us']:.1f} src={w['source']} "
                      f"{w['plan'][:120]}", flush=True)
        rows.append(row)
        cp.get_default_memory_pool().free_all_blocks()
    json.dump(dict(probe="judge_watch", seed=seed, bar=bar, wall_s=time.time() - t0, rows=rows),
              open(os.path.join(os.environ.get("OUT", "/tmp"), "judge-watch.json"), "w"),
              indent=1, default=str)


if __name__ == "__main__":
    main()
