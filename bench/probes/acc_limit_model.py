"""Probe (CPU, no GPU): what a different FFMA chain limit (planner.ACC_SLICE)
does to the model's H100 picks -- on 1500 problems of the judge's
distribution (this probe's own seed) and on the public suite: how many picks
move and the predicted time of the old pick over the new one's, by category.

    python bench/probes/acc_limit_model.py OLD NEW [PRECISION]
"""
import math
import random
import sys
import types
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1] / ".judge"), str(HERE)]
sys.modules.setdefault("cupy", types.ModuleType("cupy"))   # draw() needs none of it
import judge  # noqa: E402
from model_picks import canonical  # noqa: E402

from sgemm import planner, tune  # noqa: E402
from sgemm.tune import DEVICE_MODELS  # noqa: E402


def picks(probs, acc, dev, prec):
    planner.ACC_SLICE = acc
    out = []
    for pr in probs:
        planner._recent.clear()
        c = planner.candidates(pr, dev, prec)[0]
        out.append((c.predicted, c.spec.name, c.params))
    return out


def gm(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


def main(old: int, new: int, prec: str) -> None:
    dev = DEVICE_MODELS["h100"]
    r, draws = random.Random(3131), []
    names, weights = zip(*judge.CATEGORIES)
    while len(draws) < 1500:
        p = judge.draw(r, r.choices(names, weights)[0])
        if judge.fits(p):
            draws.append(p)
    probs = [canonical(p) for p in draws]
    a, b = picks(probs, old, dev, prec), picks(probs, new, dev, prec)
    by = defaultdict(list)
    for p, x, y in zip(draws, a, b):
        if x[1:] != y[1:]:
            by[p["cat"]].append(x[0] / y[0])
    print(f"{prec}, ACC_SLICE {old} -> {new}: {sum(map(len, by.values()))} of {len(draws)} "
          f"picks move; all draws {gm([x[0] / y[0] for x, y in zip(a, b)]):.4f}")
    for cat, v in sorted(by.items()):
        print(f"  {cat}: {len(v)} moved, {gm(v):.4f} (min {min(v):.3f})")
    shapes = tune.read_shapes(HERE.parents[1] / "bench" / "shapes" / "public.txt")
    sp = [tune.canonical(s, True) for s in shapes]
    a, b = picks(sp, old, dev, prec), picks(sp, new, dev, prec)
    moved = [(s, x[0] / y[0]) for s, x, y in zip(shapes, a, b) if x[1:] != y[1:]]
    print(f"public suite: {len(moved)} of {len(shapes)} move; all shapes "
          f"{gm([x[0] / y[0] for x, y in zip(a, b)]):.4f}")
    for s, q in moved:
        print(f"  {s.m}x{s.n}x{s.k} {'T' if s.ta else 'N'}{'T' if s.tb else 'N'}: {q:.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "ieee")
