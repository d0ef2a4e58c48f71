"""Probe (CPU, no GPU): the problems of the judge's distribution (this
probe's own seed, never a judge run's) whose ieee pick on an H100 changes
when rung 9 decides float4 access per operand (Problem.align_mask), against
the same model with one flag for every operand (the spec's ``align_mask``
switched off in this process: all or nothing, as before).  Prints each move
with both predictions and the alignment of A, B and C; writes the moved
problems as JSON on stdout, the input tree_ab.py takes as PROBS.

    python bench/probes/align_moved.py N SEED > moved.json
"""
import json
import random
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1] / ".judge"), str(HERE)]
if "cupy" not in sys.modules:
    sys.modules["cupy"] = types.ModuleType("cupy")     # draw() needs none of it
import judge  # noqa: E402
from model_picks import canonical  # noqa: E402

from sgemm import cost, planner  # noqa: E402
from sgemm.kernels import registry  # noqa: E402
from sgemm.tune import DEVICE_MODELS  # noqa: E402


RULE = registry.KERNELS["double_buffer"].extra["align_mask"]


def pick(prob, dev, cal, per_operand: bool):
    registry.KERNELS["double_buffer"].extra["align_mask"] = RULE if per_operand else False
    return planner._candidates(prob, dev, "ieee", cal, False)[0]


def launched(c, prob, per_operand: bool) -> int:
    """The alignment argument rung 9's GEMM launch gets (split-K slices
    write the workspace, whose rows are aligned; a packed plan's copies are)."""
    if c.spec.name != "double_buffer" or c.pack:
        return -1
    two = cost.two_launch_split(c.spec, c.params)
    mask = prob.align_mask | (4 if two else 0)
    return mask if per_operand and RULE(c.params) else 7 if mask == 7 else 0


def main(n: int, seed: int) -> None:
    dev = DEVICE_MODELS["h100"]
    cal = cost.calibration(dev)
    r, out, counts = random.Random(seed), [], {}
    names, weights = zip(*judge.CATEGORIES)
    for _ in range(n):
        p = judge.draw(r, r.choices(names, weights)[0])
        while not judge.fits(p):
            p = judge.draw(r, p["cat"])
        prob = canonical(p)
        a, b = pick(prob, dev, cal, False), pick(prob, dev, cal, True)
        if (a.spec.name, a.params, a.pack) == (b.spec.name, b.params, b.pack) and (
                launched(a, prob, False) == launched(b, prob, True)):
            continue            # the same plan and the same instantiation
        counts[p["cat"]] = counts.get(p["cat"], 0) + 1
        out.append({k: p[k] for k in ("m", "n", "k", "ta", "tb", "batch")})
        q, w = a.params, b.params
        mask = "".join(x if prob.align_mask & bit else "-" for x, bit in zip("ABC", (1, 2, 4)))
        print(f"{p['cat']:8s} {p['batch']}x{p['m']}x{p['n']}x{p['k']} {p['ta']:d}{p['tb']:d} "
              f"(canonical {mask}): {a.spec.name} {q.BM}x{q.BN} s{q.split_k}"
              f"{' pack' if a.pack else ''} {a.predicted * 1e6:.1f} us -> {b.spec.name} "
              f"{w.BM}x{w.BN} s{w.split_k}{' pack' if b.pack else ''} "
              f"{b.predicted * 1e6:.1f} us", file=sys.stderr)
    print(f"{len(out)} of {n} changed: {counts}", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
