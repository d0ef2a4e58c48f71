"""Probe, CPU only: the cost model checked out of sample on judge runs.

Each judge row ran one plan (the one the given ``--ran`` calibration
chooses, which must be the calibration the judge ran under).  That plan is
predicted under each calibration named and compared with the time the judge
measured: mean and rms of log(measured / predicted) per precision, and per
tile and layout.  Rows under 30 us are left out (host-bound: the judge's
timing, not the kernel's).

    python bench/probes/model_oos.py --ran OLD.json --judges J1.json J2.json ... \\
        -- CAL1.json CAL2.json
    (for the 2026-11-25 refit: --ran the calibration of commit 5f07487, the
    judges of that commit, bench/results/judge-h100-2026-11-25-*.json in it)
"""
import argparse
import collections
import json
import math

from sgemm import cost, planner
from sgemm.problem import Problem
from sgemm.tune import DEVICE_MODELS

H100 = DEVICE_MODELS["h100"]
BASE = 1 << 30


def row_major(r: dict) -> Problem:
    """The judge's row-major C = op(A) op(B) as the column-major C^T."""
    m, n, k, ta, tb, bt = r["m"], r["n"], r["k"], r["ta"], r["tb"], r["batch"]
    return Problem(m=n, n=m, k=k, ta=tb, tb=ta, a=2 * BASE, lda=(k if tb else n), b=BASE,
                   ldb=(m if ta else k), c=3 * BASE, ldc=n, batch=bt, stride_a=n * k,
                   stride_b=m * k, stride_c=m * n)


def load(path: str) -> cost.Calibration:
    return cost.Calibration.from_json(json.load(open(path)), path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ran", required=True)
    ap.add_argument("--judges", nargs="+", required=True)
    ap.add_argument("cals", nargs="+")
    args = ap.parse_args()
    ran, cals = load(args.ran), [load(p) for p in args.cals]
    for prec in ("ieee", "tf32x3"):
        errs = [[] for _ in cals]
        fam = collections.defaultdict(lambda: [[] for _ in cals])
        for f in args.judges:
            for r in json.load(open(f))["rows"]:
                p = row_major(r)
                c = planner.candidates(p, H100, prec, cal=ran)[0]
                t = r[prec]["ms"] * 1e-3
                if t < 30e-6:
                    continue
                key = f"{c.spec.name}:{c.params.BM}x{c.params.BN} ta{int(p.ta)}tb{int(p.tb)}"
                for i, cx in enumerate(cals):
                    e = math.log(t / cost.predict(c.spec, c.params, p, H100, cx)["total"])
                    errs[i].append(e)
                    fam[key][i].append(e)
        print(prec, "rows", len(errs[0]), " | ".join(
            f"rms {math.sqrt(sum(e * e for e in x) / len(x)):.3f} mean {sum(x) / len(x):+.3f}"
            for x in errs))
        for k, v in sorted(fam.items()):
            if len(v[0]) >= 4:
                print(f"   {k:40s} n={len(v[0]):3d}  measured/predicted " +
                      " ".join(f"{math.exp(sum(x) / len(x)):.2f}" for x in v))


if __name__ == "__main__":
    main()
