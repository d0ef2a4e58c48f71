"""Probe (CPU, no GPU): would an occupancy curve fit the FFMA kernels better
than the cost model's single knee, out of sample?  Not part of the package.

The knee (cost.py): a config's rate at q blocks on an SM is F x min(1,
q / q_sat).  The curve: F x eff(q), eff a table over q = 1..4 (q past 4:
eff(4)), and the first wave of a launch at F x eff(q) / rho (a lone or first
wave runs slower than steady state: bench/probes/model_bias.py).  Both are
fitted by sgemm.calibrate's own grid search (layout factors, unaligned,
bandwidth shares included); the curve takes q_sat's place in the grid, drawn
from CURVES.  The committed sweeps' problems are split in two by index
parity: each model is fitted on one half and judged on the other by

* mean absolute log error of the predicted time, per config and overall;
* regret: per held-out problem, the time of the timed candidate each model
  predicts fastest over the fastest timed one (geometric mean), among the
  configs fitted here.

    python bench/probes/occupancy_curve.py [SWEEP.json ...]
"""
import itertools
import json
import math
import sys
from collections import defaultdict

import numpy as np

from sgemm import calibrate, cost
from sgemm.tune import DEVICE_MODELS

SWEEPS = ("bench/results/calibration-sweep-h100-2026-11-25.json",
          "bench/results/calibration-sweep-h100-2026-11-26.json",
          "bench/results/kmajor-sweep-h100-2026-11-27.json")
FAMILIES = ("double_buffer", "kmajor", "tile", "small")
KNEES = [tuple(min(1.0, q / qs) for q in (1, 2, 3, 4)) for qs in calibrate.Q_SATS]
STEPS = [(a, b, 1.0, 1.0) for a, b in itertools.product((0.6, 0.7, 0.8, 0.9),
                                                       (0.7, 0.8, 0.9, 1.0)) if a <= b]
CURVES = [(e, rho) for e in dict.fromkeys(KNEES + STEPS) for rho in (1.0, 1.15, 1.3)]


def curve_work(feats, dev, idx):
    """calibrate._work with q_sat read as an index into CURVES."""
    eff, rho = CURVES[int(idx)]
    A, B = np.zeros(len(feats)), np.zeros(len(feats))
    for i, (blocks, flops, per_sm, *_rest) in enumerate(feats):
        slots = dev.sm_count * per_sm
        full, rem = divmod(blocks, slots)
        first = True
        for n, waves in ((slots, full), (rem, 1 if rem else 0)):
            if waves:
                q = math.ceil(n / dev.sm_count)
                e = eff[min(q, 4) - 1]
                A[i] += (waves + (rho - 1 if first else 0)) * q * flops / e
                B[i] += waves
                first = False
    return A, B


def predictions(feats, dev, rate, work):
    """The fitted model's seconds for each point (calibrate._grid's formula)."""
    peak_sm = dev.fp32_peak_tflops() * 1e12 / dev.sm_count
    A, B = work(feats, dev, rate.q_sat)
    out = []
    for i, f in enumerate(feats):
        al, (mab, mout), red, li = f[3], f[4], f[5], f[7]
        F = peak_sm * rate.peak_frac * (1.0 if al else rate.unaligned) * rate.layout[li]
        mem = mab / rate.mem + mout / (1.0 if al else rate.store)
        out.append(max(A[i] / F + rate.t0 * B[i], mem) + red)
    return np.array(out)


def _fit_job(job):
    """One config: fitted on its train points, predicted on its test points
    (a process of its own: the curve's patch of calibrate lives there)."""
    key, tr, te, dev, curve = job
    work = curve_work if curve else calibrate._work
    if curve:
        calibrate._work, calibrate.Q_SATS = curve_work, tuple(range(len(CURVES)))
    rate, _ = calibrate.fit_config(tr, dev)
    return key, rate, predictions(te, dev, rate, work), np.array([f[6] for f in te])


def fit_and_predict(train, test, dev, machine, curve):
    """Per config: fitted on train's points, predicted on test's."""
    import multiprocessing as mp
    bw = machine.bw_frac * dev.dram_bandwidth_gbs() * 1e9
    jobs = [(key, calibrate._features(train[key], dev, bw, machine),
             calibrate._features(test[key], dev, bw, machine), dev, curve)
            for key in sorted(set(train) & set(test))]
    out = {}
    with mp.get_context("fork").Pool() as pool:       # CPU only: nothing to lose by forking
        for key, rate, pred, meas in pool.imap_unordered(_fit_job, jobs):
            out[key] = (rate, pred, meas)
            what = (f"eff {CURVES[int(rate.q_sat)][0]} rho {CURVES[int(rate.q_sat)][1]}"
                    if curve else f"q_sat {rate.q_sat}")
            print(f"  {'curve' if curve else 'knee '} {key:32s} {what}", flush=True)
    return out


def main():
    dev = DEVICE_MODELS["h100"]
    machine = cost.calibration(dev).machine
    rows = [r for f in (sys.argv[1:] or SWEEPS) for r in json.load(open(f))["rows"]]
    halves = ([r for i, r in enumerate(rows) if i % 2 == 0],
              [r for i, r in enumerate(rows) if i % 2])
    by = []
    for half in halves:
        groups = defaultdict(list)
        for pt in calibrate.points(half):
            if pt[1].name in FAMILIES:
                groups[cost.config_key(pt[1], pt[2], pt[0])].append(pt)
        by.append({k: v for k, v in groups.items() if len(v) >= 20})
    train, test = by
    res = {name: fit_and_predict(train, test, dev, machine, curve)
           for name, curve in (("knee", False), ("curve", True))}
    print(f"\n{'config':32s} {'points':>6s}  mean |log err| knee  curve")
    tot = defaultdict(list)
    for key in sorted(res["knee"]):
        errs = {}
        for name in res:
            _, pred, meas = res[name][key]
            e = np.abs(np.log(pred) - np.log(meas))
            errs[name] = e.mean()
            tot[name] += list(e)
        print(f"{key:32s} {len(test[key]):6d}  {errs['knee']:.3f}  {errs['curve']:.3f}")
    print(f"{'all':32s} {len(tot['knee']):6d}  {np.mean(tot['knee']):.3f}  "
          f"{np.mean(tot['curve']):.3f}")
    # regret on held-out problems: each problem's timed candidates among the fitted configs
    picks = {name: defaultdict(list) for name in res}
    for key in res["knee"]:
        for name in res:
            _, pred, meas = res[name][key]
            for pt, p, m in zip(test[key], pred, meas):
                picks[name][id_of(pt[0])].append((p, m))
    for name in res:
        reg = [math.log(min(c, key=lambda x: x[0])[1] / min(x[1] for x in c))
               for c in picks[name].values() if len(c) >= 2]
        print(f"regret ({name}): {math.exp(np.mean(reg)):.4f} over {len(reg)} held-out problems")


def id_of(prob):
    return (prob.m, prob.n, prob.k, prob.batch, prob.ta, prob.tb, prob.aligned)


if __name__ == "__main__":
    main()
