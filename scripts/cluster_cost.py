#!/usr/bin/env python3
"""What a thread-block cluster costs a small GEMM, and how many fit at once.

    python scripts/cluster_cost.py [--mn 512] [--out F.json]
    ncu ... python scripts/cluster_cost.py --once      (what a profiler needs)

Part 1 (occupancy): for db_cluster's tiles at each cluster size 1..8, the
driver's count of clusters that can run at once (cuOccupancyMaxActiveClusters
through cuda.core), against SMs / cluster size: where it is smaller, tiles x
blocks that "fit 132 SMs" still take two waves.

Part 2 (fixed cost): kdepth_sweep.py found db_cluster at cluster size 1 ~0.8
us slower per launch than rung 9 launched directly, with the same tile and
loop.  The same rung-9 cubin is launched here (CUDA graphs, PDL on, as the
suite times) plainly, with a cluster of 1 block in the launch configuration,
and with db_cluster's shared-memory reservation as extra dynamic shared
memory; then db_cluster itself at cluster size 1 -- each at two K depths, so
a fixed part and a per-k-tile part separate.
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


def occupancy(dev) -> list[dict]:
    from sgemm.runtime.launcher import clusters_at_once
    rows = []
    for name in ("k2", "big", "tall"):
        for cs in range(1, 9):
            n = clusters_at_once(dev, cs, name)
            rows.append(dict(config=name, cs=cs, max_clusters=n, blocks=n * cs,
                             ideal=dev.sm_count // cs))
            print(f"occupancy {name:>4} cs{cs}: {n:3d} clusters at once = {n * cs:3d} blocks "
                  f"(SMs / cs = {dev.sm_count // cs})", flush=True)
    return rows


def fixed_cost(n: int, once: bool = False) -> list[dict]:
    import cupy as cp
    from cuda.core import LaunchConfig, launch as cu_launch
    import sgemm
    from sgemm.kernels import registry
    from sgemm.kernels.params import TileParams as T
    from sgemm.kernels.schemes import DB_ONE_PER_SM_BYTES
    from sgemm.plan import direct_launches
    from sgemm.runtime import launcher
    from suite import _graph_time

    t8x4 = T(BM=64, BN=64, BK=16, WM=32, WN=32, TM=8, TN=4, threads=128)
    rows = []
    for depth in ((16,) if once else (16, 256)):
        k = depth
        rs = cp.random.RandomState(depth)
        A = rs.standard_normal((n, k), dtype=cp.float32)
        B = rs.standard_normal((k, n), dtype=cp.float32)
        ref = A.astype(cp.float64) @ B.astype(cp.float64)
        variants = []
        for kernel, p in (("double_buffer", t8x4), ("db_cluster", t8x4.replace(split_k=1))):
            C = cp.full((n, n), cp.nan, dtype=cp.float32)
            pl = sgemm.plan(A, B, C, kernel=kernel)
            pl.params = p
            pl.launches = direct_launches(pl.problems, registry.get(kernel), p, pl.device)
            (l,) = pl.launches
            if kernel == "double_buffer":
                launcher._allow_dynamic_smem(l.kernel, DB_ONE_PER_SM_BYTES, pl.device.id)
                for how, cfg in (
                        ("direct", dict()),
                        ("direct+cluster1", dict(cluster=(1, 1, 1))),
                        ("direct+reserve", dict(shmem_size=DB_ONE_PER_SM_BYTES))):
                    c = dict(grid=l.grid, block=l.block, shmem_size=l.smem,
                             programmatic_stream_serialization=True)
                    c.update(cfg)
                    variants.append((how, C, l, LaunchConfig(**c)))
            else:
                variants.append(("db_cluster cs1", C, l, LaunchConfig(
                    grid=l.grid, block=l.block, shmem_size=l.smem,
                    programmatic_stream_serialization=True)))
        for how, C, l, cfg in variants:
            def enqueue(h, l=l, cfg=cfg):
                cu_launch(launcher.as_stream(h), cfg, l.kernel, *l.args)
            C.fill(cp.nan)
            enqueue(cp.cuda.get_current_stream().ptr)
            cp.cuda.get_current_stream().synchronize()
            err = float(cp.linalg.norm(C - ref) / cp.linalg.norm(ref))
            if once:            # for a profiler: three plain launches, no timing
                for _ in range(3):
                    enqueue(cp.cuda.get_current_stream().ptr)
                cp.cuda.get_current_stream().synchronize()
                print(f"once {how:>16} depth {depth:4d} err {err:.1e}", flush=True)
                continue
            t = _graph_time(enqueue) * 1e3
            rows.append(dict(variant=how, depth=depth, k=k, err=err, us=t))
            print(f"fixed {how:>16} depth {depth:4d} err {err:.1e} {t:7.2f} us", flush=True)
    if once:
        return rows
    print("==== fixed part (extrapolated to depth 0) and per k-tile of 16")
    for how in dict.fromkeys(r["variant"] for r in rows):
        a, b = [r for r in rows if r["variant"] == how]
        slope = (b["us"] - a["us"]) / ((b["depth"] - a["depth"]) / 16)
        print(f"{how:>16}: fixed {a['us'] - slope * a['depth'] / 16:5.2f} us, "
              f"{slope:5.3f} us per k-tile")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mn", type=int, default=512)
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "/tmp"),
                                                  "cluster-cost.json"))
    ap.add_argument("--once", action="store_true",
                    help="part 2 only, each variant launched 4 times at depth 16, "
                         "untimed (run it under ncu)")
    args = ap.parse_args()
    if args.once:
        fixed_cost(args.mn, once=True)
        return 0
    import cupy as cp
    from sgemm.runtime.device import info
    dev = info(0)
    occ = occupancy(dev)
    fixed = fixed_cost(args.mn)
    env = {"device": dev.name, "sm_count": dev.sm_count,
           "date": time.strftime("%Y-%m-%d %H:%M:%S"), "cupy": cp.__version__, "mn": args.mn}
    Path(args.out).write_text(json.dumps({"env": env, "occupancy": occ, "fixed": fixed},
                                         indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
