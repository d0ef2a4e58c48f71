"""Moduli, the exactness budget and the reconstruction's constants (pure
integer math).

Moduli: pairwise coprime integers <= 256, largest first, so that symmetric
residues (-p/2, p/2] fit int8 and the product P of N of them is as large as
N bytes allow (P ~ 2^(8N - small)).

Exactness: the integer product C' = A'B' is recovered exactly when every
|C'_ij| < P/2.  By Cauchy-Schwarz |C'_ij| <= ||A'_i.|| ||B'_.j||, so with
every row of A' under 2^alpha in 2-norm and every column of B' under 2^beta
(the scaling, reference.py, puts each row's norm bound at most at 2^alpha
before the rounding, which adds at most sqrt(k)/2 <= 2^(beta - 11)), alpha +
beta = bitlen(P/2) - 1 suffices: |C'| <= (1 + 2^-11)^2 2^(bitlen(P/2) - 1) <
(1 + 2^-9) 2^(bitlen(P/2) - 1), below P/2 with the margin crt_margin states.
No factor k: the depth costs bits only through the norms themselves, as
FP32's own error grows with them.  The INT8 products themselves are exact in INT32
while K * 128 * 128 < 2^31, i.e. K <= 131071 per accumulation; the GEMM
kernels reduce their accumulators modulo p after every such chunk, so any K
works.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from functools import lru_cache

MAX_MODULUS = 256
INT32_K_MAX = (2 ** 31 - 1) // (128 * 128)      # 131071: exact INT32 accumulation


@lru_cache(maxsize=None)
def moduli(n: int) -> tuple[int, ...]:
    """The n largest pairwise coprime integers <= 256, greedily from 256 down."""
    if n < 1:
        raise ValueError(f"moduli: n must be >= 1, got {n}")
    out: list[int] = []
    p = MAX_MODULUS
    while len(out) < n and p > 1:
        if all(math.gcd(p, q) == 1 for q in out):
            out.append(p)
        p -= 1
    if len(out) < n:
        raise ValueError(f"moduli: only {len(out)} pairwise coprime integers <= 256")
    return tuple(out)


def product(ms) -> int:
    return math.prod(ms)


# The scaling also keeps each row's largest entry below 2^(ENTRY_BITS + 1)
# = 2^31 (the residue kernels' 32-bit path): a row scaled by its norm
# bound alone could reach 2^alpha = 2^31 in one entry.
ENTRY_BITS = 30


@dataclass(frozen=True)
class Budget:
    """Bits of the row norms of A' and column norms of B' (below 2^alpha,
    2^beta) for n moduli at depth k."""
    n: int
    k: int
    alpha: int
    beta: int

    @property
    def bits(self) -> int:
        return self.alpha + self.beta


ROUNDING_SLACK = 11      # the rounding of k entries, sqrt(k)/2, stays below 2^(beta - 11)


def budget(n: int, k: int) -> Budget:
    """Split bitlen(P/2) - 1 bits between A' and B' (A' gets the odd one).
    Raises when the rounding of k entries could pass 2^-11 of the smaller
    share (sqrt(k)/2 > 2^(beta - 11): k > 2^34 for 7 moduli, 2^42 for 8)."""
    if k < 1:
        raise ValueError(f"budget: k must be >= 1, got {k}")
    free = (product(moduli(n)) // 2).bit_length() - 1
    alpha, beta = free - free // 2, free // 2
    if beta < ROUNDING_SLACK or k > 1 << (2 * (beta - ROUNDING_SLACK) + 2):
        raise ValueError(f"budget: {n} moduli leave {beta} bits for B', too few for k = {k}; "
                         f"use more moduli")
    return Budget(n, k, alpha, beta)


@lru_cache(maxsize=None)
def garner_inverses(ms: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """inv[l][j] = p_j^-1 mod p_l for j < l (Garner's constants)."""
    return tuple(tuple(pow(ms[j], -1, ms[l]) for j in range(l)) for l in range(len(ms)))


def symmetric(x: int, p: int) -> int:
    """The representative of x mod p in [-p/2, p/2) (for p = 256 that is
    int8's range, [-128, 127])."""
    r = x % p
    return r - p if r >= (p + 1) // 2 else r


def mixed_radix_range(ms: tuple[int, ...]) -> tuple[int, int]:
    """[lo, hi] of the integers Garner's symmetric digits represent: P
    consecutive integers around 0.  C' must lie inside it."""
    lo, w = 0, 1
    for p in ms:
        lo += -(p // 2) * w
        w *= p
    return lo, lo + w - 1


def crt_weights(ms: tuple[int, ...]) -> tuple[int, ...]:
    """E_l = (P / p_l) ((P / p_l)^-1 mod p_l) mod P: C' = sum_l r_l E_l mod P
    for the residues r_l = C' mod p_l (the Chinese remainder theorem)."""
    P = product(ms)
    return tuple((P // p) * pow(P // p, -1, p) % P for p in ms)


def crt_margin(ms: tuple[int, ...]) -> float:
    """The least distance from sum_l r_l E_l / P to a half-integer, over
    every C' the budget allows: 1/2 - max |C'| / P, max |C'| < (1 + 2^-9)
    2^(bitlen(P/2) - 1) (see the module's docstring).  int8x_garner's FP32
    quotient is within 2e-3 of that sum, so it rounds to the right q when
    this is larger."""
    P = product(ms)
    return 0.5 - (1 + 2.0 ** -9) * 2 ** ((P // 2).bit_length() - 1) / P


def residue_offset(p: int) -> int:
    """E = (128 - 2^31 - lo) mod p, lo = -(p // 2): for the biased u = v +
    2^31 of 40_int8x.cu's sym_residue_of, u - 128 + E is congruent to v - lo
    modulo p, so ((u - 128 + E) mod p) + lo is v's symmetric residue (the
    kernel computes E itself from its constant p; the emulation in
    tests/int8x/test_residues.py takes it from here)."""
    lo = -(p // 2)
    return (128 - (1 << 31) - lo) % p


def _i32(x: int) -> int:
    return x - (1 << 32) if x >= 1 << 31 else x


def kernel_constants(ms: tuple[int, ...]) -> list[int]:
    """The int array 40-42 read: p_0..p_{N-1} (the INT8 GEMMs read only
    these; the residue kernels divide by the same moduli as constants), then
    int8x_garner's E_l as (low, high) int32 words, E_l / P rounded to float
    (its bits), and P as (low, high)."""
    P = product(ms)
    if P >= 1 << 64 or crt_margin(ms) < 0.01:
        raise ValueError(f"int8x: {len(ms)} moduli: int8x_garner's 64-bit CRT needs P < 2^64 "
                         f"and a quotient margin >= 0.01 (at most 8 moduli)")
    words = lambda x: [_i32(x & 0xFFFFFFFF), _i32(x >> 32)]  # noqa: E731
    e = crt_weights(ms)
    f = [struct.unpack('<i', struct.pack('<f', x / P))[0] for x in e]   # rounded to nearest
    return list(ms) + [w for x in e for w in words(x)] + f + words(P)
