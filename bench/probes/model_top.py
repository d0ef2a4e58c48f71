"""Probe (CPU, no GPU): the cost model's three best candidates on an H100 (or
an H200), with their predicted us, for problems given as [batch, m, n, k, ta, tb] the
way the judge calls them (contiguous C-order operands).

    python bench/probes/model_top.py '[[2657, 10, 41, 144, 0, 0], ...]' [ieee|tf32x3] [h100|h200]
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_picks import canonical, label  # noqa: E402
from sgemm import planner  # noqa: E402
from sgemm.tune import DEVICE_MODELS  # noqa: E402


def show(rows, prec: str = "ieee", top: int = 3, device: str = "h100") -> None:
    dev = DEVICE_MODELS[device]
    for bt, m, n, k, ta, tb in rows:
        r = dict(batch=bt, m=m, n=n, k=k, ta=bool(ta), tb=bool(tb))
        cs = planner.candidates(canonical(r), dev, prec)[:top]
        print(bt, m, n, k, "NT"[bool(ta)], "NT"[bool(tb)],
              " | ".join(f"{label(c)} {c.predicted * 1e6:.1f}" for c in cs))


if __name__ == "__main__":
    show(json.loads(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "ieee",
         device=sys.argv[3] if len(sys.argv) > 3 else "h100")
