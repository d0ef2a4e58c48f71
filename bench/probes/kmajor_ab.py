"""Probe: rung 13 (kmajor) against rung 9 (double_buffer) tile for tile, on
problems of the judge's kinds, beside cuBLAS and the plan sgemm picks now.
Not part of the package.

Each rung-9 tile the planner weighs and its rung-13 twin (same block tile,
threads and K split: rect/k128x64, rect_t/k64x128, small/k64x64) run at
split 1 and at the split of the planner's pick;
each is checked against fp64 on a NaN-poisoned output before it is timed.
(The committed file of 2026-11-27 also has medium/k128x128, a config since
dropped.)
Problems: N drawn from sgemm.calibrate.sample (the planner's calibration
distribution, not the judge's) with this probe's seed, after them a fixed
set of the rows the notes name (attention PV, x @ W^T layers, deep K;
NO_FIXED=1 leaves it out); DRAW=CATEGORY:N:SEED puts N problems of one of
the judge's categories (its draw(), this seed) first.

    OUT=dir python bench/probes/kmajor_ab.py [N] [SEED]
    DRAW=deep-k:12:7777 OUT=dir python bench/probes/kmajor_ab.py 0
"""
import json
import math
import os
import sys
import time

os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp  # noqa: E402

import sgemm  # noqa: E402
from sgemm import calibrate, cost, planner, tune  # noqa: E402
from sgemm.kernels import registry  # noqa: E402
from sgemm.plan import Plan  # noqa: E402
from sgemm.runtime import device as devmod  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _gpu import checked_time, tfn  # noqa: E402
from cublas_kernels import operands  # noqa: E402

dev = devmod.info(0)
DB, KM = registry.KERNELS["double_buffer"], registry.KERNELS["kmajor"]
PAIRS = {"rect": "k128x64", "rect_t": "k64x128", "small": "k64x64"}
FIXED = [  # (batch, m, n, k, ta, tb) as the judge calls them
    (16, 2048, 64, 2048, False, False), (8, 2048, 80, 2048, False, False),
    (32, 1024, 64, 1024, False, False), (64, 1024, 128, 1024, False, False),
    (16, 1024, 1024, 64, False, True), (1, 308, 12288, 4096, False, True),
    (1, 788, 12288, 4096, False, True), (1, 4096, 4096, 4096, False, True),
    (1, 4096, 4096, 4096, False, False), (1, 2800, 2608, 7696, True, False),
    (1, 566, 722, 18495, False, False), (1, 396, 946, 9659, False, True),
    (1, 848, 426, 1872, False, False), (1, 1023, 1025, 1021, False, False),
]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    drawn = calibrate.sample(seed, n)
    if os.environ.get("DRAW"):        # DRAW=CATEGORY:N:SEED, the judge's draw(), first
        from _draw import judge_draws
        cat, cnt, dseed = os.environ["DRAW"].split(":")
        drawn = judge_draws(cat, int(cnt), int(dseed)) + drawn
    probs = [(p["batch"], p["m"], p["n"], p["k"], p["ta"], p["tb"]) for p in drawn]
    probs += [] if os.environ.get("NO_FIXED") else list(FIXED)
    rows, t_start = [], time.time()
    for (b, m, n_, k, ta, tb) in probs:
        if time.time() - t_start > float(os.environ.get("BUDGET_S", "240")):
            break
        a, bb, A, B = operands(cp, b, m, n_, k, ta, tb)
        C = cp.empty((b, m, n_) if b > 1 else (m, n_), cp.float32)
        ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64))
        nr = float(cp.linalg.norm(ref)) or 1.0
        cub = tfn(lambda: cp.matmul(A, B, out=C))
        cub_err = max(float(cp.linalg.norm(C - ref)) / nr, 1e-30)
        call = sgemm.gemm_batched if b > 1 else sgemm.gemm
        auto = tfn(lambda: call(a, bb, C, trans_a=ta, trans_b=tb))
        pl = Plan(a, bb, C, trans_a=ta, trans_b=tb, _ndims=(3,) if b > 1 else (2,),
                  _what="gemm_batched" if b > 1 else "gemm")
        pr = pl.problems
        s_auto = pl.params.split_k if pl.kernel.extra.get("ragged") else 1
        res = {}
        for dname, kname in PAIRS.items():
            for s in sorted({1, s_auto}):
                for spec, cname in ((DB, dname), (KM, kname)):
                    q = spec.configs[cname].replace(split_k=s)
                    key = f"{spec.name}:{cname}:s{s}"
                    if s > 1 and (4 * planner.splitk_geometry(pr[0], q)["floats"]
                                  > cost.WORKSPACE_MAX_BYTES or k // s < 128):
                        continue
                    try:
                        err, t = checked_time(tune.launches_for(spec, q, pr, dev), C, ref, nr)
                        res[key] = dict(us=round(t, 2), err_vs_cublas=round(err / cub_err, 2))
                    except Exception as ex:  # noqa: BLE001 -- recorded
                        res[key] = dict(error=f"{type(ex).__name__}: {ex}"[:200])
        rows.append(dict(batch=b, m=m, n=n_, k=k, ta=ta, tb=tb, aligned=pr[0].aligned,
                         cublas_us=round(cub, 2), auto_us=round(auto, 2),
                         plan=f"{pl.kernel.name}:{pl.params.BM}x{pl.params.BN}:s{s_auto}",
                         cands=res))
        pairs = []
        for dname, kname in PAIRS.items():
            for s in sorted({1, s_auto}):
                d = res.get(f"double_buffer:{dname}:s{s}", {})
                q = res.get(f"kmajor:{kname}:s{s}", {})
                if "us" in d and "us" in q:
                    pairs.append(f"{dname[:6]}/s{s} {d['us'] / q['us']:.2f}")
        best_km = min((v["us"] for kk, v in res.items() if kk.startswith("kmajor") and "us" in v
                       and v["err_vs_cublas"] <= 2), default=math.nan)
        print(f"{b}x{m}x{n_}x{k} {'T' if ta else 'N'}{'T' if tb else 'N'} cub {cub:8.1f} auto "
              f"{auto:8.1f} km* {best_km:8.1f} | db/km " + " ".join(pairs), flush=True)
        bad = [kk for kk, v in res.items() if "error" in v or v.get("err_vs_cublas", 0) > 2]
        if bad:
            print("   FAILED:", bad, [res[kk] for kk in bad][:2], flush=True)
        del a, bb, A, B, C, ref
        cp.get_default_memory_pool().free_all_blocks()
    json.dump(dict(probe="kmajor_ab", device=dev.name, seed=seed, rows=rows),
              open(os.path.join(os.environ.get("OUT", "/tmp"), "kmajor-ab.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
