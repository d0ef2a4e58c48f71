"""Probe (CPU, no GPU): every candidate the planner weighs (kernel, params,
pack, prediction and its parts), both precisions, on the H100 and H200
device models, for problems of the judge's distribution (this probe's own
seed), written as JSON for the tree at $SGEMM_ROOT; with --diff, whether
two such files (two trees) agree.  For changes meant to leave every plan
and prediction as it was (a faster planner).

    SGEMM_ROOT=TREE python bench/probes/planner_same.py OUT.json N SEED
    python bench/probes/planner_same.py --diff OLD.json NEW.json
"""
import json
import os
import random
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))


def dump(out: str, n: int, seed: int) -> None:
    root = os.environ.get("SGEMM_ROOT") or os.path.dirname(os.path.dirname(HERE))
    sys.path[:0] = [root, os.path.join(os.path.dirname(os.path.dirname(HERE)), ".judge"), HERE]
    sys.modules.setdefault("cupy", types.ModuleType("cupy"))   # draw() needs none of it
    import judge
    from model_picks import canonical
    from sgemm import planner
    from sgemm.tune import DEVICE_MODELS
    r, probs = random.Random(seed), []
    names, weights = zip(*judge.CATEGORIES)
    while len(probs) < n:
        p = judge.draw(r, r.choices(names, weights)[0])
        if judge.fits(p):
            probs.append(p)
    res, t0 = {}, time.perf_counter()
    for i, p in enumerate(probs):
        for dev in ("h100", "h200"):
            for prec in ("ieee", "tf32x3"):
                cs = planner.candidates(canonical(p), DEVICE_MODELS[dev], prec)
                res[f"{i}:{dev}:{prec}"] = [
                    [c.spec.name, sorted(c.params.as_dict().items()), c.pack, c.predicted,
                     sorted((k, v) for k, v in c.parts)] for c in cs]
    print(f"{root}: {n} problems x 2 devices x 2 precisions in {time.perf_counter() - t0:.1f} s")
    with open(out, "w") as f:
        json.dump(res, f)


def diff(a: str, b: str) -> None:
    old, new = (json.load(open(x)) for x in (a, b))
    bad = [k for k in old if old[k] != new.get(k)]
    picks = [k for k in old if old[k][:1] != new.get(k, [])[:1]]
    print(f"{len(bad)} of {len(old)} candidate lists differ; {len(picks)} first picks differ")
    for k in bad[:5]:
        print(" ", k, len(old[k]), "->", len(new.get(k, [])))
    for k in picks:         # which plan each moved pick was, and is (kernel, params)
        print(" ", k, old[k][0][:2], "->", new.get(k, [[None]])[0][:2])


if __name__ == "__main__":
    if sys.argv[1] == "--diff":
        diff(sys.argv[2], sys.argv[3])
    else:
        dump(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
