"""Probe: every FFMA candidate timed, as the calibration sweep times them,
on single products whose small side is 5-8 beside a big operand stored
along k: the problems of gemv's S = 8 blocks along k (``gemv:k8``, the
32-row strip, and on 16-byte rows ``gemv:ka``, the 64-row one;
sgemm/cost.py config_key), for fitting their rates
(``python -m sgemm.calibrate --sweep ...``) and checking the model's picks
there (``bench/probes/sweep_regret.py``).  Not part of the package.

    OUT=dir python bench/probes/gemv_strip_sweep.py N SEED SECONDS [MIN_MIB]
    python bench/probes/gemv_strip_sweep.py --list N SEED      # the problems, as JSON (CPU)

Problems: calibrate.draw's distribution (the planner's own; this probe's
seed), kept where min(m, n) is 5-8, the big operand lies along k, and
operands and output hold at least MIN_MIB (default 8) MiB; ALIGNED=1 keeps
only those on 16-byte rows.  Writes $OUT/gemv-strip-sweep.json.
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_picks import canonical  # noqa: E402
from narrow_batch_sweep import FAMILIES  # noqa: E402
from store_refit import sweep  # noqa: E402

from sgemm.kernels.schemes import x_rows_contiguous  # noqa: E402

MIN_BYTES = 8 << 20
ALIGNED = os.environ.get("ALIGNED") == "1"


def strip_problem(p) -> bool:
    by = 4 * (p["m"] * p["k"] + p["k"] * p["n"] + p["m"] * p["n"])
    if p["batch"] != 1 or not 5 <= min(p["m"], p["n"]) <= 8 or by < MIN_BYTES:
        return False
    c = canonical(p)
    return (c.aligned or not ALIGNED) and not x_rows_contiguous(c)


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["--list"]:         # PROBS for bench/probes/tree_ab.py
        import json
        from store_refit import draws
        keys = ("cat", "m", "n", "k", "ta", "tb", "batch")
        print(json.dumps([{k: p[k] for k in keys} for p in draws(int(a[2]), int(a[1]),
                                                                 strip_problem)]))
        sys.exit(0)
    if len(a) < 3:
        sys.exit(__doc__)
    if len(a) > 3:
        MIN_BYTES = int(float(a[3]) * (1 << 20))
    sweep(int(a[0]), int(a[1]), float(a[2]), keep=strip_problem, families=FAMILIES,
          name="gemv-strip")
