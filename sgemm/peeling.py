"""The peel scheme: the few rows or columns past whole tiles become strips.

Why: 1025 rows are 5 rows of 256-row tiles.  The fifth does 1/256 of the
work of the others at the cost of a full block, and it pushes the block
count past what fits a wave: 1025 x 1023 is 40 tiles of 256x128 (one wave
needs 3 K-slices of 341), 1024 x 1023 is 32 (4 slices of 256); 2049 x 2049
is 9 x 17 = 153 tiles, two waves, where 2048 x 2048 is 128, one.  cuBLAS
sizes like these ran at 0.80x (1023x1025x1021, H200 public suite,
2026-11-22; `python bench/suite.py`).

How: C is cut into the main block (m - rm) x (n - rn), whole 128-multiples
plus whatever the dispatcher does with them, a bottom strip of rm <= 16
rows and a right strip of rn <= 16 columns.  Each piece is an ordinary
problem on views of A, B and C (pointer offsets, the same leading
dimensions): the main block goes through the dispatcher (tuned table,
heuristic, pack), the strips take the gemv path (m or n <= 16).  The pieces
write disjoint parts of C, one after the other on the caller's stream.

When: FP32 auto, one problem, rm = m % 128 or rn = n % 128 in [1, PEEL_MAX],
the main block fills a wave of unsplit 256x128 tiles, and the wave model
(planner.best_time, the cost model's best plan) predicts the main block
plus the strips (memory-bound: each reads its big operand once) at least
10 % faster than the whole problem.  Measured: 2049^3 0.528 -> 0.430 ms, 2047x2049x2045 0.486 ->
0.421 ms; 1023x1025x1021 lost (84 against 79 us), hence the wave condition.
``SGEMM_PEEL=0`` turns it off; ``SGEMM_PEEL=always`` cuts wherever the
shape allows, whatever the model predicts (tests, A/B runs).
"""
from __future__ import annotations

import os

from . import epilogue
from .problem import Problem

PEEL_MAX = 16          # strips up to this wide take the gemv path
PEEL_UNIT = 128        # rung 9's tiles are 256x128 and 128x128: whole 128s
PEEL_GAIN = 0.9        # predicted time must fall by >= 10 %
PEEL_MIN_WAVE = 0.95   # main block: at least this many waves of unsplit large tiles


def enabled() -> bool:
    return os.environ.get("SGEMM_PEEL", "1") not in ("0", "off", "no", "")


def sub(prob: Problem, r0: int, mr: int, c0: int, nc: int) -> Problem:
    """Rows [r0, r0+mr) x columns [c0, c0+nc) of C as a problem on views."""
    a = prob.a + 4 * (r0 * prob.lda if prob.ta else r0)
    b = prob.b + 4 * (c0 if prob.tb else c0 * prob.ldb)
    c = prob.c + 4 * (r0 + c0 * prob.ldc)
    bias = epilogue.shift(prob.epi, prob.bias, r0, c0)   # the strip's own bias entries
    return Problem(**{**prob.__dict__, "m": mr, "n": nc, "a": a, "b": b, "c": c,
                      "bias": bias})


def remainders(prob: Problem) -> tuple[int, int]:
    rm, rn = prob.m % PEEL_UNIT, prob.n % PEEL_UNIT
    return (rm if rm <= PEEL_MAX else 0), (rn if rn <= PEEL_MAX else 0)


def parts(prob: Problem) -> tuple[Problem, list[Problem]]:
    """(main block, strips) of the cut; strips may be empty."""
    rm, rn = remainders(prob)
    mm, nn = prob.m - rm, prob.n - rn
    strips = []
    if rm:
        strips.append(sub(prob, mm, rm, 0, prob.n))       # bottom: all n columns
    if rn:
        strips.append(sub(prob, 0, mm, nn, rn))           # right: the main rows
    return sub(prob, 0, mm, 0, nn), strips


def strip_time(s: Problem) -> float:
    """A strip reads its big operand once (~3 TB/s) plus a launch."""
    return 4.0 * max(s.m, s.n) * s.k / 3e12 + 3e-6


def wants_peel(prob: Problem, dev, precision: str = "ieee") -> bool:
    if not enabled() or precision != "ieee" or prob.batch != 1:
        return False
    rm, rn = remainders(prob)
    if not (rm or rn) or prob.m - rm < PEEL_UNIT or prob.n - rn < PEEL_UNIT:
        return False
    from .planner import _named_spec, best_time
    big = _named_spec("double_buffer", dev)
    if big is None or "large" not in big.configs:
        return False
    # The main block must fill a wave of unsplit 256x128 tiles by itself: at
    # 1025x1023 (32 tiles, 4 K-slices of 256) the peeled plan measured 84 us
    # against 79 us for the whole problem, though the model said 64 vs 73
    # (H200, `sgemm tune` on both plans, 2026-11-22); at 2049^3 it gained.
    t = big.configs["large"]
    tiles = -(-(prob.m - rm) // t.BM) * -(-(prob.n - rn) // t.BN)
    if tiles < PEEL_MIN_WAVE * dev.sm_count:
        return False
    if os.environ.get("SGEMM_PEEL") == "always":      # forced where it applies (tests, A/B runs)
        return True
    main, strips = parts(prob)
    whole, cut = best_time(prob, dev), best_time(main, dev)
    if whole is None or cut is None:
        return False
    return cut + sum(strip_time(s) for s in strips) < PEEL_GAIN * whole


def peel_launches(prob: Problem, dev, precision: str, prepare, main_launches=None):
    """(spec, params, scheme, launches): the main block's plan (or the
    launches given, for the tuner's candidates), then each strip's."""
    main, strips = parts(prob)
    if main_launches is None:
        spec, params, scheme, out = prepare([main], dev, "auto", precision)
    else:
        spec = params = None
        scheme, out = "candidate", list(main_launches(main))
    for s in strips:
        out += prepare([s], dev, "auto", precision)[3]
    return spec, params, "peel+" + scheme, out
