"""Probe: two source trees on the same problems, in one process each,
alternating, each against cuBLAS in its own run.  Problems are drawn from
the judge's distribution (the draw() of ../shared/tools/judge.py, copied
in .judge/) with this probe's own seed, never a judge run's; the measured
choice is off (SGEMM_AUTOTUNE=0), so both trees run the model's plan and
differ only in what changed.  A diagnosis for a change, not a scorecard.

    OUT=dir python bench/probes/tree_ab.py TREE_A TREE_B [CATEGORY N SEED [ROUNDS]]

A tree may carry kernel macros: PATH@NAME=VALUE,NAME=VALUE ($SGEMM_DEFINES).
PROBS='[{"m":..,"n":..,"k":..,"ta":..,"tb":..,"batch":..}, ...]' replaces the
draw; SGEMM_AUTOTUNE=1 in the environment keeps the measured choice on.

Writes $OUT/tree-ab.json: per problem, each tree's us, cuBLAS's us in that
process and the ratio, every round.  Times are the judge's timed() (the
files of 2026-11-26 were made with a median of 7 batches of 10 calls).
"""
import json
import os
import random
import subprocess
import sys

CHILD = r'''
import json, os, random, sys
sys.path.insert(0, os.environ["JUDGE_DIR"])
import cupy as cp
import judge
import sgemm
probs = json.loads(sys.argv[1])
timed = lambda fn: judge.timed(fn) * 1e3      # the judge's own timing, in us
out = []
for i, p in enumerate(probs):
    a, b, A, B, c = judge.operands(p, 1000 + i)
    ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64))
    cub = timed(lambda: cp.matmul(A, B, out=c))
    if p["batch"] > 1:
        f = lambda: sgemm.gemm_batched(a, b, c, trans_a=p["ta"], trans_b=p["tb"])
    else:
        f = lambda: sgemm.gemm(a, b, c, trans_a=p["ta"], trans_b=p["tb"])
    c.fill(cp.nan); f(); cp.cuda.Device().synchronize()
    err = float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref))
    ours = timed(f)
    out.append(dict(p, cublas_us=cub, us=ours, ratio=cub / ours, err=err))
    del a, b, A, B, c, ref
    cp.get_default_memory_pool().free_all_blocks()
print("RESULT " + json.dumps(out))
'''


def main():
    tree_a, tree_b = sys.argv[1], sys.argv[2]
    cat = sys.argv[3] if len(sys.argv) > 3 else "deep-k"
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 24
    seed = int(sys.argv[5]) if len(sys.argv) > 5 else 5150
    rounds = int(sys.argv[6]) if len(sys.argv) > 6 else 2
    judge_dir = os.path.abspath(".judge")
    sys.path.insert(0, judge_dir)
    import judge
    r = random.Random(seed)
    probs = json.loads(os.environ["PROBS"]) if os.environ.get("PROBS") else []
    while len(probs) < n and not os.environ.get("PROBS"):
        p = judge.draw(r, cat)
        if judge.fits(p):
            probs.append(p)
    res = {tree_a: [], tree_b: []}
    for rd in range(rounds):
        for tree in ((tree_a, tree_b) if rd % 2 == 0 else (tree_b, tree_a)):
            path, _, defines = tree.partition("@")
            env = dict(os.environ, PYTHONPATH=os.path.abspath(path), JUDGE_DIR=judge_dir,
                       CUPY_TF32="0")
            if defines:             # kernel experiment macros: compiled by NVRTC, not bundled
                env["SGEMM_DEFINES"] = defines
            env.setdefault("SGEMM_AUTOTUNE", "0")
            if env["SGEMM_AUTOTUNE"] != "0":    # measured choices are saved: one dir per run
                env["SGEMM_CACHE_DIR"] = f"/tmp/tree-ab-cache-{rd}-{abs(hash(tree))}"
            # cwd outside both trees: `python -c` puts the working directory
            # first on sys.path, ahead of PYTHONPATH
            out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(probs)], env=env,
                                 capture_output=True, text=True, timeout=560, cwd="/")
            line = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
            if not line:
                print(out.stdout[-2000:], out.stderr[-3000:])
                sys.exit(1)
            res[tree].append(json.loads(line[0][7:]))
    import math
    print(f"{'problem':30s} " + "  ".join(f"{t[-12:]:>12s}" for t in res))
    logs = {t: [] for t in res}
    for i, p in enumerate(probs):
        cells = []
        for t in res:
            rs = [run[i]["ratio"] for run in res[t]]
            best = max(rs)
            logs[t].append(math.log(best))
            cells.append(f"{best:12.3f}")
        print(f"{p['m']}x{p['n']}x{p['k']} {'T' if p['ta'] else 'N'}{'T' if p['tb'] else 'N'}"
              f" b{p['batch']}".ljust(30) + "  ".join(cells))
    print("geomean (best round per problem): " + "  ".join(
        f"{t}: {math.exp(sum(v) / len(v)):.3f}" for t, v in logs.items()))
    json.dump(dict(probe="tree_ab", category=cat, seed=seed, problems=probs, runs=res),
              open(os.path.join(os.environ.get("OUT", "/tmp"), "tree-ab.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
