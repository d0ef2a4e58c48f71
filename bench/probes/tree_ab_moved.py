"""Probe (CPU, no GPU): a tree_ab.py file split by whether the model's FP32
pick differs between its two trees (replayed here, one process a tree):
per problem whose pick moved, both picks and both trees' times (best
round), then the geometric mean of A's time over B's on the moved problems
and on the others (the probe's noise: the same plans).

    python bench/probes/tree_ab_moved.py TREE_AB.json [TREE_A TREE_B]   # default .base .
"""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = r'''
import json, sys
sys.path.insert(0, sys.argv[2])
from model_picks import canonical, label
from sgemm import planner
from sgemm.tune import DEVICE_MODELS
dev = DEVICE_MODELS["h100"]
print(json.dumps([label(planner.candidates(canonical(p), dev, "ieee")[0])
                  for p in json.loads(sys.argv[1])]))
'''


def picks(tree: str, probs: list) -> list:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    # cwd outside the trees: `python -c` puts the working directory first on sys.path
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(probs), str(HERE)], env=env,
                       capture_output=True, text=True, cwd="/")
    if r.returncode:
        sys.exit(r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(path: str, ta: str = ".base", tb: str = ".") -> None:
    d = json.load(open(path))
    probs = d["problems"]
    pa, pb = picks(ta, probs), picks(tb, probs)
    best = {key: [min(rnd[i]["us"] for rnd in d["runs"][key]) for i in range(len(probs))]
            for key in (".base", ".")}      # tree_ab.py's keys: its trees' arguments
    moved, same = [], []
    for i, p in enumerate(probs):
        a, b = best[".base"][i], best["."][i]
        (same if pa[i] == pb[i] else moved).append(math.log(a / b))
        if pa[i] != pb[i]:
            print(f"{p['batch']}x{p['m']}x{p['n']}x{p['k']} {'NT'[p['ta']]}{'NT'[p['tb']]}: "
                  f"{pa[i]} {a:.1f} us -> {pb[i]} {b:.1f} us ({a / b:.2f}x)")
    gm = lambda v: math.exp(sum(v) / len(v)) if v else float("nan")  # noqa: E731
    print(f"moved picks: {len(moved)}, A/B time geomean {gm(moved):.3f}; same pick: "
          f"{len(same)}, {gm(same):.3f} (noise)")


if __name__ == "__main__":
    main(*sys.argv[1:4])
