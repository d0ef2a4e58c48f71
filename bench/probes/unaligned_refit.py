"""Probe: the cost model's unaligned-load factor (``Rate.unaligned``: an
unaligned problem's FFMA rate as a share of the aligned one) refitted for
rung 9 (``double_buffer``) and rung 13 (``kmajor``) on compute-heavy
unaligned problems.  Not part of the package.

Why: forced on deep-K rows of the judge's kind, rung 9's 128x64 and 64x128
tiles ran unaligned operands 21-42 % faster than the model predicted
(699x333x72147 NT split 96: 982 us against 1415 predicted, and faster than
the packed copy the model preferred; docs/notes/dispatch.md, 2026-11-27
seventh).  The shipped factors were fitted jointly with every other field
on sweeps of calibrate's whole distribution, where an unaligned problem is
also an odd-sized one and the factor took up whatever else those cost.

    OUT=dir python bench/probes/unaligned_refit.py sweep [N] [SEED] [SECONDS]   # GPU
    python bench/probes/unaligned_refit.py fit SWEEP.json [--write]              # CPU
    python bench/probes/store_refit.py moved OLD_CAL.json N SEED                 # CPU

sweep: problems of ``sgemm.calibrate.draw``'s distribution (own seed) whose
operands as the judge lays them out (C-order, contiguous) have a leading
dimension that is not a multiple of 4, and whose FFMA time at 40 TFLOP/s is
at least half their time (bytes at 2.5 TB/s counted too); every candidate of
the two families timed by ``sgemm.calibrate.measure``;
$OUT/unaligned-sweep.json.  fit: as store_refit.py's, for ``unaligned`` on
a grid capped at 1 (an unaligned operand is never faster; a factor above 1
would absorb an error of the aligned rate).
"""
import sys

from store_refit import GRID, fit, sweep, work_of

FAMILIES = ("double_buffer", "kmajor")
UNALIGNED_GRID = sorted({g for g in GRID if g <= 1.0} | {1.0})


def unaligned_compute(p) -> bool:
    w = work_of(p)
    return w is not None and not w[0] and w[1] >= w[2]


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["sweep"]:
        sweep(int(a[1]) if len(a) > 1 else 150, int(a[2]) if len(a) > 2 else 5353,
              float(a[3]) if len(a) > 3 else 150.0, keep=unaligned_compute,
              families=FAMILIES, name="unaligned")
    elif a[:1] == ["fit"]:
        fit(a[1], "--write" in a, field="unaligned", families=FAMILIES,
            grid=UNALIGNED_GRID)
    else:
        sys.exit(__doc__)
