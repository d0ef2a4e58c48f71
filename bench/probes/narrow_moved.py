"""Probe (CPU, no GPU): batched problems of the judge's distribution (its
draw(), copied in .judge/; this probe's own seed) whose model pick is the
narrow kernel (43_narrow.cu), in either precision, with the best other
candidate's prediction: the list tree_ab.py times (PROBS=...).  The pick
moves only where narrow is weighed, so these are the plans it changes.

    python bench/probes/narrow_moved.py DRAWS SEED OUT.json
"""
import json, random, sys, types
sys.modules.setdefault("cupy", types.ModuleType("cupy"))
sys.path.insert(0, ".judge"); sys.path.insert(0, "bench/probes")
import judge
from model_picks import canonical
from sgemm import planner
from sgemm.tune import DEVICE_MODELS
dev = DEVICE_MODELS["h100"]
r, moved, n = random.Random(int(sys.argv[2])), [], 0
N = int(sys.argv[1])
while n < N:
    cat = r.choices([c for c, _ in judge.CATEGORIES], [w for _, w in judge.CATEGORIES])[0]
    p = judge.draw(r, cat)
    if not judge.fits(p):
        continue
    n += 1
    if p["batch"] == 1: continue
    for prec in ("ieee", "tf32x3"):
        c = planner.candidates(canonical(p), dev, prec)
        if c[0].spec.name == "narrow":
            old = next(x for x in c if x.spec.name != "narrow")
            moved.append(dict(p, prec=prec, pred_new=c[0].predicted*1e6, pred_old=old.predicted*1e6, old=old.spec.name))
print(n, "draws", len(moved), "moved (problem x precision)")
uniq = {json.dumps({k: p[k] for k in ("m","n","k","ta","tb","batch")}) for p in moved}
print(len(uniq), "problems")
json.dump([json.loads(u) for u in sorted(uniq)], open(sys.argv[3], "w"))
import math
print("predicted old/new geomean", math.exp(sum(math.log(p["pred_old"]/p["pred_new"]) for p in moved)/max(1,len(moved))))
