#!/usr/bin/env python3
"""Small squares under CUDA graphs (issue 5's >= 1.3x target): every candidate
(kernel, params) below, with programmatic dependent launch on and off in the
same process, against cuBLAS (torch.matmul, TF32 off) captured the same way.

    python scripts/small_graphs.py [--sizes 128,256,384,512,768] [--only K1,K2] [--out F.json]

Method: bench/suite.py's _graph_time (20 GEMMs captured per graph, replayed
5x per sample, median of 15 samples), correctness first (NaN-poisoned C
against an fp64 product), PDL toggled by taking the plan's kernels out of
the launcher's PDL set (the same cubins otherwise).  Candidates: what
kernel="auto" picks, the cluster split-K configs with 2/4/8 slices, the
tile/small/split-K configs the tuner liked before, and rung 9 in a cluster
(db_cluster) with every cluster size that fits two blocks per SM.  Short table last.
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


TRIAL_NEWEST = 2   # --trial: how many of the last trial tiles to time (with k2 and k4)


def candidates(n, trial_only=False):
    from sgemm.kernels import registry, schemes
    out = [("auto", None)]
    db = registry.get("db_cluster")
    from sgemm.kernels.params import TileParams as T
    trial = [T(BM=64, BN=64, BK=16, WM=32, WN=64, TM=8, TN=8, threads=64),   # 8x8 on 64x64
             T(BM=64, BN=64, BK=32, WM=32, WN=32, TM=8, TN=4, threads=128),  # BK = 32
             T(BM=128, BN=64, BK=16, WM=64, WN=32, TM=8, TN=8, threads=128),  # 8x8, 128x64
             T(BM=64, BN=128, BK=16, WM=32, WN=64, TM=8, TN=8, threads=128),  # and 64x128
             T(BM=64, BN=64, BK=32, WM=32, WN=64, TM=8, TN=8, threads=64),    # k2 at BK = 32
             # one-warp k-groups (session 7): 64x32 / 32x64 of 8x8, 64x64 of 16x8
             # (measured with up to 8 groups while the kernel allowed them)
             T(BM=64, BN=32, BK=16, WM=64, WN=32, TM=8, TN=8, threads=32),
             T(BM=32, BN=64, BK=16, WM=32, WN=64, TM=8, TN=8, threads=32),
             T(BM=64, BN=64, BK=8, WM=64, WN=64, TM=16, TN=8, threads=32),
             # shallower k-tiles: a smaller first-tile burst from L2
             T(BM=64, BN=32, BK=8, WM=64, WN=32, TM=8, TN=8, threads=32),
             T(BM=64, BN=64, BK=8, WM=32, WN=64, TM=8, TN=8, threads=64),
             # k4 with 64x32 warp tiles (the other fragment broadcast pattern)
             T(BM=64, BN=64, BK=8, WM=64, WN=32, TM=8, TN=8, threads=64),
             # the 8x4 "small" tile at BK = 8 (4 k-groups: 16 warps an SM)
             T(BM=64, BN=64, BK=8, WM=32, WN=32, TM=8, TN=4, threads=128)]
    if trial_only:
        configs, trial = [db.configs["k2"], db.configs["k4"]], trial[-TRIAL_NEWEST:]
    else:
        configs = list(db.configs.values())
    cl = registry.get("splitk_cluster")
    for name, p in ([] if trial_only else cl.configs.items()):
        for cs in (2, 4, 8):
            if n // cs >= 32:
                out.append(("splitk_cluster", p.replace(split_k=cs)))
    if not trial_only:
        big = schemes.TILE_CONFIGS["medium"]
        out.append(("splitk_cluster", big.replace(threads=256, split_k=4)))    # KS = 2 inside
        out.append(("splitk_cluster",
                    schemes.TILE_CONFIGS["small"].replace(threads=128, split_k=2)))
        out.append(("small", None))
    for p in configs + trial:
        tiles = -(-n // p.BM) * -(-n // p.BN)
        gt = schemes.db_group_threads(p)
        for kg in schemes.DB_KGROUPS:
            for cs in schemes.DB_CLUSTER_SIZES:  # up to one wave, slices >= 32 deep
                q = p.replace(threads=kg * gt, split_k=cs)
                if (tiles * cs <= 132 and n // (cs * kg) >= 32 and kg * gt <= 512 and cs <= 6
                        and (kg * gt >= 128 or not trial_only)   # trial: >= 4 warps
                        and not db.can_implement(q) and ("db_cluster", q) not in out):
                    out.append(("db_cluster", q))
    return out


def _compile_one(job):
    from sgemm.runtime.compiler import compile_kernel
    compile_kernel(*job)
    return job[1]


def _precompile(sizes, only, trial_only=False):
    """Compile every forced candidate's instantiation in parallel first (NVRTC
    needs no GPU; the disk cache serves the timing loop).  Row-major NN maps
    to the canonical TA = TB = false, aligned."""
    from concurrent.futures import ProcessPoolExecutor
    from sgemm.kernels import registry
    keep = set(filter(None, only.split(",")))
    jobs = set()
    for n in sizes:
        for kernel, params in candidates(n, trial_only):
            if params is None or (keep and kernel not in keep):
                continue
            spec = registry.get(kernel)
            for arch in spec.archs[-1:]:
                jobs.add((spec.source, spec.name_expression(params, False, False, True), arch))
    t0 = time.time()
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 4) as ex:
        list(ex.map(_compile_one, sorted(jobs)))
    print(f"precompiled {len(jobs)} instantiations in {time.time() - t0:.0f} s", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="128,256,384,512,768")
    ap.add_argument("--only", default="",
                    help="comma-separated kernel names to keep (besides auto)")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "/tmp"),
                                                  "small-graphs.json"))
    ap.add_argument("--trial", action="store_true",
                    help="auto, k2 and the newest trial tiles only")
    args = ap.parse_args()
    import cupy as cp
    import sgemm
    from sgemm.kernels import registry
    from sgemm.plan import direct_launches
    from sgemm.runtime import launcher
    from suite import _graph_time, _torch_matmul   # noqa: E402

    _precompile([n for n in (int(x) for x in args.sizes.split(","))], args.only, args.trial)
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        rs = cp.random.RandomState(n)
        A = rs.standard_normal((n, n), dtype=cp.float32)
        B = rs.standard_normal((n, n), dtype=cp.float32)
        C = cp.empty((n, n), dtype=cp.float32)
        ref = A.astype(cp.float64) @ B.astype(cp.float64)
        enqueue, _ = _torch_matmul(A, B)
        cub = _graph_time(enqueue)
        keep = set(filter(None, args.only.split(",")))
        for kernel, params in candidates(n, args.trial):
            if keep and kernel != "auto" and kernel not in keep:
                continue
            pl = sgemm.plan(A, B, C, kernel=kernel)
            if params is not None:
                spec = registry.get(kernel)
                if spec.can_implement(params, pl.device.smem_optin):
                    continue
                pl.params, pl.launches = params, direct_launches(pl.problems, spec, params,
                                                                 pl.device)
            C.fill(cp.nan)
            pl.execute()
            cp.cuda.Device().synchronize()
            err = float(cp.linalg.norm(C - ref) / cp.linalg.norm(ref))
            ids = {id(l.kernel) for l in pl.launches}
            on = ids & launcher._pdl
            t = {}
            for mode in ("pdl", "off", "pdl2", "off2"):     # interleaved: drift shows up
                if mode.startswith("off"):
                    launcher._pdl.difference_update(on)
                else:
                    launcher._pdl.update(on)
                t[mode] = _graph_time(lambda h: pl.execute(stream=h))
            launcher._pdl.update(on)
            row = {"n": n, "kernel": pl.kernel.name, "forced": kernel,
                   "params": pl.params.as_dict(), "launches": len(pl.launches),
                   "err": err, "ok": err < 1e-5, "pdl_capable": bool(on),
                   "graph_pdl_ms": min(t["pdl"], t["pdl2"]),
                   "graph_nopdl_ms": min(t["off"], t["off2"]), "samples": t,
                   "graph_cublas_ms": cub}
            row["ratio_pdl"] = cub / row["graph_pdl_ms"]
            row["ratio_nopdl"] = cub / row["graph_nopdl_ms"]
            rows.append(row)
            p = pl.params
            print(f"{n:5d} {kernel:>15}->{pl.kernel.name:<15} {p.BM}x{p.BN}x{p.BK} {p.TM}x{p.TN} "
                  f"t{p.threads} "
                  f"sk{p.split_k} err {err:.1e} pdl {row['graph_pdl_ms']*1e3:6.2f} us  "
                  f"off {row['graph_nopdl_ms']*1e3:6.2f} us  cuBLAS {cub*1e3:6.2f} us  "
                  f"ratio {row['ratio_pdl']:.2f} / {row['ratio_nopdl']:.2f}", flush=True)
    env = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "date": time.strftime("%Y-%m-%d %H:%M:%S"), "cupy": cp.__version__}
    Path(args.out).write_text(json.dumps({"env": env, "rows": rows}, indent=1))
    print("==== best per size (graph, PDL on): ours us / cuBLAS us = ratio")
    for n in sorted({r["n"] for r in rows}):
        ok = [r for r in rows if r["n"] == n and r["ok"]]
        b = min(ok, key=lambda r: r["graph_pdl_ms"])
        print(f"{n:5d} {b['kernel']:>15} sk{b['params']['split_k']} "
              f"{b['graph_pdl_ms']*1e3:6.2f} / {b['graph_cublas_ms']*1e3:6.2f} = "
              f"{b['ratio_pdl']:.2f}  (no PDL {b['ratio_nopdl']:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
