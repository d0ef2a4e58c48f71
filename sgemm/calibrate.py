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
from collections import defaultdict

import numpy as np

from . import cost
from .kernels import registry
from .kernels.params import TileParams
from .problem import Problem
from .runtime.device import DeviceInfo

PEAK_FRACS = np.exp(np.linspace(math.log(0.02), math.log(3.0), 64))
T0S = np.array([0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 14, 20]) * 1e-6
Q_SATS = (1, 2, 3, 4, 6, 8, 12, 16)
STORES = (1.0, 0.6, 0.35, 0.2, 0.12)
MEMS = (1.0, 0.7, 0.5, 0.35, 0.25)
UNALIGNED = (0.45, 0.55, 0.65, 0.75, 0.85, 0.95, 1.0)
MIN_POINTS = 4


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


def _features(pts, dev: DeviceInfo, bw: float):
    """Per point what the grid search needs: blocks, flops per block, blocks
    per SM, aligned, memory and reduction seconds."""
    out = []
    for prob, spec, p, t in pts:
        blocks, _, flops = cost.geometry(spec, p, prob)
        two = cost.two_launch_split(spec, p)
        s = cost.split_of(spec, p)
        ab, outb = cost.dram_bytes(prob, s, two)
        mem = (ab / bw, outb / bw)
        red = (4.0 * (s + 1) * prob.m * prob.n * prob.batch / bw + 1.5e-6 * prob.batch) if two else 0.0
        out.append((blocks, flops, cost.resident(spec, p, dev), spec.aligned_for(prob), mem, red, t))
    return out


def fit_config(feats, dev: DeviceInfo) -> tuple[cost.Rate, float]:
    """The grid point of (peak_frac, t0, q_sat, unaligned) with the least mean
    squared log error; returns (rate, rms log error)."""
    peak_sm = dev.fp32_peak_tflops() * 1e12 / dev.sm_count
    meas = np.log(np.array([f[6] for f in feats]))
    best = None
    for q_sat in Q_SATS:
        # compute time = A / F + B * t0, per point, for this q_sat
        A = np.zeros(len(feats))
        B = np.zeros(len(feats))
        for i, (blocks, flops, per_sm, _, _, _, _) in enumerate(feats):
            slots = dev.sm_count * per_sm
            full, rem = divmod(blocks, slots)
            for n, waves in ((slots, full), (rem, 1 if rem else 0)):
                if waves:
                    q = math.ceil(n / dev.sm_count)
                    A[i] += waves * q * flops / min(1.0, q / min(q_sat, per_sm))
                    B[i] += waves
        al = np.array([f[3] for f in feats])
        mab = np.array([f[4][0] for f in feats])
        mout = np.array([f[4][1] for f in feats])
        red = np.array([f[5] for f in feats])
        for u, st, me in [(u, st, me) for u in (UNALIGNED if not al.all() else (1.0,))
                          for st in (STORES if not al.all() else (1.0,)) for me in MEMS]:
            fac = np.where(al, 1.0, u)
            mem = mab / me + mout / np.where(al, 1.0, st)
            # (peak_frac, t0) grid, vectorized
            F = peak_sm * PEAK_FRACS[:, None, None] * fac[None, None, :]
            comp = A[None, None, :] / F + T0S[None, :, None] * B[None, None, :]
            pred = np.log(np.maximum(comp, mem[None, None, :]) + red[None, None, :])
            err = ((pred - meas[None, None, :]) ** 2).mean(axis=2)
            i, j = np.unravel_index(np.argmin(err), err.shape)
            if best is None or err[i, j] < best[0]:
                best = (err[i, j], cost.Rate(float(PEAK_FRACS[i]), q_sat, float(T0S[j]),
                                             float(u if not al.all() else 0.85),
                                             float(st if not al.all() else 1.0), float(me)))
    return best[1], float(math.sqrt(best[0]))


def fit(rows: list[dict], dev: DeviceInfo, machine: cost.Machine | None = None
        ) -> tuple[cost.Calibration, dict]:
    """A calibration from sweep rows, and each config's fit error."""
    machine = machine or cost.Machine()
    bw = machine.bw_frac * dev.dram_bandwidth_gbs() * 1e9
    groups = defaultdict(list)
    for pt in points(rows):
        groups[cost.config_key(pt[1], pt[2])].append(pt)
    rates, errs = {}, {}
    for key, pts in groups.items():
        if len(pts) < MIN_POINTS:
            continue
        rates[key], errs[key] = fit_config(_features(pts, dev, bw), dev)
    return cost.Calibration(dev.name, machine, rates, dev.clock_khz, "fit"), errs
