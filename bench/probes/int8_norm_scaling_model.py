"""Probe (CPU): what scaling each row by a bound on its 2-norm instead of its
largest entry would do to the integer engine's accuracy with 8 and 7
moduli.  Not part of the package; no GPU.

Why: at 16384^3 the engine is held at the 700 W cap and 7 residue planes
take 0.86 of 8 planes' time (int8-plane-count-h200-2026-11-29.json), but
the engine scales row i of A so that max|A'_i.| < 2^alpha with alpha + beta
= log2(P) - 1 - log2(K) (moduli.budget): one modulus fewer costs ~8 bits,
~16x the error, above cuBLAS FP32's.  The exactness condition |C'_ij| < P/2
also holds when ||A'_i||_2 ||B'_j||_2 < P/2 (Cauchy-Schwarz), with no log2(K)
term; for N(0,1) rows that buys ~2 log2(max/rms) ~ 4 bits.

Norm scaling modelled here (what the kernels would compute, exactly): E_i
the binade of row i's largest entry, S_i = sum_k max(ceil(x^2 2^(20 - 2 E_i)), 1)
over the nonzero x (an integer upper bound on ||x||^2 / 4^E_i in units of
2^-20), t_i the least t with 4^t >= S_i, D_i = t_i - 10 >= 0, so ||A_i.|| <=
2^(E_i + D_i); mu_i = alpha - E_i - D_i with alpha + beta = bitlen(P/2) - 2
(one bit for the rounding of ||A'||), each at most 30 (the residue kernels'
32-bit range).  The scaling check (bound.ratio) then sees 2^-(alpha + 1 - max D).

    python bench/probes/int8_norm_scaling_model.py > log

Prints, per input class and K (128 x K times K x 128, seed 0): the median
elementwise relative error and the largest componentwise error against an
fp64 product, for the product through max scaling and norm scaling at 8 and
7 moduli (the exact integer product of the scaled operands, as the engine
computes it), NumPy's float32 matmul beside them (not cuBLAS; cuBLAS FP32's
are in docs/accuracy.md), and whether the scaling check passes.
"""
import numpy as np

from sgemm.int8x import bound as BD
from sgemm.int8x import moduli as M

M_, N_ = 128, 128


def max_scaling(x, axis, bits):
    amax = np.max(np.abs(x), axis=axis)
    return np.where(amax > 0, bits - np.frexp(amax)[1], 0), 0


def norm_scaling(x, axis, bits):
    xa = np.abs(x.astype(np.float64))
    amax = xa.max(axis=axis)
    e = np.frexp(amax)[1] - 1
    terms = np.where(xa != 0, np.maximum(np.ceil(xa * xa * np.ldexp(1.0, 20 - 2 * np.expand_dims(e, axis))), 1), 0)
    s = terms.sum(axis=axis).astype(np.int64)
    d = np.array([((int(v) - 1).bit_length() + 1) // 2 - 10 if v else 0 for v in s])
    return np.where(amax > 0, bits - e - d, 0), int(d.max())


def exact_product(a, b, mu, nu, p):
    """The scaled operands' integer product (float64 pieces, each exact),
    checked against P/2, scaled back."""
    ai = np.rint(np.ldexp(a.astype(np.float64), mu[:, None]))
    bi = np.rint(np.ldexp(b.astype(np.float64), nu[None, :]))
    a1 = np.floor(ai / 65536)
    a0 = ai - a1 * 65536
    b1 = np.floor(bi / 65536)
    b0 = bi - b1 * 65536
    c = np.ldexp(a1 @ b1, 32) + np.ldexp(a1 @ b0 + a0 @ b1, 16) + a0 @ b0
    assert np.abs(c).max() < p / 2
    return np.ldexp(c, -(mu[:, None] + nu[None, :]))


def operands(rng, cls, k):
    if cls == "U(0,1)":
        return rng.random((M_, k)), rng.random((k, N_))
    a, b = rng.standard_normal((M_, k)), rng.standard_normal((k, N_))
    if cls.startswith("wide"):
        s = int(cls.split()[-1])
        a, b = a * 2.0 ** rng.uniform(-s, s, a.shape), b * 2.0 ** rng.uniform(-s, s, b.shape)
    return a, b


def main():
    rng = np.random.default_rng(0)
    print("class | K | numpy fp32 | max 8 | norm 8 | max 7 | norm 7   "
          "(median rel / max componentwise; check ok or FAIL; D = max gap)")
    for cls in ("N(0,1)", "U(0,1)", "wide 10"):
        for k in (64, 1024, 4096, 16384):
            a, b = (x.astype(np.float32) for x in operands(rng, cls, k))
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            ref, den = a64 @ b64, np.abs(a64) @ np.abs(b64)
            sa, sb = BD.summarize(a, 1), BD.summarize(b, 0)

            def err(c):
                r = np.abs(c - ref)
                return f"{np.median(r / np.abs(ref)):.2e} / {np.max(r / den):.2e}"
            cells = [err((a @ b).astype(np.float64))]
            for n in (8, 7):
                p = M.product(M.moduli(n))
                bud = M.budget(n, k)
                mu, _ = max_scaling(a, 1, bud.alpha)
                nu, _ = max_scaling(b, 0, bud.beta)
                ok = BD.ratio(sa, sb, k, bud.alpha, bud.beta) <= BD.limit(k)
                cells.append(f"{err(exact_product(a, b, mu, nu, p))} {'ok' if ok else 'FAIL'}")
                tot = (p // 2).bit_length() - 2
                al, be = min(30, tot - tot // 2), min(30, tot // 2)
                mu, da = norm_scaling(a, 1, al)
                nu, db = norm_scaling(b, 0, be)
                ok = BD.ratio(sa, sb, k, al + 1 - da, be + 1 - db) <= BD.limit(k)
                cells.append(f"{err(exact_product(a, b, mu, nu, p))} {'ok' if ok else 'FAIL'} D{max(da, db)}")
            print(f"{cls} | {k} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
