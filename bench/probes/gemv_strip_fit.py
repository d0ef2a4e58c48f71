"""Probe (CPU): fit gemv's 64-row strip (``gemv:ka``) on its two sweeps
with the per-wave fixed cost held to T0_MAX (default 5 us, the range of
the other gemv rates) and print the rate and its fit error.  Not adopted:
the shipped rate is the free fit (``python -m sgemm.calibrate --sweep``,
t0 at the grid's top, 20 us), whose error is the lower; this records what
holding t0 costs the fit (docs/notes/dispatch.md, 2026-11-29).

    python bench/probes/gemv_strip_fit.py OUT.json [T0_MAX_US]
"""
import json
import sys

import numpy as np

from sgemm import calibrate
from sgemm.calibrate import fit
from sgemm.tune import DEVICE_MODELS

SWEEPS = ("bench/results/gemv-strip-sweep-h200-2026-11-29.json",
          "bench/results/gemv-strip-sweep-h200-2026-11-29-big.json")

if __name__ == "__main__":
    out, t0_max = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    calibrate.T0S = calibrate.T0S[calibrate.T0S <= t0_max * 1e-6]
    calibrate.T0S32 = calibrate.T0S.astype(np.float32)
    rows = []
    for path in SWEEPS:                 # gemv's timings only: the one rate fitted here
        for r in json.load(open(path))["rows"]:
            rows.append(dict(r, cands={k: v for k, v in r["cands"].items()
                                       if k.startswith("gemv:")}))
    # one process: the grid patched above lives in this one
    cal, errs = fit(rows, DEVICE_MODELS["h200"], workers=1)
    doc = cal.to_json()
    doc["fit_mean_abs_log_error"] = {k: round(v, 3) for k, v in errs.items()}
    json.dump(doc, open(out, "w"), indent=1)
    r = doc["rates"]["gemv:ka"]
    print(f"gemv:ka (t0 <= {t0_max} us): {r}, error {doc['fit_mean_abs_log_error'].get('gemv:ka')}")
