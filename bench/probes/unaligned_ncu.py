"""Probe (GPU): rung 9's tiles on the same shapes with every operand aligned
and with none (odd leading dimensions, bases one float off), launched
directly (launcher.run, no plan); times by CUDA events (median of 15 batches
of 3) and, with --one, two launches of one case for ncu to profile the
second.

    python bench/probes/unaligned_ncu.py OUT.json
    ncu --metrics ... -k regex:sgemm_double_buffer --launch-skip 1 --launch-count 1 \
        python bench/probes/unaligned_ncu.py --one CASE a|u
"""
import sys, json
import cupy as cp, numpy as np
from sgemm.kernels.registry import KERNELS
from sgemm.problem import Problem
from sgemm.runtime import device as sgdev, launcher

spec = KERNELS["double_buffer"]
dev = sgdev.info(0)

def make(cfg, m, n, k, ta, tb, aligned):
    p = spec.configs[cfg]
    ar, ac = (k, m) if ta else (m, k)
    br, bc = (n, k) if tb else (k, n)
    lda = ar if aligned else ar + 1
    ldb = br if aligned else br + 1
    ldc = m if aligned else m + 1
    off = 0 if aligned else 1
    A = cp.random.standard_normal(lda * ac + 8, dtype=cp.float32)
    B = cp.random.standard_normal(ldb * bc + 8, dtype=cp.float32)
    C = cp.zeros(ldc * n + 8, dtype=cp.float32)
    pr = Problem(m=m, n=n, k=k, ta=ta, tb=tb, a=A.data.ptr + 4 * off, lda=lda,
                 b=B.data.ptr + 4 * off, ldb=ldb, c=C.data.ptr + 4 * off, ldc=ldc)
    assert pr.aligned == aligned
    return p, pr, (A, B, C)

def timeit(p, pr):
    s = cp.cuda.Stream.null
    for _ in range(3):
        launcher.run(spec, p, pr, dev, 0)
    ts = []
    for _ in range(15):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        for _ in range(3):
            launcher.run(spec, p, pr, dev, 0)
        e1.record(); e1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(e0, e1) / 3 * 1e3)
    return float(np.median(ts))

CASES = [("rect", 1024, 1024, 8192, False, False), ("rect", 1024, 1024, 8192, True, False),
         ("large", 2048, 1024, 8192, False, False), ("large", 2048, 1024, 8192, True, False),
         ("rect", 4096, 4096, 2048, True, False), ("large", 4096, 4096, 2048, True, False)]
if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        i, al = int(sys.argv[2]), sys.argv[3] == "a"
        cfg, m, n, k, ta, tb = CASES[i]
        p, pr, keep = make(cfg, m, n, k, ta, tb, al)
        launcher.run(spec, p, pr, dev, 0); cp.cuda.Device().synchronize()
        launcher.run(spec, p, pr, dev, 0); cp.cuda.Device().synchronize()
    else:
        out = []
        for cfg, m, n, k, ta, tb in CASES:
            row = dict(cfg=cfg, m=m, n=n, k=k, ta=ta, tb=tb)
            for al in (True, False):
                p, pr, keep = make(cfg, m, n, k, ta, tb, al)
                row["aligned_us" if al else "unaligned_us"] = timeit(p, pr)
            row["ratio"] = row["aligned_us"] / row["unaligned_us"]
            out.append(row)
            print(json.dumps(row), flush=True)
        json.dump(out, open(sys.argv[1], "w"), indent=1)
