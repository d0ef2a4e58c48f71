"""Calibrate the cost model (cost.py) on this GPU: time candidate plans on
problems drawn from the planner's target distribution, then fit each
config's rate, occupancy knee, fixed cost and unaligned factor.

    sgemm tune --calibrate              # ~2 minutes; writes cache_dir()/cost-<gpu>.json
    python -m sgemm.calibrate fit SWEEP.json [--out FILE] [--device h100]

``fit`` is pure Python + NumPy, so CI checks it on a committed sweep.  A
sweep row holds the canonical problem and, per candidate, the kernel, its
params and the median GPU time (CUDA graphs for short ones: the host's share
is a separate machine constant).
"""
from __future__ import annotations

import math
import os
from collections import defaultdict

import numpy as np

from . import cost
from .kernels import registry
from .kernels.params import TileParams
from .problem import Problem
from .runtime.device import DeviceInfo

PEAK_FRACS = np.exp(np.linspace(math.log(0.02), math.log(3.0), 64))
T0S = np.array([0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 14, 20]) * 1e-6
Q_SATS = (1, 1.25, 1.5, 2, 3, 4, 6, 8, 12, 16)
T0S32 = T0S.astype(np.float32)
STORES = (1.0, 0.6, 0.35, 0.2, 0.12)
MEMS = (1.0, 0.7, 0.5, 0.35, 0.25)
UNALIGNED = (0.45, 0.55, 0.65, 0.75, 0.85, 0.95, 1.0)
MIN_POINTS = 4
LAYOUTS = np.exp(np.linspace(math.log(0.5), math.log(2.0), 41))   # layout factor grid


def problem_of(canon: dict) -> Problem:
    """A canonical problem with aligned or unaligned addresses as recorded."""
    off = 0 if canon["aligned"] else 4
    m, n, k = canon["m"], canon["n"], canon["k"]
    lda = (k if canon["ta"] else m) + (0 if canon["aligned"] else 1)
    ldb = (n if canon["tb"] else k) + (0 if canon["aligned"] else 1)
    return Problem(m=m, n=n, k=k, ta=canon["ta"], tb=canon["tb"], a=(1 << 40) + off, lda=lda,
                   b=(2 << 40) + off, ldb=ldb, c=3 << 40, ldc=m + (0 if canon["aligned"] else 1),
                   batch=canon["batch"], stride_a=lda * (m if canon["ta"] else k),
                   stride_b=ldb * (k if canon["tb"] else n), stride_c=m * n)


def points(rows: list[dict]):
    """(problem, spec, params, seconds) for every timed candidate."""
    fields = TileParams().as_dict()
    for r in rows:
        prob = problem_of(r["canon"])
        for c in r["cands"].values():
            if "gpu_ms" not in c:
                continue
            spec = registry.get(c["kernel"])
            p = TileParams(**{k: int(v) for k, v in c["params"].items() if k in fields})
            yield prob, spec, p, c["gpu_ms"] * 1e-3


def _features(pts, dev: DeviceInfo, bw: float, machine: cost.Machine):
    """Per point what the grid search needs: blocks, flops per block, blocks
    per SM, aligned, memory and reduction seconds, the layout index."""
    out = []
    for prob, spec, p, t in pts:
        blocks, _, flops = cost.geometry(spec, p, prob)
        two = cost.two_launch_split(spec, p)
        s = cost.split_of(spec, p)
        ab, outb = cost.dram_bytes(prob, s, two)
        mem = (ab / bw, outb / bw)
        red = cost.reduction_time(prob, s, bw, machine) if two else 0.0
        out.append((blocks, flops, cost.resident(spec, p, dev), spec.aligned_for(prob), mem, red,
                    t, cost.layout_index(prob)))
    return out


def _work(feats, dev: DeviceInfo, q_sat: float):
    """compute time = A / F + B * t0 per point, for this q_sat."""
    A = np.zeros(len(feats))
    B = np.zeros(len(feats))
    for i, (blocks, flops, per_sm, *_rest) in enumerate(feats):
        for q, n in cost.waves(blocks, per_sm, dev.sm_count):
            A[i] += n * q * flops / min(1.0, q / min(q_sat, per_sm))
            B[i] += n
    return A, B


def _grid(feats, dev: DeviceInfo, lay: np.ndarray):
    """(mean absolute log error, Rate) of the best grid point, F scaled per
    point by its layout's factor ``lay[layout index]``.  float32: the
    search needs no more, and it halves the memory traffic of its arrays."""
    peak_sm = dev.fp32_peak_tflops() * 1e12 / dev.sm_count
    meas = np.log(np.array([f[6] for f in feats], dtype=np.float32))
    al = np.array([f[3] for f in feats])
    mab = np.array([f[4][0] for f in feats])
    mout = np.array([f[4][1] for f in feats])
    red = np.array([f[5] for f in feats], dtype=np.float32)
    lf = lay[np.array([f[7] for f in feats])]
    best = None
    for q_sat in Q_SATS:
        A, B = (x.astype(np.float32) for x in _work(feats, dev, q_sat))
        for u, st, me in [(u, st, me) for u in (UNALIGNED if not al.all() else (1.0,))
                          for st in (STORES if not al.all() else (1.0,)) for me in MEMS]:
            fac = np.where(al, 1.0, u) * lf
            mem = (mab / me + mout / np.where(al, 1.0, st)).astype(np.float32)
            # (peak_frac, t0) grid, vectorized
            F = (peak_sm * PEAK_FRACS[:, None, None] * fac[None, None, :]).astype(np.float32)
            comp = A[None, None, :] / F + T0S32[:, None] * B[None, None, :]
            pred = np.log(np.maximum(comp, mem[None, None, :]) + red[None, None, :])
            err = np.abs(pred - meas[None, None, :]).mean(axis=2)
            i, j = np.unravel_index(np.argmin(err), err.shape)
            if best is None or err[i, j] < best[0]:
                best = (err[i, j], cost.Rate(float(PEAK_FRACS[i]), q_sat, float(T0S[j]),
                                             float(u if not al.all() else 0.85),
                                             float(st if not al.all() else 1.0), float(me),
                                             tuple(float(x) for x in lay)))
    return best


def _layout_factors(feats, dev: DeviceInfo, r: cost.Rate) -> np.ndarray:
    """Each layout's F factor, the others' rates held at r: the grid value
    with the least absolute log error over that layout's points (1 where a
    layout has fewer than MIN_POINTS points)."""
    peak_sm = dev.fp32_peak_tflops() * 1e12 / dev.sm_count
    A, B = _work(feats, dev, r.q_sat)
    out = np.ones(4)
    for li in range(4):
        idx = [i for i, f in enumerate(feats) if f[7] == li]
        if len(idx) < MIN_POINTS:
            continue
        sub = [feats[i] for i in idx]
        al = np.array([f[3] for f in sub])
        F = peak_sm * r.peak_frac * np.where(al, 1.0, r.unaligned)
        mem = (np.array([f[4][0] for f in sub]) / r.mem
               + np.array([f[4][1] for f in sub]) / np.where(al, 1.0, r.store))
        comp = A[idx][None, :] / (F[None, :] * LAYOUTS[:, None]) + r.t0 * B[idx][None, :]
        pred = np.log(np.maximum(comp, mem[None, :]) + np.array([f[5] for f in sub])[None, :])
        err = np.abs(pred - np.log(np.array([f[6] for f in sub]))[None, :]).mean(axis=1)
        out[li] = LAYOUTS[int(np.argmin(err))]
    return out


def fit_config(feats, dev: DeviceInfo) -> tuple[cost.Rate, float]:
    """The grid point of (peak_frac, t0, q_sat, unaligned, store, mem) and the
    four layout factors with the least mean absolute log error; returns
    (rate, that error).  Alternates: the rates with the layout factors held,
    then the factors with the rates held, twice, then the rates once more.
    Absolute rather than squared error, so that a few stalled timings (17x19x
    8849 in 32 slices took 7x what its neighbours say) do not pull a config's
    rate.  q_sat may be fractional: one 4-warp block of 16x8 thread tiles
    (256x64) ran deep-K slices at about 1/1.2 of its rate at two blocks per
    SM in the H100 sweep, which neither q_sat = 1 nor 2 fits."""
    lay = np.ones(4)
    for _ in range(2):
        _, rate = _grid(feats, dev, lay)
        lay = _layout_factors(feats, dev, rate)
    err, rate = _grid(feats, dev, lay)
    return rate, float(err)


def _fit_job(job):
    key, feats, dev = job
    return (key, *fit_config(feats, dev))


def fit(rows: list[dict], dev: DeviceInfo, machine: cost.Machine | None = None,
        workers: int | None = None) -> tuple[cost.Calibration, dict]:
    """A calibration from sweep rows, and each config's fit error.  Configs
    are fitted in parallel processes (``workers``, default one per CPU):
    the grid search is ~10 s of NumPy per config."""
    machine = machine or cost.Machine()
    bw = machine.bw_frac * dev.dram_bandwidth_gbs() * 1e9
    groups = defaultdict(list)
    for pt in points(rows):
        groups[cost.config_key(pt[1], pt[2], pt[0])].append(pt)
    jobs = [(key, _features(pts, dev, bw, machine), dev) for key, pts in groups.items()
            if len(pts) >= MIN_POINTS]
    workers = min(len(jobs), workers or os.cpu_count() or 1)
    if workers > 1:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        # spawn: the caller may hold a CUDA context, which a forked child must not inherit
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as ex:
            done = list(ex.map(_fit_job, jobs))
    else:
        done = [_fit_job(j) for j in jobs]
    rates = {key: rate for key, rate, _ in done}
    errs = {key: err for key, _, err in done}
    return cost.Calibration(dev.name, machine, rates, dev.clock_khz, "fit"), errs


# ---- measuring (needs a GPU and CuPy) ------------------------------------------------------
CATEGORIES = (("general", 0.30), ("layer", 0.25), ("batched", 0.15), ("skinny", 0.15),
              ("deep-k", 0.15))
MAX_BYTES = 2 << 30
MAX_FLOPS = 1e12


def _loguni(r, lo, hi) -> int:
    return int(round(math.exp(r.uniform(math.log(lo), math.log(hi)))))


def draw(r, cat: str) -> dict:
    """One problem of the distribution the planner is calibrated for: what
    users call (any shape; transformer layers forward and backward;
    batched and attention products; one small side; deep K).  Stated here
    so that a calibration never depends on a benchmark's own sample."""
    ta, tb, batch = r.random() < 0.3, r.random() < 0.3, 1
    if cat == "general":
        m, n, k = (_loguni(r, 1, 16384) for _ in range(3))
    elif cat == "layer":
        t, d = _loguni(r, 1, 16384), 256 * _loguni(r, 2, 32)
        i, o = d, d * r.choice((1, 3, 4))
        m, n, k, ta, tb = r.choice(((t, o, i, False, True), (t, i, o, False, False),
                                    (o, i, t, True, False)))
    elif cat == "batched":
        batch = _loguni(r, 2, 2048)
        m, n, k = (_loguni(r, 8, 1024) for _ in range(3))
    elif cat == "skinny":
        small, b1, b2 = _loguni(r, 1, 64), _loguni(r, 256, 16384), _loguni(r, 256, 16384)
        m, n, k = r.choice(((small, b1, b2), (b1, small, b2), (b1, b2, small)))
    else:
        m, n, k = _loguni(r, 16, 1024), _loguni(r, 16, 1024), _loguni(r, 8192, 262144)
    return dict(cat=cat, m=m, n=n, k=k, ta=ta, tb=tb, batch=batch)


def sample(seed: int, n: int) -> list[dict]:
    import random
    r = random.Random(seed)
    names, weights = zip(*CATEGORIES)
    out = []
    while len(out) < n:
        p = draw(r, r.choices(names, weights)[0])
        by = 4 * p["batch"] * (p["m"] * p["k"] + p["k"] * p["n"] + 2 * p["m"] * p["n"])
        if by < MAX_BYTES and 2.0 * p["m"] * p["n"] * p["k"] * p["batch"] < MAX_FLOPS:
            out.append(p)
    return out


def _operands(cp, p, seed=None):
    m, n, k, bt = p["m"], p["n"], p["k"], p["batch"]
    sa = (k, m) if p["ta"] else (m, k)
    sb = (n, k) if p["tb"] else (k, n)
    lead = (bt,) if bt > 1 else ()
    if seed is None:
        return (cp.empty(lead + sa, cp.float32), cp.empty(lead + sb, cp.float32),
                cp.empty(lead + (m, n), cp.float32))
    rs = cp.random.RandomState(seed)
    return (rs.standard_normal(lead + sa, dtype=cp.float32),
            rs.standard_normal(lead + sb, dtype=cp.float32), cp.empty(lead + (m, n), cp.float32))


def _menu(prob: Problem, dev: DeviceInfo, keep: float = 6.0):
    """What to time for one problem: every candidate of either FP32-accurate
    precision whose geometry alone (default rates) is within ``keep`` x the
    best; split-K at powers of two."""
    from . import planner
    base = cost.default_calibration(dev)
    seen, out = set(), []
    for prec in ("ieee", "tf32x3"):
        for c in planner.candidates(prob, dev, prec, cal=base, everything=True):
            s = c.params.split_k
            if c.pack or (s & (s - 1) and cost.two_launch_split(c.spec, c.params)):
                continue
            key = (c.spec.name, c.params.replace(pack=1))
            if key not in seen:
                seen.add(key)
                out.append(c)
    best = min((c.predicted for c in out), default=0.0)
    return [c for c in out if c.predicted <= keep * best]


def measure(n: int = 150, seed: int = 1, seconds: float = 120.0, log=print) -> dict:
    """Sweep rows (see the module docstring) for problems of ``sample``."""
    import time

    import cupy as cp

    from . import tune
    from .launches import direct_launches, scheme_for, scheme_launches
    from .plan import Plan
    from .runtime import device as devmod
    from .runtime import launcher

    dev = devmod.info(cp.cuda.Device().id)
    probs = sample(seed, n)
    t_end = time.time() + seconds
    items = set()                        # compile everything first, in parallel
    menus = []
    for p in probs:
        a, b, c = _operands(cp, dict(p, batch=min(p["batch"], 2)))
        canon = Plan(a, b, c, trans_a=p["ta"], trans_b=p["tb"], _ndims=(a.ndim,)).problems[0]
        canon = Problem(**{**canon.__dict__, "batch": p["batch"]})
        menus.append(_menu(canon, dev))
        for cand in menus[-1]:
            q = cand.params.replace(split_k=1) if cost.two_launch_split(
                cand.spec, cand.params) else cand.params
            items.add((*tune._instantiation(cand.spec, q, canon), dev.arch))
    t0 = time.time()
    tune.compile_all(sorted(items))
    log(f"calibrate: compiled {len(items)} instantiations in {time.time() - t0:.0f} s")
    stream = cp.cuda.Stream(non_blocking=True)
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()

    def once(ls):
        e0.record(stream)
        for l in ls:
            launcher.launch(l.kernel, l.grid, l.block, l.smem, stream.ptr, l.args)
        e1.record(stream)
        e1.synchronize()
        return cp.cuda.get_elapsed_time(e0, e1)

    rows = []
    for i, (p, menu) in enumerate(zip(probs, menus)):
        if time.time() > t_end:
            break
        a, b, c = _operands(cp, p, seed * 1000 + i)
        A = a.swapaxes(-1, -2) if p["ta"] else a
        B = b.swapaxes(-1, -2) if p["tb"] else b
        with stream:
            cp.matmul(A, B, out=c)
            ref = c.copy()
            nref = float(cp.linalg.norm(ref)) or 1.0
        cub = once_fn_ms(cp, stream, lambda: cp.matmul(A, B, out=c))
        plan = Plan(a, b, c, trans_a=p["ta"], trans_b=p["tb"], _ndims=(a.ndim,))
        pr = plan.problems
        row = dict(p, cublas_ms=cub, cands={}, canon=dict(
            m=pr[0].m, n=pr[0].n, k=pr[0].k, batch=pr[0].batch, ta=pr[0].ta, tb=pr[0].tb,
            aligned=pr[0].aligned, pieces=len(pr)))
        for cand in menu:
            spec, q = cand.spec, cand.params
            r = {"kernel": spec.name, "params": q.as_dict()}
            try:
                ls = (scheme_launches(pr, spec, q, "splitk", dev)
                      if scheme_for(spec, q, pr[0]) == "splitk"
                      else direct_launches(pr, spec, q, dev))
                with stream:
                    c.fill(cp.nan)
                once(ls)
                one = once(ls)
                with stream:
                    err = float(cp.linalg.norm(c - ref)) / nref
                if not math.isfinite(err) or err > 1e-3:
                    r["bad"] = err
                elif one > 6 * cub:
                    r["gpu_ms"] = one
                else:
                    r["gpu_ms"] = tune.time_launches(ls, stream, reps=5, target_ms=1.0,
                                                     graph=one < 0.2)
            except Exception as ex:  # noqa: BLE001 -- recorded, the sweep goes on
                r["error"] = f"{type(ex).__name__}: {str(ex)[:160]}"
            row["cands"][f"{spec.name}:{q.BM}x{q.BN}x{q.BK}:{q.threads}:s{q.split_k}"] = r
        rows.append(row)
        log(f"{i:3d} {p['cat']:8s} {p['batch']}x{p['m']}x{p['n']}x{p['k']} "
            f"{len(row['cands'])} plans, cuBLAS {cub * 1e3:.1f} us")
        del a, b, c, A, B, ref
        cp.get_default_memory_pool().free_all_blocks()
    return {"seed": seed, "device": dev.name, "clock_khz": dev.clock_khz, "rows": rows}


def once_fn_ms(cp, stream, fn) -> float:
    """Median ms of fn on ``stream`` (events around batches)."""
    from .tune import batch_times

    def run():
        with stream:
            fn()
    times, _ = batch_times(run, stream, reps=5, target_ms=2.0)
    return times[len(times) // 2]


def main(argv=None) -> int:
    import argparse
    import json
    from pathlib import Path
    ap = argparse.ArgumentParser(prog="sgemm tune --calibrate",
                                 description="measure and fit the cost model on this GPU")
    ap.add_argument("--seconds", type=float, default=120.0, help="measuring budget")
    ap.add_argument("--n", type=int, default=200, help="problems drawn")
    ap.add_argument("--seed", type=int, default=None, help="default: a fresh one")
    ap.add_argument("--sweep", nargs="+", help="fit these sweep files (their rows together) "
                    "instead of measuring; needs no GPU")
    ap.add_argument("--save-sweep", help="also write the measured rows here")
    ap.add_argument("--device", help="with --sweep: a device model (h100, a100, ...)")
    ap.add_argument("--out", help="calibration file (default: the user's for this GPU)")
    args = ap.parse_args(argv)
    if args.sweep:
        sweeps = [json.loads(Path(f).read_text()) for f in args.sweep]
        data = {"device": sweeps[0].get("device"), "rows": [r for d in sweeps for r in d["rows"]]}
        from .tune import DEVICE_MODELS
        dev = DEVICE_MODELS[args.device] if args.device else _sweep_device(data)
    else:
        import random
        from .runtime import device as devmod
        seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
        data = measure(args.n, seed, args.seconds)
        dev = devmod.info(0)
        if args.save_sweep:
            Path(args.save_sweep).write_text(json.dumps(data))
    cal, errs = fit(data["rows"], dev)
    out = Path(args.out) if args.out else cost.user_path(dev)
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = cal.to_json()
    doc["fit_mean_abs_log_error"] = {k: round(v, 3) for k, v in sorted(errs.items())}
    doc["points"] = sum(1 for _ in points(data["rows"]))
    doc["sweeps"] = list(args.sweep) if args.sweep else [args.save_sweep or "(not saved)"]
    out.write_text(json.dumps(doc, indent=1))
    cost.forget()
    print(f"calibrated {len(cal.rates)} configs from {doc['points']} timings "
          f"(median fit error {sorted(errs.values())[len(errs) // 2]:.2f} in log time) -> {out}")
    return 0


def _sweep_device(data: dict) -> DeviceInfo:
    from .tune import DEVICE_MODELS
    for d in DEVICE_MODELS.values():
        if d.name == data.get("device"):
            return d
    raise SystemExit(f"no device model named {data.get('device')!r}: pass --device")


if __name__ == "__main__":
    raise SystemExit(main())
