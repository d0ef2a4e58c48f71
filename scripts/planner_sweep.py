#!/usr/bin/env python3
"""Time every plan the planner could choose, on problems drawn from the
judge's distribution, beside cuBLAS: the data the cost model is checked
against (offline, on the CPU: which candidate wins where, and does the model
rank them the same way).

    python scripts/planner_sweep.py --judge PATH/judge.py --seed S --n 150 \
        --deadline 300 --out sweep.json

GPU time of each candidate's launches (CUDA graphs of 10 executions for
short ones, so host launch cost does not count), verified against cuBLAS's
result first.  A candidate whose first run is over 6x cuBLAS's time is
recorded from that run alone.  Draw seeds that no reported judge run uses.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys
import time

os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp  # noqa: E402

from sgemm import dispatch, tune  # noqa: E402
from sgemm.kernels import registry  # noqa: E402
from sgemm.kernels import schemes as S  # noqa: E402
from sgemm.plan import Plan, direct_launches  # noqa: E402
from sgemm.runtime import launcher  # noqa: E402

SPLITS = (1, 2, 4, 8, 16, 32, 64)


def load_judge(path):
    spec = importlib.util.spec_from_file_location("judge", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def candidate_list(prob, dev):
    """(label, spec, params) for every plan family the planner may weigh."""
    out = []
    K = registry.KERNELS

    def add(label, spec, p):
        if spec.can_implement(p, dev.smem_optin):
            return
        if p.split_k > 1 and spec.name in ("double_buffer", "tile", "tf32x3_wgmma_rs"):
            tiles = math.ceil(prob.m / p.BM) * math.ceil(prob.n / p.BN)
            if tiles * p.split_k // 2 >= 2 * dev.sm_count:   # the half split filled 2 waves
                return
        if spec.name == "small" and prob.flops > 2 * 1024 ** 3:
            return
        out.append((label, spec, p))

    for name in ("large", "medium", "small", "wide"):
        for s in SPLITS:
            if s > 1 and (prob.batch > 1 or prob.k // s < 128):
                continue
            add(f"db9.{name}.s{s}", K["double_buffer"], K["double_buffer"].configs[name].replace(split_k=s))
    for name in ("large", "medium", "small"):
        for s in SPLITS:
            if s > 1 and (prob.batch > 1 or prob.k // s < 128):
                continue
            add(f"tile.{name}.s{s}", K["tile"], S.TILE_CONFIGS[name].replace(split_k=s))
    for name, p in S.SMALL_CONFIGS.items():
        if name != "s64x64":
            add(f"small.{name}", K["small"], p)
    if S.gemv_applies(prob):
        add("gemv", K["gemv"], S.choose_gemv(prob, dev.sm_count))
        add("gemv_wide", K["gemv_wide"], S.choose_gemv_wide(prob, dev.sm_count))
    if dev.cc_int >= 90 and prob.batch == 1:
        cap = dispatch.cluster_capacity(dev)
        p = S.choose_db_cluster(prob, dev.sm_count, cap)
        if p.split_k >= 1:
            add("dbc.k4", K["db_cluster"], p)
        t = dispatch.db_tall_config(prob, dev)
        if t is not None:
            add("dbc.tall", K["db_cluster"], t)
        add("cluster", K["splitk_cluster"], S.choose_cluster(prob, dev.sm_count))
    for name in ("small", "large"):
        for s in SPLITS:
            if s > 1 and (prob.batch > 1 or prob.k // s < 128):
                continue
            rs = K["tf32x3_wgmma_rs"]
            add(f"rs.{name}.s{s}", rs, rs.configs[name].replace(split_k=s))
    return out


def empty_operands(p):
    m, n, k, bt = p["m"], p["n"], p["k"], min(p["batch"], 2)
    sa = (k, m) if p["ta"] else (m, k)
    sb = (n, k) if p["tb"] else (k, n)
    lead = (bt,) if p["batch"] > 1 else ()
    return (cp.empty(lead + sa, cp.float32), cp.empty(lead + sb, cp.float32),
            cp.empty(lead + (m, n), cp.float32))


def launches(spec, p, probs, dev):
    if dispatch.scheme_for(spec, p, probs[0]) == "splitk":
        return dispatch.scheme_launches(probs, spec, p, "splitk", dev)
    return direct_launches(probs, spec, p, dev)


def gpu_ms(ls, stream, one_ms):
    """Median ms per execution (graphs for short lists)."""
    return tune.time_launches(ls, stream, reps=5, target_ms=1.0, graph=one_ms < 0.2)


def run_once_ms(ls, stream):
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    e0.record(stream)
    for l in ls:
        launcher.launch(l.kernel, l.grid, l.block, l.smem, stream.ptr, l.args)
    e1.record(stream)
    e1.synchronize()
    return cp.cuda.get_elapsed_time(e0, e1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--judge", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n", type=int, default=150)
    ap.add_argument("--deadline", type=float, default=300)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    J = load_judge(args.judge)
    t_end = time.time() + args.deadline
    probs = J.sample(args.seed, args.n)
    stream = cp.cuda.Stream(non_blocking=True)
    rows = []
    from sgemm.runtime import device as devmod
    dev = devmod.info(0)
    # compile every instantiation first, in parallel processes
    items = set()
    for i, p in enumerate(probs):
        a, b, c = empty_operands(p)
        plan = Plan(a, b, c, trans_a=p["ta"], trans_b=p["tb"], _ndims=(a.ndim,))
        for _, spec, prm in candidate_list(plan.problems[0], dev):
            items.add((*tune._instantiation(spec, prm.replace(split_k=1) if spec.name in
                       ("double_buffer", "tile", "tf32x3_wgmma_rs") else prm,
                       plan.problems[0]), dev.arch))
        del a, b, c
    t0 = time.time()
    verdict = tune.compile_all(sorted(items))
    print(f"precompiled {len(items)} instantiations in {time.time() - t0:.0f} s, "
          f"{sum(1 for v in verdict.values() if v)} rejected", flush=True)
    for i, p in enumerate(probs):
        if time.time() > t_end:
            break
        a, b, A, B, c = J.operands(p, args.seed + i)
        with stream:
            cp.matmul(A, B, out=c)
        stream.synchronize()
        ref = c.copy()
        nref = float(cp.linalg.norm(ref)) or 1.0
        cub = J.timed(lambda: cp.matmul(A, B, out=c))
        row = dict(p, cublas_ms=cub, cands={})
        plan = Plan(a, b, c, trans_a=p["ta"], trans_b=p["tb"]) if p["batch"] == 1 else \
            Plan(a, b, c, trans_a=p["ta"], trans_b=p["tb"], _ndims=(3,))
        cprobs = plan.problems
        cp0 = cprobs[0]
        row["canon"] = dict(m=cp0.m, n=cp0.n, k=cp0.k, batch=cp0.batch, ta=cp0.ta, tb=cp0.tb,
                            aligned=cp0.aligned, pieces=len(cprobs))
        row["auto"] = {"kernel": plan.kernel.name if plan.kernel else None,
                       "params": plan.params.as_dict() if plan.params else None,
                       "scheme": plan.scheme}
        try:
            row["auto"]["gpu_ms"] = gpu_ms(plan.launches, stream, run_once_ms(plan.launches, stream))
        except Exception as e:  # noqa: BLE001
            row["auto"]["error"] = str(e)[:200]
        for label, spec, prm in candidate_list(cp0, dev):
            r = {"kernel": spec.name, "params": prm.as_dict()}
            try:
                ls = launches(spec, prm, cprobs, dev)
                c.fill(cp.nan)
                one = run_once_ms(ls, stream)
                one = run_once_ms(ls, stream)
                err = float(cp.linalg.norm(c - ref)) / nref
                r["err_vs_cublas_result"] = err
                if not math.isfinite(err) or err > 1e-3:
                    r["bad"] = True
                elif one > 6 * cub:
                    r["gpu_ms"], r["single"] = one, True
                else:
                    r["gpu_ms"] = gpu_ms(ls, stream, one)
                r["launches"] = len(ls)
            except Exception as e:  # noqa: BLE001
                r["error"] = f"{type(e).__name__}: {str(e)[:160]}"
            row["cands"][label] = r
            del ls
        rows.append(row)
        best = min(((v["gpu_ms"], k) for k, v in row["cands"].items() if "gpu_ms" in v),
                   default=(float("nan"), "-"))
        print(f"{i:3d} {p['cat']:8s} {p['batch']}x{p['m']}x{p['n']}x{p['k']} "
              f"{'T' if p['ta'] else 'N'}{'T' if p['tb'] else 'N'} cuBLAS {cub*1e3:9.1f} us  "
              f"auto {row['auto'].get('gpu_ms', float('nan'))*1e3:9.1f}  best {best[0]*1e3:9.1f} {best[1]}",
              flush=True)
        del a, b, A, B, c, ref
        cp.get_default_memory_pool().free_all_blocks()
        with open(args.out, "w") as f:
            json.dump({"seed": args.seed, "device": dev.name, "rows": rows}, f)


if __name__ == "__main__":
    sys.exit(main())
