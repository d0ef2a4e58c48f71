"""Probe (CPU, no GPU): the cost model's pick on an H100 for every row and
precision of committed judge files, as the judge calls them (contiguous
C-order operands), written as JSON; with --diff, the rows where two such
files (e.g. from two commits' trees) differ.

    python bench/probes/model_picks.py OUT.json JUDGE.json [JUDGE.json ...]
    python bench/probes/model_picks.py --diff OLD.json NEW.json
"""
import json
import sys

from sgemm import planner
from sgemm.problem import Problem
from sgemm.tune import DEVICE_MODELS


def canonical(r) -> Problem:
    """Row-major C (m x n) = op(a) op(b) as the column-major C^T = op(b)^T op(a)^T."""
    m, n, k, ta, tb, bt = r["m"], r["n"], r["k"], r["ta"], r["tb"], r["batch"]
    lda, ldb = (k if tb else n), (m if ta else k)
    base = 1 << 30
    return Problem(m=n, n=m, k=k, ta=tb, tb=ta, a=base, lda=lda, b=2 * base, ldb=ldb,
                   c=3 * base, ldc=n, batch=bt,
                   stride_a=lda * (n if tb else k) if bt > 1 else 0,
                   stride_b=ldb * (k if ta else m) if bt > 1 else 0,
                   stride_c=n * m if bt > 1 else 0)


def label(c) -> str:
    """A candidate as kernel:BMxBNxBK:threads:sSPLIT[:pack]."""
    q = c.params
    return (f"{c.spec.name}:{q.BM}x{q.BN}x{q.BK}:{q.threads}:s{q.split_k}"
            f"{':pack' if c.pack else ''}")


def picks(files) -> dict:
    dev, out = DEVICE_MODELS["h100"], {}
    for f in files:
        for i, r in enumerate(json.load(open(f))["rows"]):
            for prec in ("ieee", "tf32x3"):
                c = planner.candidates(canonical(r), dev, prec)[0]
                out[f"{f.rsplit('/', 1)[-1]}:{i}:{prec}"] = label(c)
    return out


if __name__ == "__main__":
    if sys.argv[1] == "--diff":
        old, new = (json.load(open(f)) for f in sys.argv[2:4])
        diff = [k for k in old if old[k] != new.get(k)]
        for k in diff:
            print(f"{k}: {old[k]} -> {new.get(k)}")
        print(f"{len(diff)} of {len(old)} picks differ")
    else:
        json.dump(picks(sys.argv[2:]), open(sys.argv[1], "w"), indent=0)
