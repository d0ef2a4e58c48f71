"""Probe: is the cost model's occupancy curve the wrong shape?  Each FFMA
config's rate at q blocks on the busiest SM is F x min(1, q / q_sat) in
cost.py; the sweeps say otherwise for rung 9's 8x8 tiles on unaligned
operands: per-SM throughput at q = 1, 2, 3 of about 0.73, 0.80 and 1.0 of
the q = 3 rate, where the model's q_sat = 1.25 says 0.8, 1.0, 1.0 -- so a
one-wave plan with two blocks on the busiest SM ran 1.14-1.35x slower than
predicted (208x4352x496 NT in a judge: 128x32 tiles, 238 blocks, 54 us
against 37.5 predicted).  Not part of the package.

Here each config gets a free factor per q (1 .. its blocks per SM), fitted
by coordinate descent on a grid with every other field as shipped, and the
fit is judged out of sample: two folds over each sweep's problems (alternate
rows), the measured time of the candidate each calibration ranks first
against the fastest measured (regret).

    python bench/probes/occupancy_refit.py SWEEP.json ...            # CPU: the folds
    python bench/probes/occupancy_refit.py --linear SWEEP.json ...   # the one-factor form
    python bench/probes/occupancy_refit.py --linear --write SWEEP.json ...   # fit on all, ship
    python bench/probes/occupancy_refit.py --residuals SWEEP.json ...        # what it is for

--residuals prints, instead, the one-wave throughput and measured/predicted
of rung 9's 128x64 and 64x128 tiles by alignment, q and layout.
--linear fits one factor a config instead of one per q: a at q = 1, rising
in a line to 1 at the config's full residency (the form cost.py uses).
--write (with --linear) fits on every problem of the sweeps and writes a
into the shipped H100 calibration as ``occ_u1``, used where operands are
unaligned.
"""
import json
import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from store_refit import SHIPPED, pick_regret  # noqa: E402

GRID = np.exp(np.linspace(math.log(0.3), 0.0, 30))     # a factor of F, at most 1
FAMILIES = ("double_buffer:",)
MIN_POINTS = 12
QMAX = 8
BOTH = "--aligned-too" in sys.argv     # else the curve is fitted and applied where unaligned
LINEAR = "--linear" in sys.argv        # one factor a per config: a at q = 1, 1 at full


def decompose(rows):
    """Per timed candidate: (problem id, config key, seconds, work by q (the
    compute seconds each wave would take at the full rate, summed per q),
    the shipped occupancy factors by q, t0 x waves, memory, reduction,
    host), recorded from cost.predict with the shipped rates."""
    from sgemm import calibrate, cost
    from sgemm.tune import DEVICE_MODELS
    dev = DEVICE_MODELS["h100"]
    cal = cost.Calibration.from_json(json.loads(SHIPPED.read_text()), str(SHIPPED))
    real = cost.compute_time
    rec = []

    def recording(blocks, flops, per_sm, sms, F, q_sat, t0, occupancy=None):
        for q, n in cost.waves(blocks, per_sm, sms):
            o = min(1.0, q / q_sat) if occupancy is None else occupancy(q)
            rec.append((q, n * q * flops / F, n * t0, o))
        return real(blocks, flops, per_sm, sms, F, q_sat, t0, occupancy)

    cost.compute_time = recording
    out = []
    try:
        for i, r in enumerate(rows):
            for prob, spec, p, sec in calibrate.points([r]):
                key = cost.config_key(spec, p, prob)
                if key not in cal.rates or spec.extra.get("scheme") == "gemv":
                    continue
                rec.clear()
                d = cost.predict(spec, p, prob, dev, cal)
                work = np.zeros(QMAX + 1)
                occ = np.ones(QMAX + 1)
                t0w = 0.0
                for q, w, t, o in rec:
                    work[min(q, QMAX)] += w
                    occ[min(q, QMAX)] = o
                    t0w += t
                out.append((i, key, sec, work, occ, t0w, d["memory"], d["reduction"], d["host"],
                            spec.aligned_for(prob)))
    finally:
        cost.compute_time = real
    return out


def totals(pts, occ_by_key):
    """Predicted seconds of each point with occupancy factors per config."""
    res = []
    for p in pts:
        occ = p[4] if (p[9] and not BOTH) else occ_by_key.get(p[1], p[4])
        comp = float((p[3] / occ).sum()) + p[5]
        res.append(max(max(comp, p[6]) + p[7], p[8]))
    return np.array(res)


def fit(pts) -> dict:
    by = {}
    for p in pts:
        if (BOTH or not p[9]) and p[1].startswith(FAMILIES):
            by.setdefault(p[1], []).append(p)
    out = {}
    for key, ps in by.items():
        if len(ps) < MIN_POINTS:
            continue
        meas = np.log([p[2] for p in ps])
        occ = ps[0][4].copy()
        # F is the rate at full occupancy (fitted on many-wave problems): the
        # curve is fitted below the largest q the config's points reach, and
        # that q keeps 1
        qfull = max(q for p in ps for q in range(1, QMAX + 1) if p[3][q] > 0)
        occ[qfull:] = 1.0
        used = [q for q in range(1, qfull) if sum(p[3][q] > 0 for p in ps) >= 4]
        if LINEAR and used:     # one parameter: a at q = 1, rising linearly to 1 at qfull
            errs = []
            for a in GRID:
                trial = occ.copy()
                trial[1:qfull] = a + (1 - a) * (np.arange(1, qfull) - 1) / max(1, qfull - 1)
                errs.append(np.abs(np.log(totals(ps, {key: trial})) - meas).mean())
            a = GRID[int(np.argmin(errs))]
            occ[1:qfull] = a + (1 - a) * (np.arange(1, qfull) - 1) / max(1, qfull - 1)
            used = []
        for _ in range(3):
            for q in used:
                errs = []
                for g in GRID:
                    trial = occ.copy()
                    trial[q] = g
                    # non-decreasing in q: more blocks an SM never lower its throughput
                    trial[q + 1:qfull] = np.maximum(trial[q + 1:qfull], g)
                    trial[1:q] = np.minimum(trial[1:q], g)
                    errs.append(np.abs(np.log(totals(ps, {key: trial})) - meas).mean())
                g = GRID[int(np.argmin(errs))]
                occ[q] = g
                occ[q + 1:qfull] = np.maximum(occ[q + 1:qfull], g)
                occ[1:q] = np.minimum(occ[1:q], g)
        out[key] = occ
    return out


def regret(pts, occ_by_key) -> list:
    return pick_regret(pts, lambda ps: totals(ps, occ_by_key))


def residuals(paths) -> None:
    """One-wave points of rung 9's 8x8 tiles by alignment, blocks on the
    busiest SM (q) and layout: k-tiles a microsecond an SM (the throughput)
    and measured / predicted with the shipped calibration."""
    from sgemm import calibrate, cost
    from sgemm.tune import DEVICE_MODELS
    dev = DEVICE_MODELS["h100"]
    cal = cost.Calibration.from_json(json.loads(SHIPPED.read_text()), str(SHIPPED))
    keys = ("double_buffer:128x64x16:128", "double_buffer:64x128x16:128")
    groups = {}
    for path in paths:
        for prob, spec, p, sec in calibrate.points(json.loads(Path(path).read_text())["rows"]):
            key = cost.config_key(spec, p, prob)
            if key not in keys:
                continue
            d = cost.predict(spec, p, prob, dev, cal)
            if d["blocks"] > dev.sm_count * d["per_sm"]:
                continue                    # one wave only
            tiles = math.ceil(d["kslice"] / p.BK)
            if tiles < 10:
                continue
            q = math.ceil(d["blocks"] / dev.sm_count)
            lay = "NT"[prob.ta] + "NT"[prob.tb]
            groups.setdefault((key, spec.aligned_for(prob), q, lay), []).append(
                (q * tiles / ((sec - d["reduction"]) * 1e6), math.log(sec / d["total"])))
    for (key, al, q, lay), v in sorted(groups.items()):
        thr = sum(x[0] for x in v) / len(v)
        mp = math.exp(sum(x[1] for x in v) / len(v))
        print(f"{key:30s} {'aligned' if al else 'unaligned':9s} q={q} {lay} {len(v):4d} points: "
              f"{thr:.2f} k-tiles/us an SM, measured/predicted {mp:.2f}")


def write(new: dict, paths) -> None:
    """--linear fits into the shipped calibration: each config's factor at
    q = 1 as its ``occ_u1`` (cost.Rate.occupancy draws the same line)."""
    doc = json.loads(SHIPPED.read_text())
    for key, occ in sorted(new.items()):
        doc["rates"][key]["occ_u1"] = round(float(occ[1]), 3)
        print(f"{key:32s} occ_u1 {doc['rates'][key]['occ_u1']}")
    doc["sweeps"].append(f"{', '.join(paths)} (occ_u1 of double_buffer only: "
                         "bench/probes/occupancy_refit.py --linear --write)")
    SHIPPED.write_text(json.dumps(doc, indent=1))
    print(f"wrote {len(new)} occupancy curves into {SHIPPED}")


if __name__ == "__main__":
    paths = [f for f in sys.argv[1:] if not f.startswith("--")]
    if "--residuals" in sys.argv:
        residuals(paths)
        sys.exit(0)
    sets = {Path(f).name: decompose(json.loads(Path(f).read_text())["rows"]) for f in paths}
    if "--write" in sys.argv:
        if not LINEAR:
            sys.exit("--write ships the one-parameter curve: pass --linear")
        new = fit([p for s in sets.values() for p in s])
        for name, s in sets.items():
            old, nw = regret(s, {}), regret(s, new)
            print(f"{name}: in-sample regret {math.exp(sum(old) / len(old)):.4f} -> "
                  f"{math.exp(sum(nw) / len(nw)):.4f} over {len(old)}")
        write(new, paths)
        sys.exit(0)
    for fold in (0, 1):
        new = fit([p for s in sets.values() for p in s if p[0] % 2 == fold])
        if fold == 0:
            for key, occ in sorted(new.items()):
                print(f"{key:32s} " + " ".join(f"q{q} {occ[q]:.2f}" for q in range(1, 5)))
        for name, s in sets.items():
            test = [p for p in s if p[0] % 2 != fold]
            old, nw = regret(test, {}), regret(test, new)
            print(f"fold {fold} {name}: held-out regret {math.exp(sum(old) / len(old)):.4f} -> "
                  f"{math.exp(sum(nw) / len(nw)):.4f} over {len(old)}")
