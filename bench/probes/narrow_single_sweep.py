"""Probe: would 43_narrow.cu, with the planner's K split, serve single
products with a side of at most 32?  When this ran the planner weighed
narrow for batches only; the probe lets it weigh narrow for every product
with such a side (in this process; since 4e4a1ed schemes.narrow_applies is
that rule itself, so the patch changes nothing there) and times every FFMA
candidate as the calibration sweep times them, narrow's split-K plans among
them.  Not part of the package.

    OUT=dir python bench/probes/narrow_single_sweep.py sweep N SEED SECONDS [MIN_MIB]  # GPU
    python bench/probes/narrow_batch_sweep.py report SWEEP.json narrow                 # CPU

Problems: calibrate.draw's single-product categories (the planner's own
distribution, this probe's seed), kept where min(m, n) <= 32 and the
operands and output hold at least MIN_MIB (default 8) MiB.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from narrow_batch_sweep import FAMILIES  # noqa: E402

MIN_BYTES = 8 << 20


def single_narrow(p) -> bool:
    by = 4 * (p["m"] * p["k"] + p["k"] * p["n"] + p["m"] * p["n"])
    return p["batch"] == 1 and min(p["m"], p["n"]) <= 32 and by >= MIN_BYTES


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] != ["sweep"]:
        sys.exit(__doc__)
    if len(a) > 4:
        MIN_BYTES = int(float(a[4]) * (1 << 20))
    from sgemm.kernels import schemes
    schemes.narrow_applies = lambda prob: min(prob.m, prob.n) <= schemes.NARROW_SIDES[-1]
    from store_refit import sweep
    sweep(int(a[1]), int(a[2]), float(a[3]), keep=single_narrow, families=FAMILIES,
          name="narrow-single")
