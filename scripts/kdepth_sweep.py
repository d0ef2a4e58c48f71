#!/usr/bin/env python3
"""Where a small GEMM's time goes: one block's K depth against time.

    python scripts/kdepth_sweep.py [--mn 512] [--pick 0,2,3] [--out F.json]

For a fixed m = n, each config below runs with the per-slice K depth
16 ... 512 (a db_cluster config of CS blocks x KG k-groups gets K = depth *
CS * KG), timed under
CUDA graphs as bench/suite.py does (20 GEMMs per graph, median of 15
samples), checked against fp64 first.  A straight line through (depth, time)
splits a config's time into a fixed part (launch, prologue, the cluster's
reduction and C store) and a per-k-tile part; comparing cluster configs with
the direct rung-9 launch of the same tile shows what the cluster adds, and
comparing cluster sizes shows whether the clusters fit one wave.
cuBLAS (torch.matmul, TF32 off) on the same shapes, captured the same way.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("CUPY_TF32", "0")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

DEPTHS = (16, 64, 128, 256, 512)


def configs():
    from sgemm.kernels.params import TileParams as T
    t8x4 = T(BM=64, BN=64, BK=16, WM=32, WN=32, TM=8, TN=4, threads=128)
    t4x4 = T(BM=64, BN=64, BK=16, WM=32, WN=16, TM=4, TN=4, threads=256)
    m8x4 = T(BM=128, BN=64, BK=16, WM=32, WN=32, TM=8, TN=4, threads=256)
    big = T(BM=128, BN=128, BK=16, WM=64, WN=32, TM=8, TN=8, threads=256)
    s8x8 = T(BM=64, BN=64, BK=16, WM=32, WN=64, TM=8, TN=8, threads=64)
    k32 = t8x4.replace(BK=32)
    w8x8 = T(BM=64, BN=32, BK=16, WM=64, WN=32, TM=8, TN=8, threads=32)    # one-warp groups
    w16x8 = T(BM=64, BN=64, BK=8, WM=64, WN=64, TM=16, TN=8, threads=32)
    return [("double_buffer", t8x4), ("double_buffer", big),
            ("db_cluster", t8x4.replace(split_k=1)), ("db_cluster", t8x4.replace(split_k=2)),
            ("db_cluster", t8x4.replace(threads=256, split_k=2)),
            ("db_cluster", s8x8.replace(threads=128, split_k=1)),
            ("db_cluster", s8x8.replace(threads=128, split_k=2)),
            ("db_cluster", s8x8.replace(threads=256, split_k=1)),
            ("db_cluster", s8x8.replace(threads=256, split_k=2)),
            ("db_cluster", k32.replace(split_k=2)), ("db_cluster", k32.replace(threads=256, split_k=2)),
            ("db_cluster", m8x4.replace(split_k=2)), ("db_cluster", big.replace(split_k=4)),
            ("db_cluster", w8x8.replace(threads=128, split_k=1)),
            ("db_cluster", w8x8.replace(threads=256, split_k=1)),
            ("db_cluster", w16x8.replace(threads=128, split_k=2)),
            ("db_cluster", w16x8.replace(threads=256, split_k=2)),
            ("db_cluster", s8x8.replace(BK=8, threads=256, split_k=1)),    # "k4"
            ("db_cluster", s8x8.replace(BK=8, threads=256, split_k=2))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mn", type=int, default=512)
    ap.add_argument("--pick", default="", help="comma-separated indices into configs()")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "/tmp"),
                                                  "kdepth-sweep.json"))
    args = ap.parse_args()
    import cupy as cp
    import sgemm
    from sgemm.kernels import registry
    from sgemm.plan import direct_launches
    from suite import _graph_time, _torch_matmul   # noqa: E402

    n = args.mn
    rows, cub = [], {}
    todo = configs()
    if args.pick:
        todo = [todo[int(i)] for i in args.pick.split(",")]
    for kernel, p in todo:
        spec = registry.get(kernel)
        why = spec.can_implement(p)
        if why:
            print("skip", kernel, p, why)
            continue
        from sgemm.kernels.schemes import db_kgroups
        cs = p.split_k * db_kgroups(p) if kernel == "db_cluster" else 1   # K slices
        for depth in DEPTHS:
            k = depth * cs
            rs = cp.random.RandomState(k)
            A = rs.standard_normal((n, k), dtype=cp.float32)
            B = rs.standard_normal((k, n), dtype=cp.float32)
            C = cp.full((n, n), cp.nan, dtype=cp.float32)
            pl = sgemm.plan(A, B, C, kernel=kernel)
            pl.params, pl.launches = p, direct_launches(pl.problems, spec, p, pl.device)
            pl.execute()
            ref = A.astype(cp.float64) @ B.astype(cp.float64)
            err = float(cp.linalg.norm(C - ref) / cp.linalg.norm(ref))
            t = _graph_time(lambda h: pl.execute(stream=h))
            if k not in cub:
                enqueue, _ = _torch_matmul(A, B)
                cub[k] = _graph_time(enqueue)
            g = pl.launches[0].grid
            row = dict(kernel=kernel, params=p.as_dict(), depth=depth, k=k, err=err,
                       blocks=g[0] * g[1] * g[2], us=t * 1e3, cublas_us=cub[k] * 1e3)
            rows.append(row)
            print(f"{kernel:>13} {p.BM}x{p.BN} t{p.threads} {p.TM}x{p.TN} cs{cs} "
                  f"blocks {row['blocks']:4d} depth {depth:4d} k {k:5d} err {err:.1e} "
                  f"{row['us']:7.2f} us  cuBLAS {row['cublas_us']:7.2f}", flush=True)
    env = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "date": time.strftime("%Y-%m-%d %H:%M:%S"), "cupy": cp.__version__, "mn": n,
           "SGEMM_DB_RESERVE": os.environ.get("SGEMM_DB_RESERVE", "1"),
           "SGEMM_PDL": os.environ.get("SGEMM_PDL", "1")}
    Path(args.out).write_text(json.dumps({"env": env, "rows": rows}, indent=1))
    print("==== fit: time = fixed + per_ktile * depth/16 (least squares over depths)")
    import numpy as np
    keys = []
    for r in rows:
        key = (r["kernel"], tuple(sorted(r["params"].items())))
        if key not in keys:
            keys.append(key)
    for key in keys:
        rs_ = [r for r in rows if (r["kernel"], tuple(sorted(r["params"].items()))) == key]
        x = np.array([r["depth"] / 16 for r in rs_])
        y = np.array([r["us"] for r in rs_])
        slope, icept = np.polyfit(x, y, 1)
        p = dict(key[1])
        print(f"{key[0]:>13} {p['BM']}x{p['BN']} t{p['threads']} {p['TM']}x{p['TN']} "
              f"cs{p['split_k']} blocks {rs_[0]['blocks']:4d}: fixed {icept:6.2f} us, "
              f"{slope:6.3f} us per k-tile")
    return 0


if __name__ == "__main__":
    sys.exit(main())
