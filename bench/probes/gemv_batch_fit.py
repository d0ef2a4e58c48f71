"""Probe (CPU, no GPU): the cost model's measured / predicted time of the
gemv kernels (and a few others beside them) on the committed H100 sweeps,
split into batched and single products: whether one rate describes both.

    SGEMM_ROOT=TREE python bench/probes/gemv_batch_fit.py SWEEP.json ...
"""
import json
import math
import os
import sys

sys.path.insert(0, os.environ.get("SGEMM_ROOT", "."))
from sgemm import calibrate, cost  # noqa: E402
from sgemm.tune import DEVICE_MODELS  # noqa: E402

dev = DEVICE_MODELS["h100"]
cal = cost.calibration(dev)
for f in sys.argv[1:]:
    by = {}
    for prob, spec, p, sec in calibrate.points(json.load(open(f))["rows"]):
        if spec.name in ("gemv_wide", "gemv", "narrow", "small", "double_buffer"):
            key = (spec.name, "batched" if prob.batch > 1 else "single")
            by.setdefault(key, []).append(math.log(sec / cost.predict(spec, p, prob, dev,
                                                                     cal)["total"]))
    print(f.rsplit("/", 1)[-1])
    for k, v in sorted(by.items()):
        print(f"   {k[0]} {k[1]}: {len(v)} points, measured / predicted geomean "
              f"{math.exp(sum(v) / len(v)):.2f}")
