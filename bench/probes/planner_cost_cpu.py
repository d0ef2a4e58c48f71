"""Probe (CPU, no GPU): what the planner costs a first call -- the model's
candidates for both precisions on an H100 model, for problems of the
judge's distribution (this probe's own seed), the planner's memo of
answers cleared before each problem (its memo of blocks per SM is not:
a process fills it on its first few problems).  Milliseconds per problem,
best and median of 5 passes over 60 problems, for the tree at $SGEMM_ROOT
(default: this checkout).

    SGEMM_ROOT=TREE python bench/probes/planner_cost_cpu.py
"""
import os
import random
import statistics
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("SGEMM_ROOT") or os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [ROOT, os.path.join(os.path.dirname(os.path.dirname(HERE)), ".judge"), HERE]
sys.modules.setdefault("cupy", types.ModuleType("cupy"))   # draw() needs none of it
import judge  # noqa: E402
from model_picks import canonical  # noqa: E402

from sgemm import cost, planner  # noqa: E402
from sgemm.tune import DEVICE_MODELS  # noqa: E402


def main() -> None:
    dev = DEVICE_MODELS["h100"]
    cost.calibration(dev)
    r, probs = random.Random(77), []
    names, weights = zip(*judge.CATEGORIES)
    while len(probs) < 60:
        p = judge.draw(r, r.choices(names, weights)[0])
        if judge.fits(p):
            probs.append(canonical(p))
    passes = []
    for _ in range(5):
        t = time.perf_counter()
        for pr in probs:
            planner._recent.clear()
            planner.candidates(pr, dev, "ieee")
            planner.candidates(pr, dev, "tf32x3")
        passes.append((time.perf_counter() - t) / len(probs) * 1e3)
    print(f"tree {ROOT}: {min(passes):.2f} ms best, {statistics.median(passes):.2f} median "
          f"a problem (ieee + tf32x3 candidates), {len(probs)} problems")


if __name__ == "__main__":
    main()
