"""Probe: tiles forced on problems of the judge's distribution (this probe's
own seeds), beside rung 9's registered tiles at the same K splits, the
planner's three best candidates and cuBLAS.  Not part of the package.  Each
timing is checked against fp64 on a NaN-poisoned output first
(_gpu.checked_time); every operand is read as it lies (pack=0).

SET picks the trial tiles:
* async (default): rung 10, the cp.async pipeline.  Most deep-K draws have
  an operand whose rows are not 16-byte aligned; rung 9 then prefetches
  each element through a register with a 4-byte load, where cuBLAS runs
  4-byte cp.async kernels (`cutlass_80_simt_sgemm_*_align1`, 4-5 stages,
  128 threads, up to four blocks an SM:
  bench/results/cublas-kernels-h100-2026-11-27.json).  With
  SGEMM_DEFINES=SGEMM_ASYNC_MINB=4 its 128-thread tiles hold four blocks an SM.
* square: rung 9 at 128x128 with four warps (SQUARE), cuBLAS's deep-K shape.
* none: no trial tiles (rung 9's and the plan's only), e.g. to compare an
  SGEMM_DEFINES switch of 09_double_buffer.cu between two runs.

    DRAW=CAT:N:SEED[:MIN_OUTPUTS][,...] [SET=...] [TAG=...] OUT=dir python \
        bench/probes/forced_tiles.py
"""
import os
import sys

os.environ.setdefault("CUPY_TF32", "0")
from sgemm import cost, planner  # noqa: E402
from sgemm.kernels import ladder  # noqa: E402
from sgemm.kernels.params import TileParams  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _draw import judge_draws  # noqa: E402
from _gpu import plan_row, run_rows, time_forced  # noqa: E402
from forced_cands import label  # noqa: E402

ASYNC = {  # rung 10 tiles: cuBLAS's align1 shapes and rung 9's rect / rect_t
    "a128x64x8s5": TileParams(BM=128, BN=64, BK=8, WM=32, WN=64, TM=8, TN=8, threads=128,
                              stages=5),
    "a64x128x8s5": TileParams(BM=64, BN=128, BK=8, WM=64, WN=32, TM=8, TN=8, threads=128,
                              stages=5),
    "a128x64x16s3": TileParams(BM=128, BN=64, BK=16, WM=32, WN=64, TM=8, TN=8, threads=128,
                               stages=3),
    "a128x128x8s4": TileParams(BM=128, BN=128, BK=8, WM=64, WN=64, TM=8, TN=16, threads=128,
                               stages=4),
    "a256x128x8s4": TileParams(BM=256, BN=128, BK=8, WM=128, WN=32, TM=16, TN=8, threads=256,
                               stages=4),
}
# SET=square: rung 9 itself at 128x128 with four warps and 128 accumulators a
# thread, two blocks an SM (213-255 registers, no spills): the shape of
# cuBLAS's deep-K kernels (128 threads, 8x16 a thread, 2 warps a scheduler)
SQUARE = {
    "q128x128x8w128x32": TileParams(BM=128, BN=128, BK=8, WM=128, WN=32, TM=16, TN=8,
                                    threads=128),
    "q128x128x8w32x128": TileParams(BM=128, BN=128, BK=8, WM=32, WN=128, TM=8, TN=16,
                                    threads=128),
    "q128x128x8w64x64": TileParams(BM=128, BN=128, BK=8, WM=64, WN=64, TM=8, TN=16,
                                   threads=128),
    "q128x128x16w128x32": TileParams(BM=128, BN=128, BK=16, WM=128, WN=32, TM=16, TN=8,
                                     threads=128),
}
RUNG9 = ("rect", "rect_t", "large", "tall64")


def problems():
    out = []
    for draw in os.environ.get("DRAW", "deep-k:14:5151").split(","):
        cat, count, seed, *least = draw.split(":")     # least: fewest outputs m*n
        lo = int(least[0]) if least else 0
        out += judge_draws(cat, int(count), int(seed),
                           lambda p: p["batch"] == 1 and p["m"] * p["n"] >= lo)
    return out


def accurate_splits(prob, q, dev, n=2) -> list:
    """The n smallest K splits the planner would weigh for tile q that keep
    slices within the FFMA accuracy limit."""
    acc = planner.acc_slice(prob, dev, "ieee")
    return [s for s in planner._splits(prob, q, dev) if -(-prob.k // s) <= acc][:n]


def row(dev, p) -> dict:
    r = plan_row(p)
    prob = r["plan"].problems[0]
    tried = [(label(c), c.spec, c.params, round(c.predicted * 1e6, 1))
             for c in planner.candidates(prob, dev, "ieee")[:3]]
    db, asy = ladder.DOUBLE_BUFFER, ladder.ASYNC_PIPELINE
    # pack=0: the kernel reads the operands as they lie (no aligned copies first)
    for name in RUNG9:
        q = db.configs[name]
        for s in accurate_splits(prob, q, dev):
            pred = cost.predict(db, q.replace(split_k=s), prob, dev, cost.calibration(dev))
            tried.append((f"db:{name}:s{s}", db, q.replace(split_k=s, pack=0),
                          round(pred["total"] * 1e6, 1)))
    trial = os.environ.get("SET", "async")      # "none": rung 9's tiles and the plan's only
    spec = {"async": asy, "square": db}.get(trial)
    for name, q in {"async": ASYNC, "square": SQUARE}.get(trial, {}).items():
        for s in accurate_splits(prob, q, dev):
            tried.append((f"{name}:s{s}", spec, q.replace(split_k=s, pack=0), None))
    return dict(p, aligned=prob.aligned, cublas_us=r["cub"], auto_us=r["auto"],
                plan=repr(r["plan"])[:160], cands=time_forced(r, tried, dev))


def line(p, rec) -> str:
    ok = [c for c in rec["cands"] if "us" in c and c["err"] <= 2]
    best = {}
    for c in ok:
        fam = "new" if c["c"][0] in "aq" and not c["c"].startswith("async") else "db"
        if fam not in best or c["us"] < best[fam]["us"]:
            best[fam] = c
    txt = " ".join(f"{f} {b['c']} {b['us']}" for f, b in sorted(best.items()))
    return (f"{p['m']}x{p['n']}x{p['k']} {'T' if p['ta'] else 'N'}{'T' if p['tb'] else 'N'} "
            f"al={int(rec['aligned'])} cub {rec['cublas_us']:.1f} auto {rec['auto_us']:.1f} {txt}")


def main():
    tag = os.environ.get("TAG", "")
    run_rows(problems(), row, line, f"forced-tiles{tag}.json")


if __name__ == "__main__":
    main()
