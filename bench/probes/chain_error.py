"""Probe (CPU, no GPU): the error of the model's plans against their
longest accumulation chain, on committed judge files.  For each row with
K >= 1024, the model's H100 pick is replayed (the judges' plans where the
measured choice kept the model's pick) and its K slice read:
FFMA plans (rung 9, 13 and the tile kernel) give err / sqrt(slice) and the
rows over 1e-6; tensor-core tf32x3 plans with slices >= 3000 their error
and its ratio to cuBLAS's.  --acc N replays with planner.ACC_SLICE = N
(the files of a tree with another FFMA limit).

    python bench/probes/chain_error.py [--acc N] JUDGE.json [JUDGE.json ...]
"""
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_picks import canonical  # noqa: E402

from sgemm import planner  # noqa: E402
from sgemm.tune import DEVICE_MODELS  # noqa: E402


def main(files) -> None:
    dev = DEVICE_MODELS["h100"]
    ffma, over, tc = [], [], []
    for f in files:
        for r in json.load(open(f))["rows"]:
            if r["k"] < 1024:
                continue
            prob = canonical(r)
            c = planner.candidates(prob, dev, "ieee")[0]
            if "err" in r["ieee"] and c.spec.name in ("double_buffer", "kmajor", "tile"):
                ks = dict(c.parts)["kslice"]
                ffma.append(r["ieee"]["err"] / math.sqrt(ks))
                if r["ieee"]["err"] > 1e-6:
                    over.append((ks, r["ieee"]["err"], r["ieee"]["err_vs_cublas"]))
            c = planner.candidates(prob, dev, "tf32x3")[0]
            ks = dict(c.parts)["kslice"]
            if "err" in r["tf32x3"] and c.spec.precision == "tf32x3" and ks >= 3000:
                tc.append((r["tf32x3"]["err"], r["tf32x3"]["err_vs_cublas"]))
    ffma.sort()
    print(f"{len(files)} judges; FFMA plans, K >= 1024: {len(ffma)} rows, err / sqrt(K slice) "
          f"median {ffma[len(ffma) // 2]:.2e}, p90 {ffma[int(0.9 * len(ffma))]:.2e}")
    for ks, err, x in sorted(over):
        print(f"  over 1e-6: slice {ks}, err {err:.3e}, {x:.2f}x cuBLAS's")
    if tc:
        print(f"tf32x3 tensor-core plans, slices >= 3000: {len(tc)} rows, err "
              f"{min(e for e, _ in tc):.2e}-{max(e for e, _ in tc):.2e}, "
              f"{min(x for _, x in tc):.2f}-{max(x for _, x in tc):.2f}x cuBLAS's")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--acc"]:
        planner.ACC_SLICE = int(args[1])
        args = args[2:]
    main(args)
