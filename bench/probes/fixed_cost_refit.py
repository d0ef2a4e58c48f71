"""Probe: each FFMA config's fixed cost per wave (``Rate.t0``: a block's
prologue, epilogue and first k-tile latency, which does not scale with K)
fitted together with its rate (``peak_frac``) on the sweeps of the present
kernels, every other field as shipped.  Not part of the package.

The shipped t0 (1.5-6 us) came from the first calibration sweeps, fitted
with every field at once on kernels since changed, and single fields were
refitted since with t0 held.  On batched products with a narrow side
(narrow_batch_sweep.py) the model sold the gemv kernels 1.7x too fast and
the small tiles ~15 % too slow: its pick among the timed candidates was
1.17x slower than the fastest in geometric mean (worst 3.1x).

    python bench/probes/fixed_cost_refit.py fit [--write] [--only P,..] SWEEP.json ...  # CPU
    python bench/probes/fixed_cost_refit.py crossval [--only P,..] SWEEP.json ...       # CPU

--only: refit only the configs whose key starts with one of these prefixes.

fit: per config with at least MIN_POINTS timings over the sweeps, the grid
point (t0, peak_frac scale) with the least mean absolute log error of
cost.predict; kept where it lowers that error by at least MIN_GAIN.
crossval: two folds over each sweep's problems (alternate rows): fit on
one, and on the other compare the measured time of the candidate each
calibration ranks first with the fastest measured (regret), shipped
against refitted.
"""
import json
import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from store_refit import SHIPPED, pick_regret  # noqa: E402

T0S = np.array([0.0] + [0.25e-6 * 1.35 ** i for i in range(15)])    # up to ~17 us
SCALES = np.exp(np.linspace(math.log(0.7), math.log(1.4), 15))
MIN_POINTS = 12
MIN_GAIN = 0.005


def decompose(rows):
    """Per timed candidate: (problem id, config key, seconds, compute at t0=0,
    waves (d compute / d t0), memory, reduction, host, the shipped t0),
    predicted with the shipped rates."""
    from sgemm import calibrate, cost
    from sgemm.tune import DEVICE_MODELS
    dev = DEVICE_MODELS["h100"]
    cal = cost.Calibration.from_json(json.loads(SHIPPED.read_text()), str(SHIPPED))
    out = []
    for i, r in enumerate(rows):
        for prob, spec, p, sec in calibrate.points([r]):
            key = cost.config_key(spec, p, prob)
            if key not in cal.rates:
                continue
            parts = []
            for t0 in (0.0, 1e-6):
                trial = cost.Calibration(cal.gpu, cal.machine, {
                    **cal.rates, key: cost.Rate(**{**cal.rates[key].as_dict(), "t0": t0})},
                    cal.clock_khz, "trial")
                parts.append(cost.predict(spec, p, prob, dev, trial))
            d0, d1 = parts
            out.append((i, key, sec, d0["compute"], (d1["compute"] - d0["compute"]) / 1e-6,
                        d0["memory"], d0["reduction"], d0["host"], cal.rates[key].t0))
    return out


def predicted(pts, t0, scale):
    """Totals for arrays of points under (t0, peak_frac scale); numpy broadcasting."""
    comp0, waves, mem, red, host = (np.array([p[j] for p in pts]) for j in range(3, 8))
    comp = comp0[None, None, :] / scale[None, :, None] + waves[None, None, :] * t0[:, None, None]
    return np.maximum(np.maximum(comp, mem) + red, host)


def fit_points(pts, quiet=False, only=()) -> dict:
    """config key -> (t0, scale) where the grid lowers the error (configs
    whose key starts with one of ``only``, all where empty)."""
    by = {}
    for p in pts:
        if not only or p[1].startswith(only):
            by.setdefault(p[1], []).append(p)
    out = {}
    for key in sorted(by):
        ps = by[key]
        if len(ps) < MIN_POINTS:
            continue
        meas = np.log(np.array([p[2] for p in ps]))
        err = np.abs(np.log(predicted(ps, T0S, SCALES)) - meas[None, None, :]).mean(axis=2)
        e0 = float(np.abs(np.log(predicted(ps, np.array([ps[0][8]]), np.array([1.0])))[0, 0]
                          - meas).mean())
        i, j = np.unravel_index(np.argmin(err), err.shape)
        keep = err[i, j] < e0 - MIN_GAIN
        if keep:
            out[key] = (float(T0S[i]), float(SCALES[j]))
        if not quiet:
            print(f"{key:32s} {len(ps):5d} t0 {ps[0][8] * 1e6:4.1f} -> {T0S[i] * 1e6:5.2f} us "
                  f"scale {SCALES[j]:.3f} "
                  f"error {e0:.3f} -> {err[i, j]:.3f}{'' if keep else '  (kept)'}")
    return out


def regret(pts, new: dict) -> list:
    """Per problem, log(measured time of the pick / fastest), picks by the
    shipped rates changed where ``new`` says."""
    return pick_regret(pts, lambda ps: [
        predicted([p], np.array([new.get(p[1], (p[8], 1.0))[0]]),
                  np.array([new.get(p[1], (p[8], 1.0))[1]]))[0, 0, 0] for p in ps])


def load(paths):
    sets = {}
    for path in paths:
        rows = json.loads(Path(path).read_text())["rows"]
        sets[Path(path).name] = decompose(rows)
    return sets


def write(new: dict, paths) -> None:
    doc = json.loads(SHIPPED.read_text())
    for key, (t0, scale) in new.items():
        r = doc["rates"][key]
        doc["rates"][key] = {**r, "t0": t0, "peak_frac": r["peak_frac"] * scale}
    doc["sweeps"].append(f"{', '.join(paths)} (t0 and peak_frac refitted together: "
                         "bench/probes/fixed_cost_refit.py)")
    SHIPPED.write_text(json.dumps(doc, indent=1))
    print(f"wrote {len(new)} configs' t0 and peak_frac into {SHIPPED}")


if __name__ == "__main__":
    a = sys.argv[1:]
    only = ()
    if "--only" in a:       # --only PREFIX,PREFIX: the configs refitted
        i = a.index("--only")
        only = tuple(a[i + 1].split(","))
        del a[i:i + 2]
    if a[:1] == ["fit"]:
        paths = [x for x in a[1:] if x != "--write"]
        sets = load(paths)
        new = fit_points([p for s in sets.values() for p in s], only=only)
        for name, s in sets.items():
            old, nw = regret(s, {}), regret(s, new)
            print(f"{name}: in-sample regret {math.exp(sum(old) / len(old)):.4f} -> "
                  f"{math.exp(sum(nw) / len(nw)):.4f} over {len(old)} problems")
        if "--write" in a:
            write(new, paths)
    elif a[:1] == ["crossval"]:
        sets = load(a[1:])
        for fold in (0, 1):
            train = [p for s in sets.values() for p in s if p[0] % 2 == fold]
            new = fit_points(train, quiet=True, only=only)
            for name, s in sets.items():
                test = [p for p in s if p[0] % 2 != fold]
                old, nw = regret(test, {}), regret(test, new)
                print(f"fold {fold} {name}: held-out regret {math.exp(sum(old) / len(old)):.4f}"
                      f" -> {math.exp(sum(nw) / len(nw)):.4f} (worst {math.exp(max(old)):.2f} -> "
                      f"{math.exp(max(nw)):.2f}) over {len(old)}")
    else:
        sys.exit(__doc__)
