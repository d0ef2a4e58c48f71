"""Probe: the cost model's unaligned-store factor (``Rate.store``) refitted
for the kernels whose unaligned stores now go through shared memory (rung 9
``double_buffer``, ``tile``, ``small``: docs/notes/ffma-fast.md, 2026-11-27
fourth session).  Not part of the package.

The shipped rates were fitted when an unaligned thread tile left as scalar
stores 16 bytes apart (``store`` 0.2-0.6: C written at that share of the
DRAM rate).  This refits that one factor per config, every other field held
at its shipped value, on timings of the tree as it is now.

    OUT=dir python bench/probes/store_refit.py sweep [N] [SEED] [SECONDS]   # GPU
    python bench/probes/store_refit.py fit SWEEP.json [--write]              # CPU
    python bench/probes/store_refit.py moved OLD_CAL.json N SEED             # CPU

sweep: problems drawn from the planner's own distribution
(``sgemm.calibrate.draw``, own seed) and kept where writing C is a large
share of the work (output at 2.5 TB/s over 15 % of the time at 40 TFLOP/s:
store_share.py's split), every candidate of the three families timed by
``sgemm.calibrate.measure`` (its method: fp32 check against cuBLAS's
result, medians, graphs for short launches); $OUT/store-sweep.json.

fit: per config with at least MIN_POINTS unaligned timings, the store factor
on a grid with the least mean absolute log error of cost.predict; prints the
old and new factor and both errors; --write puts the new factors into the
shipped H100 calibration (sgemm/data/cost-*.json).

moved: problems of the judge's distribution (draw() of .judge/judge.py,
this probe's own seed) whose ieee plan on an H100 differs between
OLD_CAL.json (e.g. ``git show HEAD:sgemm/data/cost-....json``) and the
shipped calibration, printed as PROBS for bench/probes/tree_ab.py (the
count per category and the moves on stderr).
"""
import json
import math
import os
import random
import sys
from pathlib import Path

FAMILIES = ("double_buffer", "tile", "small")
MIN_POINTS = 8
GRID = [round(math.exp(x), 3) for x in
        [math.log(0.1) + i * (math.log(1.5) - math.log(0.1)) / 40 for i in range(41)]]
SHIPPED = Path(__file__).resolve().parents[2] / "sgemm" / "data" / \
    "cost-nvidia-h100-80gb-hbm3-sm132-sm_90a.json"


def store_heavy(p) -> bool:
    out = p["m"] * p["n"] * p["batch"] * 4 / 2.5e12
    return out / (out + 2 * p["m"] * p["n"] * p["k"] * p["batch"] / 40e12) > 0.15


def draws(seed: int, n: int, keep=store_heavy) -> list:
    """n problems of calibrate.draw's distribution (own seed) that ``keep`` selects."""
    from sgemm import calibrate
    r, out = random.Random(seed), []
    names, weights = zip(*calibrate.CATEGORIES)
    while len(out) < n:
        p = calibrate.draw(r, r.choices(names, weights)[0])
        by = 4 * p["batch"] * (p["m"] * p["k"] + p["k"] * p["n"] + 2 * p["m"] * p["n"])
        if keep(p) and by < calibrate.MAX_BYTES:
            out.append(p)
    return out


def sweep(n: int, seed: int, seconds: float, keep=store_heavy, families=FAMILIES,
          name: str = "store") -> None:
    """Time every candidate of ``families`` on n problems ``keep`` selects:
    $OUT/<name>-sweep.json."""
    from sgemm import calibrate
    menu = calibrate._menu
    calibrate.sample = lambda s, k: draws(s, k, keep)
    calibrate._menu = lambda prob, dev, keep=6.0: [
        c for c in menu(prob, dev, keep) if c.spec.name in families]
    data = calibrate.measure(n, seed, seconds)
    data["probe"] = f"bench/probes/{name}_refit.py sweep"
    out = Path(os.environ.get("OUT", ".")) / f"{name}-sweep.json"
    out.write_text(json.dumps(data))
    print(f"{len(data['rows'])} problems -> {out}")


def fit(path: str, write: bool, field: str = "store", families=FAMILIES, grid=GRID) -> None:
    """Per config with at least MIN_POINTS unaligned timings in the sweep at
    ``path``: the value of the rate's ``field`` on ``grid`` with the least mean
    absolute log error of cost.predict, every other field as shipped."""
    from sgemm import calibrate, cost
    from sgemm.tune import DEVICE_MODELS
    dev = DEVICE_MODELS["h100"]
    doc = json.loads(SHIPPED.read_text())
    cal = cost.Calibration.from_json(doc, str(SHIPPED))
    rows = json.loads(Path(path).read_text())["rows"]
    groups = {}
    for prob, spec, p, sec in calibrate.points(rows):
        if spec.name in families and not spec.aligned_for(prob):
            groups.setdefault(cost.config_key(spec, p, prob), []).append((prob, spec, p, sec))

    def err(key, pts, value):
        r = cal.rates[key]
        trial = cost.Calibration(cal.gpu, cal.machine, {**cal.rates, key: cost.Rate(
            **{**r.as_dict(), field: value})}, cal.clock_khz, "trial")
        return sum(abs(math.log(cost.predict(s, q, pb, dev, trial)["total"] / t))
                   for pb, s, q, t in pts) / len(pts)

    print(f"{'config':28s} {'points':>6s} {field:>11s} {'error':>13s}")
    new = {}
    for key in sorted(groups):
        pts = groups[key]
        if key not in cal.rates or len(pts) < MIN_POINTS:
            why = "no rate" if key not in cal.rates else "few points"
            print(f"{key:28s} {len(pts):6d}  (kept: {why})")
            continue
        old = getattr(cal.rates[key], field)
        e0 = err(key, pts, old)
        best = min(grid, key=lambda g: err(key, pts, g))
        e1 = err(key, pts, best)
        if e1 < e0:             # the shipped value may lie between grid points
            new[key] = best
        print(f"{key:28s} {len(pts):6d} {old:5.2f}->{best:5.2f} {e0:6.3f}->{e1:6.3f}"
              f"{'' if e1 < e0 else '  (kept: no better on the grid)'}")
    if write:
        for key, v in new.items():
            doc["rates"][key][field] = v
        doc["sweeps"].append(f"{path} ({field} factors of {', '.join(families)} only)")
        SHIPPED.write_text(json.dumps(doc, indent=1))
        print(f"wrote {len(new)} {field} factors into {SHIPPED}")


def moved(old_path: str, n: int, seed: int) -> None:
    import importlib.util
    import types
    if importlib.util.find_spec("cupy") is None:    # draw() needs none of it
        sys.modules["cupy"] = types.ModuleType("cupy")
    here = Path(__file__).resolve().parent
    sys.path[:0] = [str(here.parents[1] / ".judge"), str(here)]
    import judge
    from model_picks import canonical
    from sgemm import cost, planner
    from sgemm.tune import DEVICE_MODELS
    dev = DEVICE_MODELS["h100"]
    old = cost.Calibration.from_json(json.loads(Path(old_path).read_text()), old_path)
    new = cost.Calibration.from_json(json.loads(SHIPPED.read_text()), str(SHIPPED))
    r, out, counts = random.Random(seed), [], {}
    names, weights = zip(*judge.CATEGORIES)
    for _ in range(n):
        p = judge.draw(r, r.choices(names, weights)[0])
        while not judge.fits(p):
            p = judge.draw(r, p["cat"])
        prob = canonical(p)
        a, b = (planner.candidates(prob, dev, "ieee", cal=c)[0] for c in (old, new))
        if (a.spec.name, a.params, a.pack) != (b.spec.name, b.params, b.pack):
            counts[p["cat"]] = counts.get(p["cat"], 0) + 1
            out.append({k: p[k] for k in ("m", "n", "k", "ta", "tb", "batch")})
            q, w = a.params, b.params
            print(f"{p['cat']:8s} {p['batch']}x{p['m']}x{p['n']}x{p['k']} {p['ta']:d}{p['tb']:d}: "
                  f"{a.spec.name} {q.BM}x{q.BN} s{q.split_k} {a.predicted * 1e6:.1f} us -> "
                  f"{b.spec.name} {w.BM}x{w.BN} s{w.split_k} {b.predicted * 1e6:.1f} us",
                  file=sys.stderr)
    print(f"{len(out)} of {n} moved: {counts}", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["sweep"]:
        sweep(int(a[1]) if len(a) > 1 else 150, int(a[2]) if len(a) > 2 else 4242,
              float(a[3]) if len(a) > 3 else 150.0)
    elif a[:1] == ["fit"]:
        fit(a[1], "--write" in a)
    elif a[:1] == ["moved"]:
        moved(a[1], int(a[2]), int(a[3]))
    else:
        sys.exit(__doc__)
