"""Probe: the host cost of one launch through PreparedLaunch (ctypes,
sgemm/runtime/cu.py) against the same launch through cuda.bindings'
cuLaunchKernelEx with a configuration built once (what PreparedLaunch called
until 2026-11-26), on the GPU.

    python bench/probes/launch_cost.py --out launch-cost.json

The launch is the first of a 64^3 plan's (CuPy operands), as in
eager-probe-h100-2026-11-25.log's "prepared launch" row (6.85-6.97 us).  Each
sample enqueues ``--n`` launches on the legacy default stream and divides the
wall and CPU time by n, then synchronizes; the cases alternate, ``--rounds``
samples each; min and median are reported.  Not part of the package.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    import cupy as cp

    import sgemm
    from sgemm.runtime import launcher
    n = a.size
    x = cp.random.standard_normal((n, n), dtype=cp.float32)
    y = cp.random.standard_normal((n, n), dtype=cp.float32)
    z = cp.empty((n, n), dtype=cp.float32)
    p = sgemm.plan(x, y, z)
    l0 = p.launches[0]
    prep = launcher.PreparedLaunch(l0.kernel, l0.grid, l0.block, l0.smem, l0.args)
    pdl = id(l0.kernel) in launcher._pdl

    from cuda.bindings import driver
    cfg = driver.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = (int(g) for g in l0.grid)
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = int(l0.block), 1, 1
    cfg.sharedMemBytes = int(l0.smem)
    cfg.hStream = driver.CUstream(0)
    if pdl:
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attr.value.programmaticStreamSerializationAllowed = 1
        cfg.attrs = [attr]
        cfg.numAttrs = 1
    func = driver.CUkernel(l0.kernel.handle)
    params = prep._params_addr

    def bindings():
        (err,) = driver.cuLaunchKernelEx(cfg, func, params, 0)
        if int(err):
            raise RuntimeError(err)

    cases = {"PreparedLaunch (ctypes)": lambda: prep(0),
             "cuLaunchKernelEx (cuda.bindings)": bindings,
             "plan.execute()": p.execute}
    # the launches compute z = x @ y: check it before timing
    ref = x.astype(cp.float64) @ y.astype(cp.float64)
    for name, f in cases.items():
        if name != "plan.execute()" and len(p.launches) != 1:
            continue                 # one launch alone computes z only for a one-launch plan
        z.fill(0)
        f()
        cp.cuda.Device().synchronize()
        err = float(cp.abs(z - ref).max() / cp.abs(ref).max())
        assert err < 1e-5, err
    samples = {k: {"wall_us": [], "cpu_us": []} for k in cases}
    for f in cases.values():
        for _ in range(50):
            f()
    cp.cuda.Device().synchronize()
    for _ in range(a.rounds):
        for name, f in cases.items():
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(a.n):
                f()
            t1, c1 = time.perf_counter(), time.process_time()
            cp.cuda.Device().synchronize()
            samples[name]["wall_us"].append((t1 - t0) / a.n * 1e6)
            samples[name]["cpu_us"].append((c1 - c0) / a.n * 1e6)
    doc = {"size": n, "n": a.n, "rounds": a.rounds, "pdl": pdl, "grid": list(l0.grid),
           "block": l0.block, "kernel": l0.kernel.name,
           "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "python": sys.version.split()[0], "cases": {}}
    print(f"one launch, {n}^3 plan's first kernel ({l0.kernel.name}, pdl={pdl}), "
          f"{a.n} per sample, {a.rounds} samples: us per launch, min / median")
    for name, s in samples.items():
        row = {k: {"min": min(v), "median": statistics.median(v), "all": v} for k, v in s.items()}
        doc["cases"][name] = row
        print(f"  {name:36s} wall {row['wall_us']['min']:6.2f} / {row['wall_us']['median']:6.2f}"
              f"   cpu {row['cpu_us']['min']:6.2f} / {row['cpu_us']['median']:6.2f}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
