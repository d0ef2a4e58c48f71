"""Probe: what an unaligned operand costs rung 9 (double_buffer), operand by
operand.  Not part of the package; output $OUT/unaligned-rate.json.

Why: the shipped H100 calibration runs the rung-9 tiles at 0.65-0.75 of
their aligned rate when any of A, B, C forbids float4 access
(Problem.aligned is one flag for all three), and the judge's deep-K
problems are almost all unaligned (random m, n, k as leading dimensions).
Which operand, and which layout, pays?  Each problem is timed with every
operand's pitch a multiple of 4 ("aligned"), then with one pitch made odd
("A", "B", "C": the kernel runs its scalar instantiation in all three, so
the difference between them is the memory access pattern of that
operand), then all three.  Canonical (column-major) problems; the plan's
own split-K recipe (tune.launches_for), checked against fp64 first.

    OUT=dir python bench/probes/unaligned_rate.py
    python bench/probes/unaligned_rate.py one CASE VARIANT   # one case, for ncu
"""
import json
import os
import sys

os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

from sgemm import tune  # noqa: E402
from sgemm.kernels.registry import KERNELS  # noqa: E402
from sgemm.problem import Problem  # noqa: E402
from sgemm.runtime import device as devmod  # noqa: E402

dev = devmod.info(0)
SPEC = KERNELS["double_buffer"]
stream = cp.cuda.Stream(non_blocking=True)


def mat(rows, cols, pad):
    """A column-major rows x cols matrix with pitch rows + pad, as (buffer, ld)."""
    ld = rows + pad
    buf = cp.random.standard_normal(ld * cols + 8, dtype=cp.float32)
    return buf, ld


def run(m, n, k, ta, tb, cfg, split, variant):
    pa = 1 if variant in ("A", "all") else 0
    pb = 1 if variant in ("B", "all") else 0
    pc = 1 if variant in ("C", "all") else 0
    ar, ac = (k, m) if ta else (m, k)
    br, bc = (n, k) if tb else (k, n)
    # aligned pitches: round each up to 4, then add the variant's odd pad
    r4 = lambda x: -(-x // 4) * 4  # noqa: E731
    A, lda = mat(r4(ar), ac, pa)
    B, ldb = mat(r4(br), bc, pb)
    C, ldc = mat(r4(m), n, pc)
    C.fill(np.nan)
    prob = Problem(m=m, n=n, k=k, ta=ta, tb=tb, a=A.data.ptr, lda=lda, b=B.data.ptr, ldb=ldb,
                   c=C.data.ptr, ldc=ldc, alpha=1.0, beta=0.0)
    p = SPEC.configs[cfg].replace(split_k=split)
    with stream:
        ls = tune.launches_for(SPEC, p, [prob], dev)
        ms = tune.time_launches(ls, stream, reps=5, target_ms=2.0)
        # correctness of the timed launches (the last run's C)
        a = A[:lda * ac].reshape(ac, lda)[:, :ar].T.astype(cp.float64)
        b = B[:ldb * bc].reshape(bc, ldb)[:, :br].T.astype(cp.float64)
        ref = (a.T if ta else a) @ (b.T if tb else b)
        c = C[:ldc * n].reshape(n, ldc)[:, :m].T
        err = float(cp.abs(c - ref).max() / max(float(cp.abs(ref).max()), 1e-30))
    return dict(aligned=prob.aligned, ms=ms, tflops=2e-9 * m * n * k / ms, err=err)


CASES = [  # (m, n, k, ta, tb, config, split)
    (2048, 2048, 2048, False, False, "large", 1),
    (2048, 2048, 2048, True, False, "large", 1),
    (2048, 2048, 2048, False, True, "large", 1),
    (2048, 2048, 2048, False, False, "medium", 1),
    (2048, 2048, 2048, True, False, "medium", 1),
    (2048, 2048, 2048, False, False, "rect", 1),
    (2048, 2048, 2048, True, False, "rect", 1),
    (2048, 2048, 2048, False, True, "rect", 1),
    (512, 256, 65536, False, False, "rect", 64),
    (512, 256, 65536, True, False, "rect", 64),
    (256, 512, 65536, False, True, "rect_t", 64),
    (512, 256, 65536, False, False, "small", 64),
    (512, 256, 65536, True, False, "small", 64),
]
# Edge blocks: m or n not a multiple of the tile.  Roomy configs shift a
# block on the edge back inside C and run the unguarded loop; where M < BM
# (or N < BN) every block takes the guarded EDGE instantiation.  Measured
# (edge-unroll-probe-h100-2026-11-26.json) with that instantiation's FFMA
# loop unrolled by 2 and by 16 through an experiment macro of that call's
# tree (SGEMM_DB_EDGE_UNROLL, since replaced by double_buffer_block's
# EDGE_UNROLL rule in 09_double_buffer.cu).
EDGE_CASES = [
    (512, 256, 65536, False, False, "rect", 64),
    (509, 253, 65536, False, False, "rect", 64),
    (64, 640, 32768, False, False, "rect_t", 48),
    (63, 640, 32768, False, False, "rect_t", 48),
    (60, 637, 32768, True, False, "rect_t", 48),
    (64, 640, 32768, False, False, "small", 48),
    (61, 640, 32768, False, False, "small", 48),
    (640, 64, 32768, False, True, "rect", 48),
    (640, 61, 32768, False, True, "rect", 48),
]
if __name__ == "__main__" and sys.argv[1:2] == ["edges"]:
    tag = os.environ.get("SGEMM_DEFINES", "") or "default"
    rows = []
    for case in EDGE_CASES:
        row = dict(zip(("m", "n", "k", "ta", "tb", "config", "split"), case), defines=tag)
        for v in ("aligned", "all"):
            row[v] = run(*case, v)
            cp.get_default_memory_pool().free_all_blocks()
        rows.append(row)
        m, n, k, ta, tb, cfg, split = case
        print(f"[{tag}] {m}x{n}x{k} {'T' if ta else 'N'}{'T' if tb else 'N'} s{split} {cfg:7s} "
              f"aligned {row['aligned']['ms'] * 1e3:8.1f} us ({row['aligned']['tflops']:.1f} TF)"
              f"  all-unaligned {row['all']['ms'] * 1e3:8.1f} us ({row['all']['tflops']:.1f} TF)"
              f"  err {max(row[v]['err'] for v in ('aligned', 'all')):.1e}", flush=True)
    name = "edges-" + ("default" if tag == "default" else "defines") + ".json"
    json.dump(dict(probe="unaligned_rate edges", device=dev.name, rows=rows),
              open(os.path.join(os.environ.get("OUT", "/tmp"), name), "w"), indent=1)
    sys.exit(0)
if __name__ == "__main__" and sys.argv[1:2] == ["one"]:
    print(run(*CASES[int(sys.argv[2])], sys.argv[3]))
    sys.exit(0)
if __name__ == "__main__":
    variants = ("aligned", "A", "B", "C", "all")
    rows = []
    print(f"{'problem':34s} {'cfg':7s} " + " ".join(f"{v:>8s}" for v in variants), flush=True)
    for (m, n, k, ta, tb, cfg, split) in CASES:
        row = dict(m=m, n=n, k=k, ta=ta, tb=tb, config=cfg, split=split)
        for v in variants:
            row[v] = run(m, n, k, ta, tb, cfg, split, v)
            cp.get_default_memory_pool().free_all_blocks()
        rows.append(row)
        base = row["aligned"]["ms"]
        print(f"{m}x{n}x{k} {'T' if ta else 'N'}{'T' if tb else 'N'} s{split:<4d}".ljust(34)
              + f" {cfg:7s} " + " ".join(f"{base / row[v]['ms']:8.3f}" for v in variants)
              + f"   ({row['aligned']['tflops']:.1f} TF aligned; max err "
              + f"{max(row[v]['err'] for v in variants):.1e})", flush=True)
    out = dict(probe="unaligned_rate", device=dev.name, rows=rows)
    json.dump(out, open(os.path.join(os.environ.get("OUT", "/tmp"), "unaligned-rate.json"), "w"),
              indent=1)
    sys.exit(0)
