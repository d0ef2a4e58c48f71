"""Probe (CPU, no GPU): problems of the judge's distribution (draw() of
.judge/judge.py, this probe's own seed) whose H100 plan changes when
sgemm_gemv's float4 loads depend on its big operand alone
(``schemes.gemv_x_aligned``) instead of every operand: the pick moves, or the
same gemv pick now launches its ALIGNED instantiation.  Prints them as PROBS
for bench/probes/tree_ab.py (the moves on stderr).

    python bench/probes/gemv_x_affected.py N SEED [PRECISION]
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
sys.path[:0] = [os.path.join(HERE, "..", "..", ".judge"), HERE]
import judge  # noqa: E402
from model_picks import canonical  # noqa: E402

from sgemm import planner  # noqa: E402
from sgemm.kernels import registry  # noqa: E402
from sgemm.tune import DEVICE_MODELS  # noqa: E402


def plan(prob, dev, precision):
    c = planner.candidates(prob, dev, precision)[0]
    return c.spec.name, c.params, c.pack, c.spec.aligned_for(prob, c.params)


def main():
    n, seed = int(sys.argv[1]), int(sys.argv[2])
    precision = sys.argv[3] if len(sys.argv) > 3 else "ieee"
    dev, r = DEVICE_MODELS["h100"], random.Random(seed)
    gemv = registry.get("gemv")
    names, weights = zip(*judge.CATEGORIES)
    out, counts = [], {}
    for _ in range(n):
        p = judge.draw(r, r.choices(names, weights)[0])
        while not judge.fits(p):
            p = judge.draw(r, p["cat"])
        prob = canonical(p)
        new = plan(prob, dev, precision)
        own = gemv.extra.pop("aligned_x")         # the rule before: every operand
        planner._recent.clear()                   # the planner's memo of answers
        try:
            old = plan(prob, dev, precision)
        finally:
            gemv.extra["aligned_x"] = own
            planner._recent.clear()
        if old != new:
            counts[p["cat"]] = counts.get(p["cat"], 0) + 1
            out.append({k: p[k] for k in ("m", "n", "k", "ta", "tb", "batch")})
            print(f"{p['cat']:8s} {p['batch']}x{p['m']}x{p['n']}x{p['k']} {p['ta']:d}{p['tb']:d}: "
                  f"{old[0]} {old[1].BM}x{old[1].BN} s{old[1].split_k} al={old[3]:d} -> "
                  f"{new[0]} {new[1].BM}x{new[1].BN} s{new[1].split_k} al={new[3]:d}",
                  file=sys.stderr)
    print(f"{len(out)} of {n} changed: {counts}", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
