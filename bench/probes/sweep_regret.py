"""Probe (CPU, no GPU): how well a calibration's cost model picks on a sweep
whose every candidate was timed.  Per calibration file: the model's pick
for each sweep row (its fastest predicted candidate among those the row
timed, ieee), the pick's measured time over the row's fastest (regret),
and cuBLAS's time over the pick's.  In-sample where the calibration was
fitted on the same sweep: a check of the fit, not a result to report.

    python bench/probes/sweep_regret.py [--ieee-only] [--worst N] [--sides] [--narrow-batches] SWEEP.json DEVICE CAL.json ...

--ieee-only: regret against the fastest FFMA (precision "ieee") candidate the row
timed, where a sweep timed tf32x3's kernels as well.
--worst N: also the N rows where cuBLAS leads the pick most, with the
pick's and the fastest candidate's predicted and measured us.
--sides: also cuBLAS over the pick by the narrow side (<= 8, 9-16, 17-32, wider).
--narrow-batches: the planner weighs 43_narrow.cu for batches only, as it
did before 2026-11-29 (this process only; bench/probes/narrow_single_sweep.py).

DEVICE: a device model of sgemm.tune (h100, h200).
"""
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_picks import label  # noqa: E402  (the sweep's key for a candidate without pack)

from sgemm import cost, planner  # noqa: E402
from sgemm.kernels import registry  # noqa: E402
from sgemm.calibrate import problem_of  # noqa: E402
from sgemm.tune import DEVICE_MODELS  # noqa: E402


IEEE_ONLY = False      # --ieee-only: the fastest FFMA candidate is the bar, not tf32x3's


def side_class(r) -> str:
    s = min(r["m"], r["n"])
    return "<=8" if s <= 8 else "9-16" if s <= 16 else "17-32" if s <= 32 else ">32"


def regret(rows, dev, cal, worst: int = 0, sides: bool = False) -> dict:
    logs, cub, near, miss, lines, by = [], [], 0, 0, [], {}
    for r in rows:
        t = {k: c["gpu_ms"] for k, c in r["cands"].items()
             if "gpu_ms" in c and (not IEEE_ONLY or registry.get(c["kernel"]).precision == "ieee")}
        if not t:
            continue
        prob = problem_of(r["canon"])
        pred = {}
        for c in planner.candidates(prob, dev, "ieee", cal=cal):
            if not c.pack and label(c) in t:
                pred.setdefault(label(c), c.predicted)
        if not pred:
            miss += 1
            continue
        pick, best = next(iter(pred)), min(t, key=t.get)
        lines.append((r["cublas_ms"] / t[pick],
                      f"{r['batch']} x {r['m']}x{r['n']}x{r['k']} {'NT'[r['ta']]}{'NT'[r['tb']]}: "
                      f"cuBLAS {r['cublas_ms'] * 1e3:.1f} us; pick {pick} predicted "
                      f"{pred[pick] * 1e6:.1f}, ran {t[pick] * 1e3:.1f}; fastest {best} "
                      + (f"predicted {pred[best] * 1e6:.1f}, " if best in pred else "not weighed, ")
                      + f"ran {t[best] * 1e3:.1f}"))
        x = t[pick] / min(t.values())
        logs.append(math.log(x))
        cub.append(math.log(r["cublas_ms"] / t[pick]))
        by.setdefault(side_class(r), []).append(cub[-1])
        near += x <= 1.05
    n = len(logs)
    for x, line in sorted(lines)[:worst]:
        print(f"  cuBLAS / pick {x:.2f}  {line}")
    if sides:
        print("  cuBLAS / pick by narrow side: " + ", ".join(
            f"{k} {math.exp(sum(v) / len(v)):.3f} ({len(v)})" for k, v in sorted(by.items())))
    return {"rows": n, "unmatched": miss, "regret_geomean": math.exp(sum(logs) / n),
            "regret_max": math.exp(max(logs)), "within_5pct": near,
            "cublas_over_pick_geomean": math.exp(sum(cub) / n),
            "cublas_over_pick_min": math.exp(min(cub))}


def main(argv) -> None:
    global IEEE_ONLY
    worst, sides = 0, False
    if argv[0] == "--ieee-only":
        IEEE_ONLY, argv = True, argv[1:]
    if argv[0] == "--worst":
        worst, argv = int(argv[1]), argv[2:]
    if argv[0] == "--sides":
        sides, argv = True, argv[1:]
    if argv[0] == "--narrow-batches":
        from sgemm.kernels import schemes
        schemes.narrow_applies = lambda prob: (prob.batch > 1 and min(prob.m, prob.n)
                                               <= schemes.NARROW_SIDES[-1])
        argv = argv[1:]
    rows = json.load(open(argv[0]))["rows"]
    dev = DEVICE_MODELS[argv[1]]
    for path in argv[2:]:
        cal = cost.Calibration.from_json(json.load(open(path)), path)
        r = regret(rows, dev, cal, worst, sides)
        print(f"{Path(path).name}: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                                      for k, v in r.items()))


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1:])
