"""Probe: one set of kernel experiment switches (SGEMM_DEFINES, read by the
compiler) timed on fixed large problems through ``sgemm.gemm`` as users call
it, beside cuBLAS in the same process; each product first checked against
fp64 on a NaN-poisoned output.  Run it once per switch setting (each with
its own SGEMM_CACHE_DIR) and compare the files.  Not part of the package.

    TAG=name [COMPILE_ONLY=1] OUT=dir python bench/probes/define_ab.py

The problems: 4096^3 in the three row-major layouts that reach rung 9's
256x128 tile as canonical NN, TN and NT; x @ W^T layers (canonical TN);
aligned deep K with A along k (canonical TN on the 8x8 rectangles); and
three unaligned rows (deep K, a vocabulary head).
"""
import json
import os
import sys

os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp  # noqa: E402
import sgemm  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _gpu import operands, stream, tfn  # noqa: E402

PROBLEMS = [  # m, n, k, ta, tb as the user calls (row-major operands)
    (4096, 4096, 4096, False, False), (4096, 4096, 4096, False, True),
    (4096, 4096, 4096, True, False),
    (4096, 16384, 4096, False, True), (2048, 12288, 4096, False, True),
    (16384, 2560, 10240, False, True), (512, 15360, 5120, False, True),
    (4096, 4096, 16384, False, False),
    (512, 384, 65536, False, True), (256, 640, 131072, False, True),
    (904, 379, 24713, False, False), (502, 614, 32427, True, False),
    (500, 50257, 2048, False, True),
]


def main():
    tag, rows = os.environ.get("TAG", "base"), []
    only = os.environ.get("COMPILE_ONLY") == "1"
    for m, n, k, ta, tb in PROBLEMS:
        a, b, c, A, B = operands(m, n, k, ta, tb)
        cp.cuda.Device().synchronize()   # the operands come from the null stream
        with stream:
            c.fill(cp.nan)
            sgemm.gemm(a, b, c, trans_a=ta, trans_b=tb)
        stream.synchronize()
        if only:
            continue
        ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64))
        nr = float(cp.linalg.norm(ref))
        err = float(cp.linalg.norm(c - ref)) / nr
        us = tfn(lambda: sgemm.gemm(a, b, c, trans_a=ta, trans_b=tb))
        cub = tfn(lambda: cp.matmul(A, B, out=c))
        cerr = float(cp.linalg.norm(c - ref)) / nr
        rows.append(dict(m=m, n=n, k=k, ta=ta, tb=tb, us=round(us, 1), cublas_us=round(cub, 1),
                         err_vs_cublas=round(err / cerr, 3)))
        print(f"{tag:6s} {m:6d} {n:6d} {k:6d} {'T' if ta else 'N'}{'T' if tb else 'N'} "
              f"sgemm {us:9.1f} cublas {cub:9.1f} ratio {cub / us:.3f} err/cub {err / cerr:.2f}",
              flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    if not only:
        with open(os.path.join(os.environ.get("OUT", "."), f"define-ab-{tag}.json"), "w") as f:
            json.dump(dict(tag=tag, defines=os.environ.get("SGEMM_DEFINES", ""), rows=rows), f,
                      indent=1)


if __name__ == "__main__":
    main()
