"""The integer engine's pipeline emulated exactly in NumPy (no GPU).

    C = reference.gemm(a, b, n_moduli=8)             # float64 result
    parts = reference.decompose(a, b, n_moduli=8)    # every intermediate

Steps, each as a kernel will do it:

1. exponents: mu_i for row i of A, nu_j for column j of B, so that a bound
   on the row's 2-norm (norm_bounds) times 2^mu_i is at most 2^alpha (B
   likewise, beta: budget() in moduli.py) and the row's largest entry
   stays below 2^31;
2. A' = rint(A 2^mu), B' = rint(2^nu B): integers, ||A'_i.|| <= 2^alpha +
   sqrt(k)/2;
3. residues: A'_l = symmetric(A' mod p_l) as int8, B'_l likewise;
4. C'_l = A'_l B'_l exactly (int64 here; INT32 on the GPU, where K deeper
   than one exact INT32 sum is folded modulo p_l, so the GPU's planes are
   congruent to these and Garner's digits are the same);
5. C' from the C'_l mod p_l, exactly (symmetric mixed-radix digits here,
   the Chinese remainder theorem in 64-bit integers on the GPU), rounded
   once to float64;
6. C = C' 2^-(mu_i + nu_j), then alpha C + beta C_in.

Accuracy comes from step 2 alone: each entry of a row of A is rounded to a
multiple of 2^-mu_i, an absolute error of at most 2^(-alpha-1) of the
row's norm bound (B: of the column's); a row of k entries of similar size
has a norm near sqrt(k) times its entries, which is how the error grows with
k, as FP32's does.  Rows or columns whose
entries span a wide range lose the small entries' relative accuracy (the
scaling is per row and column, not per entry); bound.py decides from a few
statistics per row and column whether the result keeps FP32's
componentwise bound (the engine checks that on the GPU).  Non-finite inputs
have no integer form: decompose() raises, and the engine sends such calls
to FP32.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import moduli as M


@dataclass
class Parts:
    ms: tuple
    budget: M.Budget
    mu: np.ndarray            # (m,) exponents of A's rows
    nu: np.ndarray            # (n,) exponents of B's columns
    a_int: np.ndarray         # (m, k) int64, |.| <= 2^alpha
    b_int: np.ndarray         # (k, n) int64
    a_res: list               # per modulus, (m, k) int8
    b_res: list               # per modulus, (k, n) int8
    c_res: list               # per modulus, (m, n) int64: the exact INT8 products
    digits: list              # per modulus, (m, n) int64 mixed-radix digits


def norm_sums(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """(E, S) per row (axis=1) or column (axis=0), as norm_bounds defines
    them (S is what 40_int8x.cu sums into a row's norm word)."""
    x = np.abs(np.asarray(x, np.float32))
    if axis == 0:
        x = x.T
    rows = x.shape[0]
    if x.shape[1] == 0:
        return np.full(rows, -127, np.int64), np.zeros(rows, np.int64)
    e = (x.max(axis=1).view(np.uint32) >> 23).astype(np.int64) - 127
    x64 = x.astype(np.float64)
    units = np.ceil(x64 * x64 * np.ldexp(1.0, 20 - 2 * e)[:, None])
    return e, np.where(x != 0, np.maximum(units, 1.0), 0.0).sum(axis=1).astype(np.int64)


def gap(s: int) -> int:
    """D = t - 10 for the least t with 4^t >= s (s >= 1; 0 for s = 0)."""
    return ((int(s) - 1).bit_length() + 1) // 2 - 10 if s else 0


def norm_bounds(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """(E, D) per row (axis=1) or column (axis=0): E the binade of the
    largest magnitude from its float bits (bound.binade: -127 for a
    subnormal or zero one), D the gap with ||x_i.||_2 <= 2^(E_i + D_i):
    S_i = sum over nonzero entries of max(ceil(x^2 2^(20 - 2 E_i)), 1), an
    integer upper bound on ||x_i.||^2 / 4^E_i in units of 2^-20, and D_i =
    t_i - 10 for the least t_i with 4^t_i >= S_i (0 for an all-zero row), as
    40_int8x.cu's sq_unit and norm_gap compute them (exactly: x^2 of a
    float32 is exact in float64)."""
    e, s = norm_sums(x, axis)
    return e, np.array([gap(v) for v in s], np.int64)


def exponents(x: np.ndarray, axis: int, bits: int) -> np.ndarray:
    """Per-row (axis=1) or per-column (axis=0) e = min(bits - D, ENTRY_BITS)
    - E (norm_bounds): 2^e times the row's norm bound is at most 2^bits, and
    2^e times its largest entry below 2^(ENTRY_BITS + 1) (0 for an all-zero
    row or column)."""
    e, d = norm_bounds(x, axis)
    live = np.max(np.abs(x), axis=axis) > 0 if x.shape[axis] else np.zeros(len(e), bool)
    return np.where(live, np.minimum(bits - d, M.ENTRY_BITS) - e, 0).astype(np.int64)


def to_integers(x: np.ndarray, e: np.ndarray, axis: int) -> np.ndarray:
    scale = e[:, None] if axis == 1 else e[None, :]
    return np.rint(np.ldexp(x.astype(np.float64), scale)).astype(np.int64)


def residues(x_int: np.ndarray, p: int) -> np.ndarray:
    r = np.mod(x_int, p)
    return np.where(r >= (p + 1) // 2, r - p, r).astype(np.int8)


def garner(c_res: list, ms: tuple) -> tuple[list, np.ndarray]:
    """Symmetric mixed-radix digits of C' from its residues, and C' in
    float64: the exact integer (Horner's rule from the top digit in int64,
    every partial value below |C'| / p_0 + 1 < 2^62) rounded once to
    nearest, as int8x_garner's CRT sum converts it (Python integers past
    8 moduli, where C' may pass int64)."""
    inv = M.garner_inverses(ms)
    digits = []
    for l, p in enumerate(ms):
        t = np.mod(c_res[l], p)
        for j in range(l):
            t = np.mod((t - digits[j]) * inv[l][j], p)
        digits.append(np.where(t >= (p + 1) // 2, t - p, t))
    wide = M.product(ms) >= 1 << 64
    x = np.asarray(digits[-1], object if wide else np.int64)
    for l in range(len(ms) - 2, -1, -1):
        x = np.asarray(digits[l], x.dtype) + (ms[l] if wide else np.int64(ms[l])) * x
    return digits, x.astype(np.float64)


def decompose(a: np.ndarray, b: np.ndarray, n_moduli: int = 8) -> Parts:
    a = np.asarray(a)
    b = np.asarray(b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"int8x: shapes {a.shape} and {b.shape} do not multiply")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("int8x: Inf or NaN in a or b has no integer form")
    k = a.shape[1]
    ms = M.moduli(n_moduli)
    bud = M.budget(n_moduli, max(k, 1))
    mu = exponents(a, 1, bud.alpha)
    nu = exponents(b, 0, bud.beta)
    a_int, b_int = to_integers(a, mu, 1), to_integers(b, nu, 0)
    a_res = [residues(a_int, p) for p in ms]
    b_res = [residues(b_int, p) for p in ms]
    c_res = [ar.astype(np.int64) @ br.astype(np.int64) for ar, br in zip(a_res, b_res)]
    digits, _ = garner(c_res, ms)
    return Parts(ms, bud, mu, nu, a_int, b_int, a_res, b_res, c_res, digits)


def gemm(a, b, c=None, alpha: float = 1.0, beta: float = 0.0, n_moduli: int = 8) -> np.ndarray:
    """alpha a @ b + beta c through the integer pipeline, in float64."""
    parts = decompose(a, b, n_moduli)
    _, x = garner(parts.c_res, parts.ms)
    out = np.ldexp(x, -(parts.mu[:, None] + parts.nu[None, :]))
    out = alpha * out
    if beta != 0.0 and c is not None:
        out = out + beta * np.asarray(c, dtype=np.float64)
    return out
