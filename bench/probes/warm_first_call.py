"""Probe: a new shape's first call in a process that has already called
sgemm on other shapes (as the judge's later rows are), timed and under
cProfile.  Not part of the package.

Two of 1440 first calls of the tenth session's judges took 52-53 ms, both
late in a run (16x16x1226 TN ieee, 25x12752x833 TN tf32x3), where the
process's imports are long done and the measured choice is bounded at 30
ms from the call's start: what takes the rest?

    python bench/probes/warm_first_call.py [M,N,K,TA,TB,PRECISION ...]

Each target runs in REPEAT fresh interpreters, each with an empty cache
directory of its own; WARM shapes (the judge's first rows of one sample)
are called first.
"""
import os
import subprocess
import sys
import tempfile

WARM = ["1024,1024,1024,0,1,ieee", "77,4096,1024,0,1,ieee", "8,512,64,0,0,tf32x3",
        "300,200,50000,0,0,ieee", "2048,64,2048,0,0,tf32x3"]
REPEAT = int(os.environ.get("REPEAT", "3"))

CHILD = r'''
import cProfile, pstats, sys, time, io
import cupy as cp
import sgemm

def operands(m, n, k, ta, tb):
    a = cp.random.standard_normal((k, m) if ta else (m, k), dtype=cp.float32)
    b = cp.random.standard_normal((n, k) if tb else (k, n), dtype=cp.float32)
    return a, b, cp.empty((m, n), cp.float32)

def parse(s):
    m, n, k, ta, tb, prec = s.split(",")
    return int(m), int(n), int(k), ta == "1", tb == "1", prec

for w in sys.argv[2:]:
    m, n, k, ta, tb, prec = parse(w)
    a, b, c = operands(m, n, k, ta, tb)
    for _ in range(2):
        sgemm.gemm(a, b, c, trans_a=ta, trans_b=tb, precision=prec)
    cp.cuda.Device().synchronize()
m, n, k, ta, tb, prec = parse(sys.argv[1])
a, b, c = operands(m, n, k, ta, tb)
A = a.T if ta else a
B = b.T if tb else b
cp.matmul(A, B, out=c); cp.cuda.Device().synchronize()
pr = cProfile.Profile()
t0 = time.perf_counter()
pr.enable()
sgemm.gemm(a, b, c, trans_a=ta, trans_b=tb, precision=prec)
cp.cuda.Device().synchronize()
pr.disable()
t1 = time.perf_counter()
sgemm.gemm(a, b, c, trans_a=ta, trans_b=tb, precision=prec); cp.cuda.Device().synchronize()
t2 = time.perf_counter()
print(f"FIRST {sys.argv[1]}: {1e3 * (t1 - t0):.1f} ms profiled (second call {1e3 * (t2 - t1):.2f} ms)")
s = io.StringIO()
pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(22)
print("\n".join(l for l in s.getvalue().splitlines() if l.strip())[:6000])
'''


def main():
    targets = sys.argv[1:] or ["16,16,1226,1,0,ieee", "25,12752,833,1,0,tf32x3"]
    for t in targets:
        for _ in range(REPEAT):
            with tempfile.TemporaryDirectory() as d:
                env = dict(os.environ, SGEMM_CACHE_DIR=d)
                out = subprocess.run([sys.executable, "-c", CHILD, t] + WARM, env=env,
                                     capture_output=True, text=True, timeout=300)
                print(out.stdout[-7000:] or out.stderr[-3000:], flush=True)


if __name__ == "__main__":
    main()
