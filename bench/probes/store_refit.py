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


def work_of(p):
    """(C-order pitches all multiples of 4, FFMA seconds at 40 TFLOP/s, DRAM
    seconds at 2.5 TB/s) of a problem as the judge lays it out, or None past
    calibrate's FLOP limit."""
    from sgemm.calibrate import MAX_FLOPS
    m, n, k, bt = p["m"], p["n"], p["k"], p["batch"]
    lds = (m if p["ta"] else k, k if p["tb"] else n, n)     # C-order operands' pitches
    flops = 2.0 * m * n * k * bt
    if flops >= MAX_FLOPS:
        return None
    return (all(x % 4 == 0 for x in lds), flops / 40e12,
            4 * bt * (m * k + k * n + m * n) / 2.5e12)


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


def pick_regret(pts, totals) -> list:
    """log(measured seconds of the model's pick / the fastest measured) per
    problem with two or more timed candidates.  pts: tuples (problem id,
    config key, measured seconds, ...); totals(group) -> predicted seconds
    of each point of one problem (the refit probes' own model)."""
    by = {}
    for p in pts:
        by.setdefault(p[0], []).append(p)
    logs = []
    for ps in by.values():
        if len(ps) < 2:
            continue
        t = list(totals(ps))
        pick = ps[t.index(min(t))]
        logs.append(math.log(pick[2] / min(p[2] for p in ps)))
    return logs


def with_factor(rate: dict, field: str, part, value) -> dict:
    """A rate's fields with ``field`` set to value (its ``part``-th entry for
    the per-layout factors, part None otherwise)."""
    if part is not None:
        value = tuple(value if i == part else v for i, v in enumerate(rate[field]))
    return {**rate, field: value}


def fit(path: str, write: bool, field: str = "store", families=FAMILIES, grid=GRID,
        select=lambda prob, spec: not spec.aligned_for(prob), rows=None, quiet=False) -> dict:
    """Per config with at least MIN_POINTS timings in the sweep at ``path``
    that ``select`` takes (default: unaligned ones): the value of the rate's
    ``field`` on ``grid`` with the least mean absolute log error of
    cost.predict, every other field as shipped.  ``field="layout"`` fits
    each of a config's four layout factors on its own layout's points."""
    from sgemm import calibrate, cost
    from sgemm.tune import DEVICE_MODELS
    dev = DEVICE_MODELS["h100"]
    doc = json.loads(SHIPPED.read_text())
    cal = cost.Calibration.from_json(doc, str(SHIPPED))
    if rows is None:
        rows = json.loads(Path(path).read_text())["rows"]
    per_layout = field == "layout"
    say = (lambda *a: None) if quiet else print
    groups = {}
    for prob, spec, p, sec in calibrate.points(rows):
        if spec.name in families and select(prob, spec):
            key = cost.config_key(spec, p, prob)
            part = cost.layout_index(prob) if per_layout else None
            groups.setdefault((key, part), []).append((prob, spec, p, sec))

    def value_of(key, part):
        v = getattr(cal.rates[key], field)
        return v[part] if per_layout else v

    def err(key, part, pts, value):
        r = cal.rates[key]
        trial = cost.Calibration(cal.gpu, cal.machine, {**cal.rates, key: cost.Rate(
            **with_factor(r.as_dict(), field, part, value))}, cal.clock_khz, "trial")
        return sum(abs(math.log(cost.predict(s, q, pb, dev, trial)["total"] / t))
                   for pb, s, q, t in pts) / len(pts)

    say(f"{'config':32s} {'points':>6s} {field:>11s} {'error':>13s}")
    new = {}
    for key, part in sorted(groups, key=str):
        pts, name = groups[key, part], key + ("" if part is None else f"[{part}]")
        if key not in cal.rates or len(pts) < MIN_POINTS:
            why = "no rate" if key not in cal.rates else "few points"
            say(f"{name:32s} {len(pts):6d}  (kept: {why})")
            continue
        old = value_of(key, part)
        e0 = err(key, part, pts, old)
        best = min(grid, key=lambda g: err(key, part, pts, g))
        e1 = err(key, part, pts, best)
        if e1 < e0:             # the shipped value may lie between grid points
            new[key, part] = best
        say(f"{name:32s} {len(pts):6d} {old:5.2f}->{best:5.2f} {e0:6.3f}->{e1:6.3f}"
              f"{'' if e1 < e0 else '  (kept: no better on the grid)'}")
    if write:
        for (key, part), v in new.items():
            doc["rates"][key] = with_factor(doc["rates"][key], field, part, v)
        doc["sweeps"].append(f"{path} ({field} factors of {', '.join(families)} only)")
        SHIPPED.write_text(json.dumps(doc, indent=1))
        print(f"wrote {len(new)} {field} factors into {SHIPPED}")
    return new


def crossval(path: str, field: str, families, grid, select) -> None:
    """Two-fold check of a refit on the sweep's own problems: fit on half of
    them (alternate rows), and on the other half compare the measured time of
    the candidate each calibration ranks first with the fastest measured
    (regret), for the shipped factors and the refitted ones; then the halves
    swapped.  Only the sweep's candidates compete (its families)."""
    from sgemm import calibrate, cost
    from sgemm.tune import DEVICE_MODELS
    dev = DEVICE_MODELS["h100"]
    doc = json.loads(SHIPPED.read_text())
    shipped = cost.Calibration.from_json(doc, str(SHIPPED))
    rows = json.loads(Path(path).read_text())["rows"]
    logs = {"shipped": [], "refit": []}
    for fold in (0, 1):
        train = [r for i, r in enumerate(rows) if i % 2 == fold]
        test = [r for i, r in enumerate(rows) if i % 2 != fold]
        new = fit(path, False, field, families, grid, select, rows=train, quiet=True)
        rates = dict(shipped.rates)
        for (key, part), v in new.items():
            rates[key] = cost.Rate(**with_factor(rates[key].as_dict(), field, part, v))
        refit = cost.Calibration(shipped.gpu, shipped.machine, rates, shipped.clock_khz, "refit")
        for r in test:
            pts = [(pb, s, q, t) for pb, s, q, t in calibrate.points([r])
                   if s.name in families and select(pb, s)]
            if len(pts) < 2:
                continue
            best = min(t for *_, t in pts)
            for name, cal in (("shipped", shipped), ("refit", refit)):
                pick = min(pts, key=lambda x: cost.predict(x[1], x[2], x[0], dev, cal)["total"])
                logs[name].append(math.log(pick[3] / best))
    for name, v in logs.items():
        worst = math.exp(max(v))
        print(f"{name:8s} {len(v)} held-out problems: measured time of the model's pick / "
              f"fastest measured, geomean {math.exp(sum(v) / len(v)):.4f}, worst {worst:.3f}, "
              f"exact {sum(1 for x in v if x == 0)}")


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
