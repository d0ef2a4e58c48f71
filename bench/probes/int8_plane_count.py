"""Probe: the INT8 GEMM (42_int8_wgmma.cu, default config) back to back at
the board's power cap with 8, 7 and 6 residue planes.  Not part of the
package.

Why: at 16384^3 the engine's call is held at the 700 W cap (int8x notes,
2026-11-27 and 2026-11-29), so its time is about its energy; one modulus
fewer removes an eighth of the INT8 products.  Whether the GEMM's time
falls by that much under the cap decides whether a 7-moduli mode is worth
building (its scaling would have to change to keep FP32 accuracy).

    OUT=dir python bench/probes/int8_plane_count.py [SIZES...]

Writes $OUT/int8_plane_count.json: per size and plane count, the ms of each
run of REPS launches back to back (three alternating rounds, one warm-up
run each), their median, and TOPS of planes x 2 n^3.
"""
import json
import os
import statistics
import sys

import cupy as cp

from sgemm.int8x import device as D

COUNTS = (8, 7, 6)
REPS = 6


def time_size(s: int, spec, p, mods) -> dict:
    pa = cp.random.randint(-127, 128, (max(COUNTS), s, s), dtype=cp.int8)
    pb = cp.random.randint(-127, 128, (max(COUNTS), s, s), dtype=cp.int8)
    buf = cp.empty((max(COUNTS), s, D.padded_rows(s)), cp.uint8)
    ts = {n: [] for n in COUNTS}
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    args = D.int8_gemm_args(p, s, s, s, pa.data.ptr, pb.data.ptr, mods.data.ptr, buf.data.ptr)
    for rnd in range(4):
        for n in (COUNTS if rnd % 2 == 0 else COUNTS[::-1]):
            grid = spec.grid_for(s, s, n, p)
            D._launch(spec, grid, args, p)
            e0.record()
            for _ in range(REPS):
                D._launch(spec, grid, args, p)
            e1.record()
            e1.synchronize()
            if rnd:                                   # round 0 warms every count up
                ts[n].append(cp.cuda.get_elapsed_time(e0, e1) / REPS)
    del pa, pb, buf
    cp.get_default_memory_pool().free_all_blocks()
    return {n: dict(ms_runs=v, ms=statistics.median(v),
                    tops=n * 2.0 * s ** 3 / statistics.median(v) / 1e9) for n, v in ts.items()}


def main(argv) -> None:
    spec, p = D.gemm_choice("auto", None)
    mods = D.constants()
    sizes = [int(x) for x in argv] or [8192, 16384]
    out = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "kernel": spec.name, "reps": REPS, "sizes": {}}
    for s in sizes:
        out["sizes"][s] = r = time_size(s, spec, p, mods)
        for n in COUNTS:
            print(f"{s}^3 planes {n}: {r[n]['ms']:.2f} ms a launch, {r[n]['tops']:.0f} TOPS, "
                  f"{r[n]['ms'] / r[8]['ms']:.3f} of 8 planes' time", flush=True)
    path = os.path.join(os.environ.get("OUT", "."), "int8_plane_count.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
