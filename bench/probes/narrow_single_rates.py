"""Probe (CPU): 43_narrow.cu with rates of its own for single products
(config keys ending ``:1``, patched into sgemm/cost.py's config_key in this
process), fitted on the committed H200 sweeps' single products; configs
with too few single-product timings keep their batch rate under the ``:1``
key.  Tried and not adopted (docs/notes/dispatch.md, 2026-11-29).

Why: narrow's rates were fitted on batches of small products; on the
single products of the committed H200 sweeps the candidates measured
0.92-1.21x their prediction (geometric mean per orientation and
alignment), p90 up to 2.2x, where batches measured 0.95-1.03x apart from
4 points (``--check``).

``FIT.json`` is the shipped calibration with the ``:1`` rates added (the
A/B, bench/results/narrow-single-ab-h200-2026-11-29.json, ran a tree with
this key in config_key and these rates shipped).

    python bench/probes/narrow_single_rates.py FIT.json            # fit every sweep
    python bench/probes/narrow_single_rates.py --holdout           # fit one half, judge the other
    python bench/probes/narrow_single_rates.py --check [CAL.json]  # measured / predicted by group
"""
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_picks import label  # noqa: E402

from sgemm import calibrate, cost, planner  # noqa: E402
from sgemm.calibrate import problem_of  # noqa: E402
from sgemm.tune import DEVICE_MODELS  # noqa: E402

R = "bench/results/"
HALVES = ([R + "narrow-single-sweep-h200-2026-11-29.json",
           R + "narrow-single-sweep-h200-2026-11-29-2.json"],
          [R + "gemv-strip-sweep-h200-2026-11-29.json",
           R + "gemv-strip-sweep-h200-2026-11-29-big.json",
           R + "calibration-sweep-h200-2026-11-29.json"])
BATCHES = [R + "narrow-groups-sweep-h200-2026-11-29.json",
           R + "narrow-groups-sweep-h200-2026-11-29-2.json",
           R + "narrow-side8-sweep-h200-2026-11-29.json"]
SHIPPED = Path(__file__).resolve().parents[2] / "sgemm" / "data" / \
    "cost-nvidia-h100-80gb-hbm3-sm132-sm_90a.json"
DEV = DEVICE_MODELS["h200"]
_config_key = cost.config_key


def config_key(spec, p, prob) -> str:
    """cost.config_key with ``:1`` on narrow's single products."""
    key = _config_key(spec, p, prob)
    return key + ":1" if spec.name == "narrow" and prob.batch == 1 else key


cost.config_key = config_key


def single_rows(paths) -> list:
    """The sweeps' single products, narrow's timings only (the rates fitted here)."""
    out = []
    for p in paths:
        for r in json.load(open(p))["rows"]:
            if r.get("batch", 1) == 1:
                c = {k: v for k, v in r["cands"].items() if k.startswith("narrow:")}
                if c:
                    out.append(dict(r, cands=c))
    return out


def copied(shipped: dict) -> dict:
    """The shipped document with each narrow batch rate also under its ``:1``
    key (where it has none): what the planner weighed single products by
    before they had rates of their own."""
    doc = json.loads(json.dumps(shipped))
    for key in [k for k in doc["rates"] if k.startswith("narrow:") and not k.endswith(":1")]:
        doc["rates"].setdefault(key + ":1", doc["rates"][key])
    return doc


def fitted(paths, shipped: dict) -> dict:
    """A calibration document: the shipped one with every narrow ``:1`` rate
    fitted on ``paths`` (or copied from the batch rate)."""
    cal, errs = calibrate.fit(single_rows(paths), DEV)
    doc = copied({**shipped, "rates": {k: v for k, v in shipped["rates"].items()
                                       if not (k.startswith("narrow:") and k.endswith(":1"))}})
    for key, rate in cal.rates.items():
        doc["rates"][key] = cost._rate_json(rate)
        doc["fit_mean_abs_log_error"][key] = round(errs[key], 3)
    return doc


def regret(paths, doc: dict) -> tuple:
    """(geometric mean of the pick's measured time over the fastest FFMA
    candidate's, of cuBLAS's over the pick's) on the sweeps at ``paths``."""
    cal = cost.Calibration.from_json(doc, "probe")
    logs, cub = [], []
    for p in paths:
        for r in json.load(open(p))["rows"]:
            t = {k: v["gpu_ms"] for k, v in r["cands"].items()
                 if "gpu_ms" in v and not k.startswith("tf32")}
            prob = problem_of(r["canon"])
            pick = next((label(c) for c in planner.candidates(prob, DEV, "ieee", cal=cal)
                         if not c.pack and label(c) in t), None)
            if pick is None:
                continue
            logs.append(math.log(t[pick] / min(t.values())))
            cub.append(math.log(r["cublas_ms"] / t[pick]))
    g = lambda xs: math.exp(sum(xs) / len(xs))  # noqa: E731
    return len(logs), g(logs), g(cub)


def check(doc: dict, paths) -> None:
    cal = cost.Calibration.from_json(doc, "probe")
    groups = {}
    for path in paths:
        for r in json.load(open(path))["rows"]:
            prob = problem_of(r["canon"])
            t = {k: v["gpu_ms"] for k, v in r["cands"].items() if "gpu_ms" in v}
            for c in planner.candidates(prob, DEV, "ieee", cal=cal, everything=True):
                if c.spec.name != "narrow" or c.pack or label(c) not in t:
                    continue
                q = c.params
                swap = q.BM < q.BN
                x_wide = prob.tb if swap else not prob.ta
                g = ("single" if prob.batch == 1 else "batch", "narrow m" if swap else "narrow n",
                     "X along rows" if x_wide else "X along k",
                     "aligned" if prob.aligned else "unaligned")
                groups.setdefault(g, []).append(t[label(c)] * 1e-3 / c.predicted)
    for g, v in sorted(groups.items()):
        v = sorted(v)
        print(f"{' / '.join(g):45s} {len(v):5d} measured/predicted "
              f"{math.exp(sum(map(math.log, v)) / len(v)):.2f} p90 {v[9 * len(v) // 10]:.2f}")


if __name__ == "__main__":
    a = sys.argv[1:]
    shipped = copied(json.loads(SHIPPED.read_text()))
    if a[:1] == ["--check"]:
        doc = json.loads(Path(a[1]).read_text()) if len(a) > 1 else shipped
        check(doc, HALVES[0] + HALVES[1] + BATCHES)
    elif a[:1] == ["--holdout"]:
        for fit_on, judge_on in (HALVES, HALVES[::-1]):
            doc = fitted(fit_on, shipped)
            for name, d in (("shipped", shipped), ("fitted", doc)):
                n, reg, cub = regret(judge_on, d)
                print(f"fit on {len(fit_on)} sweeps, judged on {len(judge_on)}: {name:8s} "
                      f"{n} problems, pick / fastest {reg:.3f}, cuBLAS / pick {cub:.3f}")
    elif a:
        doc = fitted(HALVES[0] + HALVES[1], shipped)
        Path(a[0]).write_text(json.dumps(doc, indent=1))
        print(f"wrote {a[0]}")
    else:
        sys.exit(__doc__)
