"""Driver for compute-sanitizer on the integer engine's kernels (issue #22):
the residue kernel on both read paths (a column-major and a row-major
operand), every INT8 GEMM config this GPU runs, and Garner, at one shape
that crosses every tile edge; each result is checked against an integer
reference so that a run that is clean but wrong still fails.

    compute-sanitizer --tool memcheck --error-exitcode 9 python scripts/int8_sanitize.py
    compute-sanitizer --tool racecheck --error-exitcode 9 python scripts/int8_sanitize.py --small

--small: one smaller shape (racecheck is slow); --kernel wgmma|mma: one GEMM.
"""
import argparse
import sys

import cupy as cp
import numpy as np

from sgemm.int8x import device as D
from sgemm.int8x import moduli as M
from sgemm.int8x import reference as R


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--kernel", choices=["wgmma", "mma"], default=None)
    args = ap.parse_args(argv)
    m, k, n = (65, 150, 70) if args.small else (130, 200, 257)
    rng = np.random.default_rng(1)
    a = cp.asfortranarray(cp.asarray(rng.standard_normal((m, k)).astype(np.float32)))
    b = cp.asarray(rng.standard_normal((k, n)).astype(np.float32))     # rows along n
    parts = R.decompose(a.get(), b.get(), 8)
    mods = D.constants(8)
    mu, _ = D.exponents(a, 1, parts.budget.alpha)
    nu, _ = D.exponents(b, 0, parts.budget.beta)
    pa, pb = D.residues(a, mu, 1, mods), D.residues(b, nu, 0, mods)
    ok = all(np.array_equal(pa[l, :, :k].get(), parts.a_res[l]) and
             np.array_equal(pb[l, :, :k].get(), parts.b_res[l].T) for l in range(8))
    print(f"residues {m}x{k} (F) and {k}x{n} (C): {'exact' if ok else 'WRONG'}")
    bad = not ok
    want = np.stack([np.asarray(x, np.int64) for x in parts.c_res])
    kernels = [args.kernel] if args.kernel else (
        ["wgmma", "mma"] if D.gemm_spec().name == "int8_wgmma" else ["mma"])
    for kernel in kernels:
        for config in D.gemm_spec(kernel).configs:
            got = D.int8_gemm(pa, pb, mods, config, kernel).get()
            same = np.array_equal(got, want)
            bad |= not same
            print(f"int8_gemm {kernel}:{config} {m}x{n}x{k}: {'exact' if same else 'WRONG'}")
    c = D.garner(D.int8_gemm(pa, pb, mods), mods, mu, nu)
    same = np.array_equal(c.get(), R.gemm(a.get(), b.get()).astype(np.float32))
    bad |= not same
    print(f"garner: {'exact' if same else 'WRONG'}")
    cp.cuda.Device().synchronize()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
