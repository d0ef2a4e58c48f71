"""Whether the per-row and per-column scaling holds a product to FP32
accuracy: a rigorous componentwise error bound from a few statistics per row
of A and column of B, gathered while the conversion reads them.

The only inexact step of the engine is the scaling (reference.py): A' =
rint(A 2^mu_i) leaves |A_ik - A'_ik 2^-mu_i| <= h_i = 2^(-mu_i - 1), and
B likewise (g_j).  So the computed product's error is, entry by entry,

    |C - AB|_ij <= h_i |B_.j|_1 + g_j |A_i.|_1 + k h_i g_j  (+ FP32's final rounding),

the truncation bound of the Ozaki-II error analysis (Uchino, Ozaki and
Imamura, arXiv 2602.02549: the accuracy degrades when the exponents of a
row or column spread wide).  Wide rows break the componentwise measure
(|A||B|)_ij: the bound's scale is the row's *largest* entry, while
(|A||B|)_ij may consist of its small ones.  A GEMM of |A||B| would give the
exact ratio but costs as much as the product; instead a pigeonhole lower
bound needs only counts: if n_i entries of row i have |A_ik| >= tau_i and
m_j entries of column j have |B_kj| >= sigma_j, at least n_i + m_j - k
indices have both, so (|A||B|)_ij >= (n_i + m_j - k) tau_i sigma_j.

Thresholds are binades below the largest entry's: tau_i = 2^(E_i - T) for
T in THRESHOLDS, E_i the binade of max|A_i.| (2^E_i <= max < 2^(E_i+1)).
The scaling sets mu_i = min(alpha - D_i, 30) - E_i, D_i the gap of the
row's norm bound (reference.norm_bounds: ||A_i.|| <= 2^(E_i + D_i)), so
h_i / tau_i = 2^(T - min(alpha - D_i, 30) - 1) <= 2^(T - a) with a =
min(alpha - D_A, 30) + 1, D_A the largest gap over A's rows (B likewise).  Per operand
the kernels keep D, R = max over rows of |A_i.|_1 / 2^E_i (<= 2k) and, for
each T, the least count over rows; all-zero rows are left out (they add no
error).  Taking each row and column at its worst (a sum of maxima bounds
the maximum of the sum), for every (i, j):

    |C - AB|_ij / (|A||B|)_ij <= 2^(TA + TB) (R_B 2^-a + R_A 2^-b + k 2^-(a+b))
                                 / (nA(TA) + nB(TB) - k)

for any pair (TA, TB) with a positive denominator.  The engine's result is
trusted when the least such value is at most k u (u = 2^-24): its error is
then within (k + 1) u (|A||B|)_ij, the classical bound of an FP32 dot
product (gamma_k = k u / (1 - k u)) with one rounding more.  Otherwise the
call falls back (sgemm/int8x/route.py).  The test is sound but not tight:
it may refuse products the engine would have got right -- operands with
many zeros or with a few entries far above the rest of their row, and
short K (the pigeonhole needs most entries of a row within a few binades of
its largest) -- never the reverse.

Subnormal and zero entries are never counted (conservative).  The sums
|A_i.|_1 / 2^E_i are kept as integers of 2^-20, each term rounded up, so R
is an upper bound and the same whatever order the kernels add in: the
decision is deterministic.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from . import moduli as M
from . import reference as R


class ScalingLoss(ValueError):
    """The per-row and per-column scaling cannot be shown to keep FP32's
    componentwise accuracy for these operands (wide exponent ranges within a
    row of A or a column of B): the FP32 path must take the call."""

    def __init__(self, msg: str, ratio: float, limit: float):
        super().__init__(msg)
        self.ratio, self.limit = ratio, limit


class Int8xAccuracyWarning(UserWarning):
    """precision="int8x" ran on operands whose scaling check failed: the
    result may lose accuracy on entries far below their row's or column's
    largest (precision="fp32" falls back to tf32x3 instead)."""

THRESHOLDS = (0, 1, 2, 4, 7, 11)    # T: entries within T binades below the largest's binade
U = 2.0 ** -24                      # FP32's unit roundoff
UNIT_BITS = 20                      # |x_i.|_1 / 2^E_i is summed in steps of 2^-20, rounded up
COUNT_NONE = 2 ** 32 - 1            # the kernels' count before any nonzero row
WORDS = 3 + len(THRESHOLDS)         # an operand's summary: [flag, units, counts..., gap] (uint64)


@dataclass(frozen=True)
class Summary:
    """One operand's statistics (rows of A, or columns of B)."""
    units: int                # max over nonzero rows of sum ceil(|x| 2^(20 - E_i))
    counts: tuple             # per THRESHOLDS[q]: min over nonzero rows of #{|x| >= 2^(E_i - T)}
    bad: bool = False         # Inf or NaN seen
    gap: int = 0              # max over nonzero rows of max(D_i, 0) (reference.norm_bounds)

    @property
    def r(self) -> float:
        """An upper bound on max over rows of |x_i.|_1 / 2^E_i."""
        return self.units * 2.0 ** -UNIT_BITS

    @classmethod
    def from_words(cls, words) -> "Summary":
        """From the kernels' words [non-finite flag, units, count_0, ..., gap]."""
        w = [int(x) for x in words]
        return cls(w[1], tuple(w[2:WORDS - 1]), bool(w[0]), w[WORDS - 1])

    @classmethod
    def initial_words(cls) -> list:
        """What the summary holds before the kernels run."""
        return [0, 0] + [COUNT_NONE] * len(THRESHOLDS) + [0]


def binade(amax: np.ndarray) -> np.ndarray:
    """E with 2^E <= amax < 2^(E + 1) for a normal float32 amax; -127 for a
    subnormal or zero one (the kernels read it from the float's exponent
    bits)."""
    bits = np.asarray(amax, np.float32).view(np.uint32)
    return (bits >> 23).astype(np.int64) - 127


def summarize(x: np.ndarray, axis: int) -> Summary:
    """The statistics of x's rows (axis=1) or columns (axis=0), exactly as
    the conversion kernels gather them (40_int8x.cu, i8x::RowStats)."""
    x = np.abs(np.asarray(x, np.float32))
    if axis == 0:
        x = x.T
    if not np.isfinite(x).all():
        return Summary(0, (COUNT_NONE,) * len(THRESHOLDS), True)
    amax = x.max(axis=1) if x.shape[1] else np.zeros(x.shape[0], np.float32)
    live = amax > 0
    if not live.any():
        return Summary(0, (COUNT_NONE,) * len(THRESHOLDS))
    x, e = x[live], binade(amax[live])
    units = np.ceil(np.ldexp(x.astype(np.float64), (UNIT_BITS - e)[:, None])).sum(axis=1)
    counts = []
    for t in THRESHOLDS:
        tau = np.ldexp(1.0, np.maximum(e + 127 - t, 1) - 127)[:, None]
        counts.append(int((x >= tau).sum(axis=1).min()))
    _, gaps = R.norm_bounds(x, 1)
    return Summary(int(units.max()), tuple(counts), gap=max(int(gaps.max()), 0))


def ratio(sa: Summary, sb: Summary, k: int, alpha: int, beta: int) -> float:
    """The least bound over threshold pairs on max_ij |C - AB|_ij / (|A||B|)_ij
    from the scaling alone (inf where no pair's counts overlap), for the
    budget's alpha and beta."""
    ra, rb = sa.r, sb.r                             # upper bounds already (rounded up)
    # bits of each row's largest entry: min(alpha - D_i, ENTRY_BITS), plus one
    # for h_i = 2^-(mu_i + 1) (reference.exponents)
    alpha = min(alpha - sa.gap, M.ENTRY_BITS) + 1
    beta = min(beta - sb.gap, M.ENTRY_BITS) + 1
    # Python floats: the same IEEE operations as NumPy's scalars at a tenth
    # of the cost, on the pipeline's path from its synchronisation to Garner
    num = rb * 2.0 ** -alpha + ra * 2.0 ** -beta + k * 2.0 ** -(alpha + beta)
    best = math.inf
    for qa, ta in enumerate(THRESHOLDS):
        for qb, tb in enumerate(THRESHOLDS):
            over = sa.counts[qa] + sb.counts[qb] - k
            if over <= 0:
                continue
            best = min(best, math.ldexp(num, ta + tb) / over)
    return best


def limit(k: int) -> float:
    """The largest ratio trusted: k u (the result is then within (k + 1) u
    |A||B|, FP32's classical dot-product bound and one rounding)."""
    return k * U


def holds(sa: Summary, sb: Summary, k: int, alpha: int, beta: int) -> bool:
    """Whether the engine's result provably keeps FP32's componentwise bound.
    Operands without a nonzero row or column always hold (the product is 0
    or exact)."""
    if sa.counts[0] == COUNT_NONE or sb.counts[0] == COUNT_NONE:
        return True
    return ratio(sa, sb, k, alpha, beta) <= limit(k)


def exact_ratio(a: np.ndarray, b: np.ndarray, mu: np.ndarray, nu: np.ndarray) -> float:
    """max_ij of the truncation bound h_i |B_.j|_1 + g_j |A_i.|_1 + k h_i g_j
    over (|A||B|)_ij, in float64 (tests: what `ratio` must bound from above;
    O(m n k))."""
    a = np.abs(np.asarray(a, np.float64))
    b = np.abs(np.asarray(b, np.float64))
    k = a.shape[1]
    h = np.ldexp(1.0, -mu - 1)[:, None]
    g = np.ldexp(1.0, -nu - 1)[None, :]
    num = h * b.sum(axis=0)[None, :] + g * a.sum(axis=1)[:, None] + k * h * g
    den = a @ b
    live = den > 0
    num = np.where(a.any(axis=1)[:, None] & b.any(axis=0)[None, :], num, 0.0)
    if not live.any():
        return 0.0
    if (num[~live] > 0).any():
        return float("inf")
    return float(np.max(num[live] / den[live]))


def report_loss(sa: Summary, sb: Summary, k: int, bud, on_loss: str) -> None:
    """Raise ScalingLoss (on_loss="raise") or warn Int8xAccuracyWarning
    ("warn") for a failed check, with the bound and the limit."""
    r, lim = ratio(sa, sb, k, bud.alpha, bud.beta), limit(k)
    msg = (f"int8x: the per-row/column scaling cannot guarantee FP32 accuracy here: rows of a "
           f"or columns of b span too wide an exponent range (error bound "
           f"{r:.2g} x |a||b| against FP32's {lim:.2g} at k = {k}); use precision='fp32' or "
           f"'tf32x3' for such data")
    if on_loss == "raise":
        raise ScalingLoss(msg, r, lim)
    warnings.warn(msg, Int8xAccuracyWarning, stacklevel=4)
