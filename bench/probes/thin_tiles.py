"""Probe: rung 9 tiles 32 wide along a side of 33-96 (a batched attention
PV with head dim 80, batched products of the judge's distribution), forced
beside rung 9's registered tiles, the plan's best candidates and cuBLAS.
Not part of the package.

Why: 64 x 2048x80x2048 NN (attention PV, head dim 80) ran at 0.81 of
cuBLAS in the scorecard's judges.  The planner's tiles cover the 80-wide
side with a 128x64 tile (80 of 128 rows used) or the 32x256 one (96 of
96; 256 threads, 75 KB of shared memory); cuBLAS covers it with three
32-wide tiles of four warps (`..._tilesize128x32x8_stage3_warpsize2x2x1`,
118 registers: bench/results/cublas-kernels-h100-2026-11-27.json).  Rung 9
compiles a 32x128 tile of four warps (4x8 a thread) in 107-121 registers
at BK 16 (four blocks an SM), 126-149 at BK 32, with no spills.  Each
timing is checked against fp64 on a NaN-poisoned output first.

    DRAW=batched:N:SEED OUT=dir python bench/probes/thin_tiles.py
"""
import os
import sys

os.environ.setdefault("CUPY_TF32", "0")
from sgemm import planner  # noqa: E402
from sgemm.kernels import ladder  # noqa: E402
from sgemm.kernels.params import TileParams  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _draw import judge_draws  # noqa: E402
from _gpu import plan_row, run_rows, time_forced  # noqa: E402
from forced_cands import label  # noqa: E402

THIN = {"t32x128x16": TileParams(BM=32, BN=128, BK=16, WM=32, WN=32, TM=4, TN=8, threads=128),
        "t32x128x32": TileParams(BM=32, BN=128, BK=32, WM=32, WN=32, TM=4, TN=8, threads=128)}
FIXED = [(64, 2048, 80, 2048), (32, 2048, 80, 2048), (16, 1024, 80, 1024), (96, 512, 80, 512),
         (12, 197, 80, 197), (16, 2048, 64, 2048)]     # attention PV: (B*H, T, dh, T), NN


def problems():
    out = [dict(cat="pv", batch=b, m=m, n=n, k=k, ta=False, tb=False) for b, m, n, k in FIXED]
    cat, count, seed = os.environ.get("DRAW", "batched:10:9191").split(":")
    return out + judge_draws(cat, int(count), int(seed),
                             lambda p: p["batch"] > 1 and 33 <= min(p["m"], p["n"]) <= 96)


def row(dev, p) -> dict:
    r = plan_row(p)
    prob = r["plan"].problems[0]
    db = ladder.DOUBLE_BUFFER
    tried = [(label(x), x.spec, x.params, None) for x in planner.candidates(prob, dev, "ieee")[:3]]
    tried += [(f"db:{name}", db, q, None) for name, q in db.configs.items()]
    for name, q in THIN.items():     # the 32-wide side along whichever side is narrow
        tried.append((name, db, q, None))
        tried.append((name + "T", db, q.replace(BM=q.BN, BN=q.BM, WM=q.WN, WN=q.WM, TM=q.TN,
                                                 TN=q.TM), None))
    return dict(p, canonical=(prob.m, prob.n), cublas_us=r["cub"], auto_us=r["auto"],
                plan=repr(r["plan"])[:160], cands=time_forced(r, tried, dev))


def line(p, rec) -> str:
    ok = [c for c in rec["cands"] if "us" in c and c["err"] <= 2]
    thin = min((c for c in ok if c["c"].startswith("t32")), key=lambda c: c["us"], default=None)
    rest = min((c for c in ok if not c["c"].startswith("t32")), key=lambda c: c["us"],
               default=None)
    f = lambda c: f"{c['c']} {c['us']}" if c else "-"     # noqa: E731
    return (f"{p['batch']}x{p['m']}x{p['n']}x{p['k']} {'T' if p['ta'] else 'N'}"
            f"{'T' if p['tb'] else 'N'} cub {rec['cublas_us']:.1f} auto {rec['auto_us']:.1f} "
            f"best {f(rest)} thin {f(thin)}")


def main():
    run_rows(problems(), row, line, "thin-tiles.json")


if __name__ == "__main__":
    main()
