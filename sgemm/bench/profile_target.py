"""The program ``sgemm profile`` runs under Nsight Compute.

    python -m sgemm.bench.profile_target KERNEL M N K [--warmup W] [--ta] [--tb]

Plans once (compile and checks happen here, outside the profiled launch),
launches W warm-up GEMMs, then one more: ncu skips the first W launches of
the kernel (``--launch-skip W --launch-count 1``) and measures that last one.
Inputs are standard normal, never zeros.
"""
from __future__ import annotations

import argparse
import sys

WARMUP = 3


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m sgemm.bench.profile_target")
    p.add_argument("kernel")
    p.add_argument("m", type=int)
    p.add_argument("n", type=int)
    p.add_argument("k", type=int)
    p.add_argument("--warmup", type=int, default=WARMUP)
    p.add_argument("--ta", action="store_true")
    p.add_argument("--tb", action="store_true")
    a = p.parse_args(argv)

    import cupy
    import sgemm
    rng = cupy.random.default_rng(1)
    A = rng.standard_normal((a.k, a.m) if a.ta else (a.m, a.k), dtype=cupy.float32)
    B = rng.standard_normal((a.n, a.k) if a.tb else (a.k, a.n), dtype=cupy.float32)
    C = cupy.empty((a.m, a.n), dtype=cupy.float32)
    plan = sgemm.plan(A, B, C, kernel=a.kernel, trans_a=a.ta, trans_b=a.tb)
    for _ in range(a.warmup):
        plan.execute()
    cupy.cuda.Device().synchronize()
    plan.execute()                      # the launch ncu measures
    cupy.cuda.Device().synchronize()
    print(f"profile_target: {plan!r}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
