"""Driver for compute-sanitizer on the integer engine's kernels (issue #22):
both conversion routes (int8x_convert_rows; int8x_rowmax, int8x_rownorm
then int8x_residues), for 7 and 8 moduli, on a column-major and a row-major
operand (and, without
--small, rows longer than int8x_convert_rows keeps in registers), every
INT8 GEMM config this GPU runs (byte-plane epilogues), and
Garner on byte planes, at one shape that crosses every tile edge, then the
public path (sgemm.gemm, precision="int8x"), then the scaling check's
statistics on both routes and precision="fp32" falling back on wide-range
operands; each result is checked against an integer reference (or the
host model) so that a run that is clean but wrong still fails.

    compute-sanitizer --tool memcheck --error-exitcode 9 python scripts/int8_sanitize.py
    compute-sanitizer --tool racecheck --error-exitcode 9 python scripts/int8_sanitize.py --small

--small: one smaller shape (racecheck is slow); --kernel wgmma|mma: one GEMM.
"""
import argparse
import sys

import cupy as cp
import numpy as np

from sgemm.int8x import device as D
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
    bad = False
    # 7 moduli first (its kernels: int8x_convert_rows<7>, int8x_residues<7>,
    # int8x_garner<7>), then 8, whose planes feed every GEMM config below
    for count in (7, 8):
        parts = R.decompose(a.get(), b.get(), count)
        mods = D.constants(count)
        # both conversion routes on both operands (a column-major: "tiles" by
        # default; b row-major: "tiles" too, as its columns are strided); the
        # last pair, the strides' own choice, feeds the GEMMs
        for route in ("rows", "tiles", None):
            flag = cp.zeros(1, cp.int32)
            pa, mu = D.convert(a, 1, parts.budget.alpha, flag, route=route, n_moduli=count)
            pb, nu = D.convert(b, 0, parts.budget.beta, flag, route=route, n_moduli=count)
            ok = all(np.array_equal(pa[l, :, :k].get(), parts.a_res[l]) and
                     np.array_equal(pb[l, :, :k].get(), parts.b_res[l].T) for l in range(count))
            ok = ok and not int(flag[0]) and np.array_equal(mu.get(), parts.mu) and \
                np.array_equal(nu.get(), parts.nu)
            print(f"convert ({route or 'auto'}, {count} moduli) {m}x{k} (F) and {k}x{n} (C): "
                  f"{'exact' if ok else 'WRONG'}")
            bad |= not ok
        c = D.garner(D.int8_gemm(pa, pb, mods), mods, mu, nu)
        same = np.array_equal(c.get(), R.gemm(a.get(), b.get(), n_moduli=count)
                              .astype(np.float32))
        bad |= not same
        print(f"garner ({count} moduli): {'exact' if same else 'WRONG'}")
    if not args.small:              # rows past RT * 4 * RCACHE = 16384 columns
        x = cp.asarray(rng.standard_normal((3, 20001)).astype(np.float32))
        xp = R.decompose(x.get(), np.ones((20001, 1), np.float32), 8)
        for route in ("rows", "tiles"):
            px, ex = D.convert(x, 1, xp.budget.alpha, route=route)
            ok = all(np.array_equal(px[l, :, :20001].get(), xp.a_res[l]) for l in range(8))
            ok = ok and np.array_equal(ex.get(), xp.mu) and not px[:, :, 20001:].any()
            print(f"convert ({route}) 3x20001 (C): {'exact' if ok else 'WRONG'}")
            bad |= not ok
    # the GEMMs write byte planes: the exact products modulo each p
    want = np.stack([np.mod(np.asarray(x, np.int64), p) for x, p in zip(parts.c_res, parts.ms)])
    kernels = [args.kernel] if args.kernel else (
        ["wgmma", "mma"] if D.gemm_spec().name == "int8_wgmma" else ["mma"])
    for kernel in kernels:
        for config in D.gemm_spec(kernel).configs:
            got = D.int8_gemm(pa, pb, mods, config, kernel).get()
            same = np.array_equal(got, want)
            bad |= not same
            print(f"int8_gemm {kernel}:{config} {m}x{n}x{k}: {'exact' if same else 'WRONG'}")
    # the public path: a row-major output (the transposed problem) with beta
    import sgemm
    from sgemm.int8x import reference as R2
    c0 = cp.asarray(rng.standard_normal((m, n)).astype(np.float32))
    want_api = R2.gemm(b.get().T, a.get().T, c0.get().T, 1.0, 0.5).T.astype(np.float32)
    got_api = sgemm.gemm(a, b, c0.copy(), beta=0.5, precision="int8x")
    same = np.array_equal(got_api.get(), want_api)
    bad |= not same
    print(f"sgemm.gemm(precision='int8x'): {'exact' if same else 'WRONG'}")
    # the scaling check: each route's statistics (int8x_row_stats on the
    # tiles route) equal the host model, on wide-range operands, and
    # precision="fp32" falls back on them (the route forced to a small size)
    from sgemm.int8x import bound as BD
    from sgemm.int8x import route as RT
    wa = cp.asfortranarray((a * cp.exp2(cp.asarray(rng.uniform(-20, 20, a.shape))))
                           .astype(cp.float32))
    wb = (b * cp.exp2(cp.asarray(rng.uniform(-20, 20, b.shape)))).astype(cp.float32)
    for route in ("rows", "tiles"):
        sa, sb = D.summaries(wa, wb, route=route)
        ok = sa == BD.summarize(wa.get(), 1) and sb == BD.summarize(wb.get(), 0)
        print(f"scaling statistics ({route}): {'exact' if ok else 'WRONG'}")
        bad |= not ok
    RT.ALWAYS = True
    try:
        got = sgemm.gemm(wa, wb, precision="fp32")
    finally:
        RT.ALWAYS = False
    a64, b64 = wa.astype(cp.float64), wb.astype(cp.float64)
    err = float(cp.max(cp.abs(got - a64 @ b64) / (cp.abs(a64) @ cp.abs(b64))))
    ok = err <= (k + 1) * BD.U
    print(f"sgemm.gemm(precision='fp32') on wide data: componentwise {err:.1e} "
          f"{'within' if ok else 'WRONG: above'} (k + 1) u")
    bad |= not ok
    cp.cuda.Device().synchronize()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
