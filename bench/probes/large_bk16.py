"""Probe: rung 9's 256x128 tile with BK = 16 (a config not registered)
against the registered BK = 8 ("large"), both forced, on large ML layers of
the judge's distribution (own seed 7878: 12 problems of at least 40
GFLOP), at split 1 and at the model's split.  Not part of the package.

Why: at 128x128, BK 16 ran 3-5 % faster than BK 8 in rung 9 (half the
barriers and register-staged stores per k; docs/notes/ffma-fast.md), and
the large layers, where rung 9's 256x128 tile runs, are the ml-layer
category's bottom.  The 16 k a tile compile to 225-239 registers on sm_90a,
no spills.  Each candidate is checked against fp64 on a NaN-poisoned C
before it is timed (_gpu.checked_time).

    OUT=dir python bench/probes/large_bk16.py       # from the checkout root

Writes $OUT/large16.json: per problem, cuBLAS, the model's pick, and each
(BK, split) as (us, relative error).
"""
import json
import os
import sys

os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp  # noqa: E402

from sgemm import planner, tune  # noqa: E402
from sgemm.kernels.ladder import DOUBLE_BUFFER as DB  # noqa: E402
from sgemm.plan import Plan  # noqa: E402
from sgemm.runtime import device as devmod  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _draw import judge_draws  # noqa: E402
from _gpu import checked_time, tfn  # noqa: E402
from cublas_kernels import operands  # noqa: E402


def layers(seed: int = 7878, n: int = 12, min_flops: float = 4e10) -> list:
    """Large ML layers of the judge's distribution."""
    return judge_draws("ml-layer", n, seed, lambda p: 2 * p["m"] * p["n"] * p["k"] >= min_flops)


def main() -> None:
    dev = devmod.info(0)
    l8 = DB.configs["large"]
    l16 = l8.replace(BK=16)
    out = []
    for p in layers():
        m, n, k, ta, tb = p["m"], p["n"], p["k"], p["ta"], p["tb"]
        a, bb, A, B = operands(cp, 1, m, n, k, ta, tb)
        C = cp.empty((m, n), cp.float32)
        ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64))
        nr = float(cp.linalg.norm(ref))
        cub = tfn(lambda: cp.matmul(A, B, out=C), reps=3)
        probs = Plan(a, bb, C, trans_a=ta, trans_b=tb).problems
        c0 = planner.candidates(probs[0], dev, "ieee")[0]
        q0 = c0.params
        row = dict(p, cublas_us=cub, t={},
                   pick=f"{c0.spec.name}:{q0.BM}x{q0.BN}x{q0.BK}:s{q0.split_k}")
        for s in sorted({1, q0.split_k}):
            for name, q in (("bk8", l8), ("bk16", l16)):
                try:
                    err, t = checked_time(tune.launches_for(DB, q.replace(split_k=s), probs, dev),
                                          C, ref, nr)
                    row["t"][f"{name}:s{s}"] = (round(t, 1), round(err, 9))
                except Exception as ex:  # noqa: BLE001 -- recorded, the probe goes on
                    row["t"][f"{name}:s{s}"] = str(ex)[:80]
        print(f"{m}x{n}x{k} {'T' if ta else 'N'}{'T' if tb else 'N'} cub {cub:.0f} pick "
              f"{row['pick']}", row["t"], flush=True)
        out.append(row)
        del a, bb, A, B, C, ref
        cp.get_default_memory_pool().free_all_blocks()
    with open(os.path.join(os.environ.get("OUT", "."), "large16.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
