"""Probe: the cost model's layout factors (``Rate.layout``: a config's FFMA
rate on each of the four storage layouts, as a share of its peak_frac)
refitted for rung 9 (``double_buffer``) on large aligned problems.  Not
part of the package.

Why: forced on large ML layers of the judge's kind (H100,
forced-cands-layers-h100-2026-11-27.json), rung 9's 256x128 tile beat the
128x128 tile the model ranked first on 11 of the 12 weight-gradient (TN)
and data-gradient (NN) layers, by 1-19 %, and the plan as run (measured
choice on) on 7 of them by 3-8 % (1000x16384x4096 NN 2814 us against 3032).
The shipped factors were fitted jointly with every other field
on calibrate's whole distribution, where most points of a layout are small
or odd-sized problems and the factor took up what those cost.

    OUT=dir python bench/probes/layout_refit.py sweep [N] [SEED] [SECONDS]   # GPU
    python bench/probes/layout_refit.py fit SWEEP.json [--write]              # CPU
    python bench/probes/layout_refit.py crossval SWEEP.json                   # CPU
    python bench/probes/store_refit.py moved OLD_CAL.json N SEED              # CPU

sweep: problems of ``sgemm.calibrate.draw``'s distribution (own seed) whose
C-order operands all have leading dimensions that are multiples of 4 and
whose FFMA time at 40 TFLOP/s is at least 200 us and at least twice their
DRAM time at 2.5 TB/s: the problems the big tiles compete for, where the
layout factor is most of the prediction; every rung 9 candidate timed by
``sgemm.calibrate.measure``; $OUT/layout-sweep.json.  fit: store_refit.py's,
per config and layout index, aligned points only, on a grid around 1.
"""
import sys

from store_refit import crossval, fit, sweep, work_of

FAMILIES = ("double_buffer",)
LAYOUT_GRID = [round(0.80 + 0.01 * i, 2) for i in range(41)]     # 0.80 .. 1.20


def aligned(prob, spec) -> bool:
    return spec.aligned_for(prob)


def aligned_compute(p) -> bool:
    w = work_of(p)
    return w is not None and w[0] and w[1] >= 200e-6 and w[1] >= 2 * w[2]


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["sweep"]:
        sweep(int(a[1]) if len(a) > 1 else 120, int(a[2]) if len(a) > 2 else 6262,
              float(a[3]) if len(a) > 3 else 150.0, keep=aligned_compute,
              families=FAMILIES, name="layout")
    elif a[:1] == ["fit"]:
        fit(a[1], "--write" in a, field="layout", families=FAMILIES, grid=LAYOUT_GRID,
            select=aligned)
    elif a[:1] == ["crossval"]:
        crossval(a[1], "layout", FAMILIES, LAYOUT_GRID, aligned)
    else:
        sys.exit(__doc__)
