"""What the integer engine's pipeline costs with 7 moduli, for precision="fp32"'s
choice between it and tf32x3 (route.weigh weighs it against the cost
model's tf32x3 time).

    t = T0 + CONVERT (m + n) K16 + GEMM 7 waves BM BN K16 + GARNER m n

one term per step (runner.py): the fixed cost of a call (its launches, the
memset and copies, the one synchronisation), the two conversions (each
operand's rows read and 7 residue planes written: instruction-bound, so per
element), the INT8 GEMMs (7 planes of whole waves of BM x BN tiles of the
default wgmma config, K16 = k padded to 16, at a per-SM rate) and Garner
(per element of C).  The constants are a relative least-squares fit to 19
timings of precision="fp32" through sgemm.gemm (7 moduli, N(0,1) data,
calls back to back) on an H200: squares 2048-16384, 4096 x 4096 x 32768
and ten rectangles (bench/results/int8-crossover-moduli-h200-2026-11-29.json,
int8-fp32-moduli-h200-2026-11-29.json, int8-fp32-shapes-h200-2026-11-29.json).
The fit is within 10 % on 17 of them and within 17 % on all; 16384^3 runs
9 % over it, held at the power cap.  The H100 has the same SMs; other
sm_90a parts scale through their SM count.
"""
from __future__ import annotations

import math

from ..kernels import utility as U

T0 = 5.35e-5                 # s a call
CONVERT = 4.83e-12           # s per element of A and B (rows x K16), both conversions
GEMM = 1.68e-13              # s per MAC of a wave's tile on one SM, 7 planes counted apart
GARNER = 1.33e-11            # s per element of C
MODULI = U.INT8X_FEWER_MODULI   # the constants above are this count's
TILE = (128, 256)            # BM x BN of the default int8_wgmma config (kernels/utility.py)


def predict(m: int, n: int, k: int, sms: int) -> float:
    """Seconds for one call of the 7-moduli pipeline on an m x n x k product
    (sms: the device's SM count)."""
    kp = -(-max(k, 1) // 16) * 16
    bm, bn = TILE
    waves = math.ceil(math.ceil(m / bm) * math.ceil(n / bn) / sms)
    return T0 + CONVERT * (m + n) * kp + GEMM * MODULI * waves * bm * bn * kp + GARNER * m * n
