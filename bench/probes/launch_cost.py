"""Probe: the host cost of one launch through PreparedLaunch (ctypes,
sgemm/runtime/cu.py) against the same launch through cuda.bindings'
cuLaunchKernelEx with a configuration built once (what PreparedLaunch called
until 2026-11-26), on the GPU.

    python bench/probes/launch_cost.py --out launch-cost.json
    PYTHONPATH=OTHER_CHECKOUT python bench/probes/launch_cost.py --append all.jsonl

It runs on whichever sgemm is imported (``tree`` in the output says which
launch layer it has), so alternating processes of two checkouts compare
their PreparedLaunch.  Cases: PreparedLaunch as plans call it, and as the
plan cache calls it (three pointer arguments rewritten per call); the raw
driver call through cuda.bindings and, where present, through ctypes; and
whole calls (plan.execute(), sgemm.gemm(a, b, c)).

The launch is the first of a 64^3 plan's (CuPy operands), as in
eager-probe-h100-2026-11-25.log's "prepared launch" row (6.85-6.97 us).  Each
sample enqueues ``--n`` launches on the legacy default stream and divides the
wall and CPU time by n, then synchronizes; the cases alternate, ``--rounds``
samples each; min and median are reported.  Not part of the package.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--out")
    ap.add_argument("--append", help="append the result as one JSON line to this file")
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
    func = driver.CUkernel(int(l0.kernel.handle))
    params = prep._params_addr

    def bindings():
        (err,) = driver.cuLaunchKernelEx(cfg, func, params, 0)
        if int(err):
            raise RuntimeError(err)

    # the plan cache's call: the operands' pointers written into the slots
    ptrs = (x.data.ptr, y.data.ptr, z.data.ptr)
    relocs = tuple((i, ptrs.index(v), 0) for i, v in enumerate(l0.args)
                   if type(v) is int and v in ptrs)
    prep_r = launcher.PreparedLaunch(l0.kernel, l0.grid, l0.block, l0.smem, l0.args, relocs)
    cases = {"PreparedLaunch": lambda: prep(0),
             f"PreparedLaunch, {len(relocs)} relocs": lambda: prep_r(0, ptrs),
             "cuLaunchKernelEx (cuda.bindings)": bindings}
    try:
        from sgemm.runtime import cu
        tree = "ctypes (runtime/cu.py)"
        raw = cu.lib().cuLaunchKernelEx_unchecked
        call = (ctypes.pointer(prep.config(0)), cu.c_void_p(int(l0.kernel.handle)),
                cu.c_void_p(params), None)
        cases["cuLaunchKernelEx (ctypes)"] = lambda: raw(*call)
    except ImportError:
        tree = "cuda.bindings"
    cases["plan.execute()"] = p.execute
    cases["sgemm.gemm(a, b, c)"] = lambda: sgemm.gemm(x, y, z)
    # the launches compute z = x @ y: check it before timing
    ref = x.astype(cp.float64) @ y.astype(cp.float64)
    for name, f in cases.items():
        if not name.startswith(("plan", "sgemm")) and len(p.launches) != 1:
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
    doc = {"tree": tree, "sgemm": os.path.dirname(sgemm.__file__), "size": n, "n": a.n, "rounds": a.rounds, "pdl": pdl, "grid": list(l0.grid),
           "block": l0.block, "kernel": l0.kernel.name,
           "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "python": sys.version.split()[0], "cases": {}}
    print(f"[{tree}] one launch, {n}^3 plan's first kernel ({l0.kernel.name}, pdl={pdl}), "
          f"{a.n} per sample, {a.rounds} samples: us per launch, min / median")
    for name, s in samples.items():
        row = {k: {"min": min(v), "median": statistics.median(v), "all": v} for k, v in s.items()}
        doc["cases"][name] = row
        print(f"  {name:36s} wall {row['wall_us']['min']:6.2f} / {row['wall_us']['median']:6.2f}"
              f"   cpu {row['cpu_us']['min']:6.2f} / {row['cpu_us']['median']:6.2f}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
    if a.append:
        with open(a.append, "a") as f:
            f.write(json.dumps(doc) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
