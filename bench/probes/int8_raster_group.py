"""Probe: the integer engine's INT8 wgmma GEMM (42_int8_wgmma.cu, 8 planes
in one launch, the default 128 x 256 config) timed with each raster group
width (TileParams.swizzle: BM-row tiles a group walks down before moving
across) at 8192^3 and 16384^3.  Not part of the package.

Why: at 16384^3 the GEMM ran ~6 % fewer TOPS than at 8192^3 (1474 against
1565, int8-gemm-probe-h100-2026-11-26.json); if the wave's A and B panels
fell out of L2, a different group width would show it.  Run it with the SM
clock sampled beside it (nvidia-smi --query-gpu=clocks.sm,power.draw
-lms 250) to see the power cap instead.

    OUT=dir python bench/probes/int8_raster_group.py [SIZES...]

Writes $OUT/int8_group.json: per size and group, median and min ms of 9
launches (three alternating rounds of three) and TOPS (8 x 2 n^3).
"""
import json
import os
import statistics
import sys

import cupy as cp

from sgemm.int8x import device as D

GROUPS = (2, 4, 8, 16, 32, 64)
PLANES = 8


def time_size(s: int, spec, p0, mods) -> dict:
    """Median and min ms of 9 launches per group width (three alternating
    rounds of three, one warm-up launch each), and TOPS."""
    pa = cp.random.randint(-127, 128, (PLANES, s, s), dtype=cp.int8)
    pb = cp.random.randint(-127, 128, (PLANES, s, s), dtype=cp.int8)
    buf = cp.empty((PLANES, s, D.padded_rows(s)), cp.uint8)
    ts = {g: [] for g in GROUPS}
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    for rnd in range(3):
        for g in (GROUPS if rnd % 2 == 0 else GROUPS[::-1]):
            p = p0.replace(swizzle=g)
            args = D.int8_gemm_args(p, s, s, s, pa.data.ptr, pb.data.ptr, mods.data.ptr,
                                    buf.data.ptr)
            grid = spec.grid_for(s, s, PLANES, p)
            D._launch(spec, grid, args, p)
            for _ in range(3):
                e0.record()
                D._launch(spec, grid, args, p)
                e1.record()
                e1.synchronize()
                ts[g].append(cp.cuda.get_elapsed_time(e0, e1))
    del pa, pb, buf
    cp.get_default_memory_pool().free_all_blocks()
    ops = PLANES * 2.0 * s ** 3
    return {g: dict(ms=statistics.median(v), ms_min=min(v), tops=ops / statistics.median(v) / 1e9)
            for g, v in ts.items()}


def main(argv) -> None:
    spec, p0 = D.gemm_choice("wgmma", None)
    mods = D.constants()
    out = {}
    for s in [int(x) for x in argv] or [8192, 16384]:
        out[s] = time_size(s, spec, p0, mods)
        print(s, " ".join(f"g{g}: {r['ms']:.2f} ms {r['tops']:.0f} TOPS"
                          for g, r in out[s].items()), flush=True)
    with open(os.path.join(os.environ.get("OUT", "."), "int8_group.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
