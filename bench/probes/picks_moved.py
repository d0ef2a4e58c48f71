"""Probe (CPU, no GPU): problems of the judge's distribution (its draw(),
copied in .judge/; this probe's own seed) whose model pick differs between
two source trees (one process a tree), in either precision, on the H200's
device model: the list bench/probes/tree_ab.py times (PROBS=...), so an
A/B of a planning change measures the problems it changes.

    python bench/probes/picks_moved.py TREE_A TREE_B N SEED [OUT.json]
    python bench/probes/picks_moved.py TREE_A TREE_B FILE.json [OUT.json]   # its problems
    python bench/probes/picks_moved.py TREE_A TREE_B bench/shapes/public.txt  # the suite

Prints each moved problem with both picks and the count; OUT.json gets the
moved problems (judge dicts).  FILE.json: a list of judge dicts or a
tree_ab.py file (its ``problems``).
"""
import json
import os
import subprocess
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CHILD = r'''
import json, sys
sys.path[:0] = [sys.argv[2], sys.argv[3]]
from model_picks import canonical, label
from sgemm import planner
from sgemm.tune import DEVICE_MODELS
dev = DEVICE_MODELS["h200"]
print(json.dumps([[label(planner.candidates(canonical(p), dev, prec)[0])
                   for prec in ("ieee", "tf32x3")] for p in json.loads(sys.argv[1])]))
'''


def picks(tree: str, problems: list) -> list:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(problems),
                          os.path.abspath(tree), str(HERE)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    tree_a, tree_b = sys.argv[1], sys.argv[2]
    if sys.argv[3].endswith(".txt"):          # a shape suite: M N K [tA tB] [batch]
        problems, seed = [], sys.argv[3]
        for line in Path(sys.argv[3]).read_text().splitlines():
            f = line.split("#")[0].split()
            if f:
                problems.append(dict(cat="suite", m=int(f[0]), n=int(f[1]), k=int(f[2]),
                                     ta=f[3:4] == ["T"], tb=f[4:5] == ["T"],
                                     batch=int(f[5]) if len(f) > 5 else 1))
    elif sys.argv[3].endswith(".json"):
        doc, seed = json.loads(Path(sys.argv[3]).read_text()), sys.argv[3]
        problems = doc["problems"] if isinstance(doc, dict) else doc
    else:
        n, seed = int(sys.argv[3]), int(sys.argv[4])
        sys.path.insert(0, str(ROOT / ".judge"))
        sys.modules.setdefault("cupy", types.ModuleType("cupy"))   # draw() needs none of it
        import judge
        problems = judge.sample(seed, n)
    a, b = picks(tree_a, problems), picks(tree_b, problems)
    moved = [p for p, x, y in zip(problems, a, b) if x != y]
    for p, x, y in zip(problems, a, b):
        if x != y:
            print(p["cat"], p["batch"], p["m"], p["n"], p["k"], "NT"[p["ta"]] + "NT"[p["tb"]],
                  x, "->", y)
    print(f"{len(moved)} of {len(problems)} problems moved ({seed})")
    out = sys.argv[4 if sys.argv[3].endswith((".json", ".txt")) else 5:][:1]
    if out:
        Path(out[0]).write_text(json.dumps(moved))


if __name__ == "__main__":
    main()
