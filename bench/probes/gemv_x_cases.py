"""Probe (GPU): sgemm_gemv's ALIGNED instantiation on problems whose big
operand alone is 16-byte aligned (the small operand and C at odd pitches and
offsets), every case of tests/gpu/test_schemes_gpu.py's GEMV_X_ONLY with
beta 0 and 0.5 and a batched one, checked against fp64; the driver
compute-sanitizer runs (memcheck, racecheck, synccheck, initcheck).

    compute-sanitizer --tool memcheck python bench/probes/gemv_x_cases.py
"""
import sys

import cupy as cp
import numpy as np

import sgemm

CASES = [(99, 15, 404, False, False), (15, 100, 404, False, False),
         (3, 1413, 4036, False, True), (1412, 3, 4036, True, False),
         (7, 2472, 2048, True, True), (2471, 7, 264, False, False)]


def view(rng, shape, pad, off, batch=None):
    r, c = shape
    lead = (batch,) if batch else ()
    n = int(np.prod(lead)) * r * (c + pad)
    base = cp.asarray(rng.standard_normal(n + off + 1).astype(np.float32))
    return base[off:off + n].reshape(lead + (r, c + pad))[..., :c]


def main() -> int:
    rng, bad = np.random.default_rng(7), 0
    for (m, n, k, ta, tb) in CASES:
        for beta in (0.0, 0.5):
            big_a = m > n
            a = view(rng, (k, m) if ta else (m, k), 0 if big_a else 3, 0 if big_a else 1)
            b = view(rng, (n, k) if tb else (k, n), 3 if big_a else 0, 1 if big_a else 0)
            c = view(rng, (m, n), 1, 1)
            A = a.T.astype(cp.float64) if ta else a.astype(cp.float64)
            B = b.T.astype(cp.float64) if tb else b.astype(cp.float64)
            ref = 1.25 * (A @ B) + beta * c.astype(cp.float64)
            if beta == 0:
                c[...] = cp.nan
            p = sgemm.plan(a, b, c, alpha=1.25, beta=beta, trans_a=ta, trans_b=tb,
                           kernel="gemv")
            al = p.kernel.aligned_for(p.problems[0], p.params)
            out = p.execute()
            err = float(cp.linalg.norm(out - ref) / cp.linalg.norm(ref))
            ok = al and err < 2e-5 * max(1.0, (k / 4096) ** 0.5)
            bad += not ok
            print(f"{m}x{n}x{k} {'T' if ta else 'N'}{'T' if tb else 'N'} beta={beta}: "
                  f"aligned={al} err={err:.2e} {'ok' if ok else 'FAIL'}")
    # batched: 360 entries of 99x15x404 in the judge; 7 here, the big operand's
    # batch stride a multiple of 4, the others' not
    a = view(rng, (99, 404), 0, 0, batch=7)
    b = view(rng, (404, 15), 3, 1, batch=7)
    c = cp.full((7, 99, 16), cp.nan, dtype=cp.float32)[..., :15]
    out = sgemm.gemm_batched(a, b, c, kernel="gemv")
    ref = np.matmul(a.get().astype(np.float64), b.get().astype(np.float64))
    err = float(np.linalg.norm(out.get() - ref) / np.linalg.norm(ref))
    bad += not err < 2e-5
    print(f"7x99x15x404 batched: err={err:.2e} {'ok' if err < 2e-5 else 'FAIL'}")
    cp.cuda.Device().synchronize()
    print(f"{bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
