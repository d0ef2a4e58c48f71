"""Probe (CPU, no GPU): what the cost model predicts for three planner
routes nobody built, over problems drawn from one category of the judge's
distribution (draw() of .judge/judge.py, this probe's own seed): the
geometric mean of the best plan's predicted time now over with the route,
and how many problems gain more than 5 %.  The numbers behind "the model's
own search first" in docs/notes/dispatch.md (2026-11-27, third).

    python bench/probes/model_whatif.py tail CATEGORY N SEED       # C cut into two planned blocks
    python bench/probes/model_whatif.py tiles CATEGORY N SEED      # 128x128 and 64x256, 16x8 a thread
    python bench/probes/model_whatif.py unaligned CATEGORY N SEED  # rung 9 at its aligned rate
    python bench/probes/model_whatif.py unaligned-rect CATEGORY N SEED   # 128x64/64x128 at 0.95

tail: every cut of C at a multiple of 128 or 256 rows or columns (the first
80), each block planned on its own, plus a launch gap.  tiles: the two
tiles added to rung 9's configs with the 256x64 tile's rates (same thread
tile and threads).  A prediction, not a measurement.
"""
import importlib.util
import math
import os
import random
import sys
import types

if importlib.util.find_spec("cupy") is None:    # draw() needs none of it
    sys.modules["cupy"] = types.ModuleType("cupy")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", ".judge"))
sys.path.insert(0, HERE)
import judge  # noqa: E402
from model_picks import canonical  # noqa: E402

from sgemm import cost, peeling, planner  # noqa: E402
from sgemm.kernels.params import TileParams  # noqa: E402
from sgemm.kernels.registry import KERNELS  # noqa: E402
from sgemm.tune import DEVICE_MODELS  # noqa: E402

DEV = DEVICE_MODELS["h100"]
TILES = {"sq128": TileParams(BM=128, BN=128, BK=8, WM=64, WN=64, TM=16, TN=8, threads=128),
         "tall64t": TileParams(BM=64, BN=256, BK=8, WM=32, WN=128, TM=8, TN=16, threads=128)}


def best(prob, cal):
    return planner.candidates(prob, DEV, "ieee", cal)[0].predicted


def with_tail(prob, cal):
    cuts = []
    for unit in (128, 256):
        for c0 in range(unit, prob.m, unit):
            cuts.append((peeling.sub(prob, 0, c0, 0, prob.n), peeling.sub(prob, c0, prob.m - c0, 0, prob.n)))
        for c0 in range(unit, prob.n, unit):
            cuts.append((peeling.sub(prob, 0, prob.m, 0, c0), peeling.sub(prob, 0, prob.m, c0, prob.n - c0)))
    return min([best(prob, cal)] + [best(a, cal) + best(b, cal) + cal.machine.launch_gap
                                    for a, b in cuts[:80]])


def changed(cal, route):
    """A calibration (and registry) with the route in place."""
    rates = dict(cal.rates)
    if route == "tiles":
        db = KERNELS["double_buffer"]
        for name, p in TILES.items():
            db.configs[name] = p
            rates[f"double_buffer:{p.BM}x{p.BN}x{p.BK}:{p.threads}"] = rates["double_buffer:256x64x8:128"]
        planner.FFMA_TILES["double_buffer"] = tuple(planner.FFMA_TILES["double_buffer"]) + tuple(TILES)
    for k, v in cal.rates.items():
        if route == "unaligned" and k.startswith("double_buffer:"):
            rates[k] = cost.Rate(**{**v.as_dict(), "unaligned": 1.0})
        if route == "unaligned-rect" and k in ("double_buffer:128x64x16:128",
                                               "double_buffer:64x128x16:128"):
            rates[k] = cost.Rate(**{**v.as_dict(), "unaligned": 0.95})
    planner._recent.clear()
    return cost.Calibration(cal.gpu, cal.machine, rates, cal.clock_khz, route)


def main():
    route, cat, n, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    r, probs = random.Random(seed), []
    while len(probs) < n:
        p = judge.draw(r, cat)
        if judge.fits(p) and (route != "tail" or p["batch"] == 1):
            probs.append(canonical(p))
    cal = cost.calibration(DEV)
    now = [best(p, cal) for p in probs]
    if route == "tail":
        new = [with_tail(p, cal) for p in probs]
    else:
        cal2 = changed(cal, route)
        new = [best(p, cal2) for p in probs]
    ra = [a / b for a, b in zip(now, new)]
    print(f"{route} {cat} n {n} seed {seed}: predicted now / with it, geomean "
          f"{math.exp(sum(map(math.log, ra)) / len(ra)):.3f}; > 5 % on {sum(x > 1.05 for x in ra)}")


if __name__ == "__main__":
    main()
