"""Probe (CPU): merge the rates of the configs whose key starts with PREFIX
from a fitted calibration (``python -m sgemm.calibrate --sweep ... --out
FIT.json``) into the shipped one, with a line naming the sweeps in its
``sweeps`` list; the other configs' rates stay as they are.

    python bench/probes/merge_rates.py FIT.json PREFIX "SOURCE LINE" [SHIPPED.json]
"""
import json
import sys
from pathlib import Path

SHIPPED = (Path(__file__).resolve().parents[2] / "sgemm" / "data"
           / "cost-nvidia-h100-80gb-hbm3-sm132-sm_90a.json")


def merge(fit: dict, shipped: dict, prefix: str, source: str) -> list[str]:
    keys = sorted(k for k in fit["rates"] if k.startswith(prefix))
    for k in keys:
        shipped["rates"][k] = fit["rates"][k]
        shipped["fit_mean_abs_log_error"][k] = fit["fit_mean_abs_log_error"][k]
    shipped["sweeps"].append(source)
    return keys


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    path = Path(sys.argv[4]) if len(sys.argv) > 4 else SHIPPED
    shipped = json.loads(path.read_text())
    keys = merge(json.loads(Path(sys.argv[1]).read_text()), shipped, sys.argv[2], sys.argv[3])
    path.write_text(json.dumps(shipped, indent=1))
    print(f"{len(keys)} rates merged into {path}")
