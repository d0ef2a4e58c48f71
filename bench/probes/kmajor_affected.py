"""Probe (CPU, no GPU): problems of the judge's distribution (draw() of
.judge/judge.py, this probe's own seed) whose plan rung 13 can change on
an H100: the model picks a kmajor tile, or one is on the measured choice's
shortlist (sgemm.measure.shortlist).  Prints them as PROBS for
bench/probes/tree_ab.py, with the count per category on stderr.

    python bench/probes/kmajor_affected.py N SEED [MAX]
"""
import importlib.util
import json
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

from sgemm import measure, planner  # noqa: E402
from sgemm.tune import DEVICE_MODELS  # noqa: E402


def main():
    n, seed = int(sys.argv[1]), int(sys.argv[2])
    most = int(sys.argv[3]) if len(sys.argv) > 3 else n
    dev, r = DEVICE_MODELS["h100"], random.Random(seed)
    names, weights = zip(*judge.CATEGORIES)
    out, counts, drawn = [], {}, 0
    while drawn < n and len(out) < most:
        cat = r.choices(names, weights)[0]
        p = judge.draw(r, cat)
        if not judge.fits(p):
            continue
        drawn += 1
        prob = canonical(p)
        hit = False
        for prec in ("ieee", "tf32x3"):
            cands = planner.candidates(prob, dev, prec)
            short = measure.shortlist(prob, dev, prec) or cands[:1]
            hit |= any(c.spec.name == "kmajor" for c in short)
        if hit:
            out.append({k: p[k] for k in ("m", "n", "k", "ta", "tb", "batch")})
            counts[cat] = counts.get(cat, 0) + 1
    print(f"{len(out)} of {drawn} drawn: {counts}", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
