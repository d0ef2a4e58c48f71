"""Probe (CPU, no GPU): a tree_ab.py file split by whether the model's pick
(FP32) differs between its two trees, replayed here on the CPU (tree A
.base, tree B the working tree): per problem whose pick moved, both picks
and both trees' times (best round), then the geometric mean of A's time
over B's on the moved and on the unmoved problems (the latter: the
probe's noise, the plans being the same).

    python bench/probes/tree_ab_moved.py TREE_AB.json [TREE_A TREE_B]
"""
import json, math, subprocess, sys, os
d = json.load(open(sys.argv[1]))
probs = d["problems"]
rows = [[p["batch"], p["m"], p["n"], p["k"], int(p["ta"]), int(p["tb"])] for p in probs]
def picks(tree):
    code = ("import sys,json; sys.path.insert(0,'/work/main/bench/probes'); from model_picks import canonical; "
            "from sgemm import planner; from sgemm.tune import DEVICE_MODELS; dev=DEVICE_MODELS['h100']; "
            "rows=json.loads(sys.argv[1]); out=[]\n"
            "for bt,m,n,k,ta,tb in rows:\n"
            "    c=planner.candidates(canonical(dict(batch=bt,m=m,n=n,k=k,ta=bool(ta),tb=bool(tb))),dev,'ieee')[0]; q=c.params\n"
            "    out.append(f'{c.spec.name}:{q.BM}x{q.BN}:s{q.split_k}')\n"
            "print(json.dumps(out))")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    r = subprocess.run([sys.executable, "-c", code, json.dumps(rows)], env=env, capture_output=True, text=True, cwd="/")
    return json.loads(r.stdout.strip().splitlines()[-1])
ta, tb = (sys.argv[2], sys.argv[3]) if len(sys.argv) > 3 else (".base", ".")
pa, pb = picks(ta), picks(tb)
ra = {}
for tree, key in ((ta, ".base"), (tb, ".")):
    for rnd in d["runs"][key]:
        for i, x in enumerate(rnd):
            ra.setdefault((key, i), []).append(x["us"])
lg, lgs = [], []
for i, p in enumerate(probs):
    a, b = min(ra[(".base", i)]), min(ra[(".", i)])
    same = pa[i] == pb[i]
    (lgs if same else lg).append(math.log(a / b))
    if not same:
        print(f"{p['batch']}x{p['m']}x{p['n']}x{p['k']} {'NT'[p['ta']]}{'NT'[p['tb']]}: {pa[i]} {a:.1f} us -> {pb[i]} {b:.1f} us ({a/b:.2f}x) rounds {[round(x,1) for x in ra[('.base',i)]]} {[round(x,1) for x in ra[('.',i)]]}")
print(f"moved picks: {len(lg)}, base/new time geomean {math.exp(sum(lg)/len(lg)):.3f}; same pick: {len(lgs)}, {math.exp(sum(lgs)/len(lgs)):.3f} (noise)")
