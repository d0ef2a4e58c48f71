"""Probe (CPU, no GPU): the problems of the judge's distribution (this
probe's own seed, never a judge run's) that the peel scheme's deep cut
(sgemm/peeling.py) takes on an H100, with the model's time for the whole
problem and for the cut (main block's best plan plus the strips' estimate).
Writes them as JSON on stdout, the input tree_ab.py takes as PROBS.

    python bench/probes/deep_peel_moved.py N SEED > moved.json
"""
import json
import random
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1] / ".judge"), str(HERE)]
if "cupy" not in sys.modules:
    sys.modules["cupy"] = types.ModuleType("cupy")     # draw() needs none of it
import judge  # noqa: E402
from model_picks import canonical  # noqa: E402

from sgemm import peeling, planner  # noqa: E402
from sgemm.tune import DEVICE_MODELS  # noqa: E402


def main(n: int, seed: int) -> None:
    dev = DEVICE_MODELS["h100"]
    r, out, counts = random.Random(seed), [], {}
    names, weights = zip(*judge.CATEGORIES)
    for _ in range(n):
        p = judge.draw(r, r.choices(names, weights)[0])
        while not judge.fits(p):
            p = judge.draw(r, p["cat"])
        prob = canonical(p)
        if peeling.choose(prob, dev) != peeling.DEEP_UNIT or peeling._wave_cut(prob, dev):
            continue
        whole = planner.best_time(prob, dev)
        main_, strips = peeling.parts(prob, peeling.DEEP_UNIT)
        cut = planner.best_time(main_, dev) + sum(peeling.strip_time(s) for s in strips)
        counts[p["cat"]] = counts.get(p["cat"], 0) + 1
        out.append({k: p[k] for k in ("m", "n", "k", "ta", "tb", "batch")})
        print(f"{p['cat']:8s} {p['m']}x{p['n']}x{p['k']} {p['ta']:d}{p['tb']:d}: whole "
              f"{whole * 1e6:.1f} us, cut {cut * 1e6:.1f} us ({whole / cut:.3f}x)",
              file=sys.stderr)
    print(f"{len(out)} of {n} cut: {counts}", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
