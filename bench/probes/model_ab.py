"""Probe (CPU, no GPU): the cost model's best prediction for problems drawn
from one category of the judge's distribution (draw() of .judge/judge.py,
this probe's own seed), in two source trees, one process each; prints the
geometric mean of tree A's predicted time over tree B's (> 1: B predicts
faster) and how many problems moved.  What a planner change expects, before
a GPU says what it gets.

    python bench/probes/model_ab.py TREE_A TREE_B [CATEGORY N SEED]

PREC=tf32x3 asks that precision; MOVED=FILE writes the problems whose
prediction moved by more than 1 % (a list tree_ab.py takes as PROBS).

A tree may end in @SPLITS=1-64: the planner weighs every K split in that
range (an experiment on the list of splits, planner.SPLITS).
"""
import json
import math
import os
import subprocess
import sys

CHILD = r'''
import importlib.util, json, os, random, sys, types
if importlib.util.find_spec("cupy") is None:    # draw() needs none of it: no GPU here
    sys.modules["cupy"] = types.ModuleType("cupy")
sys.path.insert(0, os.environ["JUDGE_DIR"])
sys.path.insert(0, os.environ["PROBES_DIR"])
import judge
from model_picks import canonical
from sgemm import planner
from sgemm.tune import DEVICE_MODELS
if os.environ.get("SPLITS"):
    lo, hi = map(int, os.environ["SPLITS"].split("-"))
    planner.SPLITS = tuple(sorted(set(planner.SPLITS) | set(range(lo, hi + 1))))
dev = DEVICE_MODELS["h100"]
cat, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r, out = random.Random(seed), []
while len(out) < n:
    p = judge.draw(r, cat)
    if judge.fits(p):
        c = planner.candidates(canonical(p), dev, os.environ.get("PREC") or "ieee")[0]
        out.append((c.predicted, p))
print("RESULT " + json.dumps(out))
'''


def predictions(tree: str, cat: str, n: int, seed: int) -> list:
    path, _, opt = tree.partition("@SPLITS=")
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.path.abspath(path), JUDGE_DIR=os.path.abspath(".judge"),
               PROBES_DIR=here, SPLITS=opt)
    # cwd outside the trees: `python -c` puts the working directory first on sys.path
    out = subprocess.run([sys.executable, "-c", CHILD, cat, str(n), str(seed)], env=env,
                         capture_output=True, text=True, cwd="/")
    if out.returncode:
        sys.exit(out.stderr[-3000:])
    return json.loads([l for l in out.stdout.splitlines() if l.startswith("RESULT ")][0][7:])


def main():
    a, b = sys.argv[1], sys.argv[2]
    cat = sys.argv[3] if len(sys.argv) > 3 else "deep-k"
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 300
    seed = int(sys.argv[5]) if len(sys.argv) > 5 else 7
    pa, pb = predictions(a, cat, n, seed), predictions(b, cat, n, seed)
    ra = [x[0] / y[0] for x, y in zip(pa, pb)]
    if os.environ.get("MOVED"):     # the problems whose prediction moved, for tree_ab.py
        moved = [x[1] for x, r in zip(pa, ra) if abs(r - 1) > 0.01]
        with open(os.environ["MOVED"], "w") as f:
            json.dump(moved, f)
    gm = math.exp(sum(map(math.log, ra)) / len(ra))
    print(f"{cat} n {n} seed {seed}: predicted {a} / {b} geomean {gm:.3f}; "
          f"B faster by > 1 % on {sum(x > 1.01 for x in ra)}, slower on {sum(x < 0.99 for x in ra)}")


if __name__ == "__main__":
    main()
