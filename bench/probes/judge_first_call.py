"""Probe: the first sgemm call of a process the way the judge makes it
(CuPy imported, context made and cuBLAS run on the same operands first),
under cProfile, for a few problem kinds; each in a fresh interpreter.
Prints wall ms and the top functions by cumulative time.  Not part of the
package.

    python bench/probes/judge_first_call.py [M,N,K,TA,TB,PRECISION ...]

Each child gets an empty cache directory of its own (SGEMM_CACHE_DIR), so
the measured choice runs as on a fresh machine; the bundle is the
package's.
"""
import os
import subprocess
import sys
import tempfile

CHILD = r'''
import cProfile, pstats, sys, time, io, os
import cupy as cp
m, n, k, ta, tb, prec = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5] == "1", sys.argv[6]
a = cp.random.standard_normal((k, m) if ta else (m, k), dtype=cp.float32)
b = cp.random.standard_normal((n, k) if tb else (k, n), dtype=cp.float32)
A = a.T if ta else a
B = b.T if tb else b
c = cp.empty((m, n), cp.float32)
cp.matmul(A, B, out=c); c.fill(cp.nan); cp.cuda.Device().synchronize()
import sgemm
prof = os.environ.get("NOPROF") != "1"
pr = cProfile.Profile()
t0 = time.perf_counter()
if prof: pr.enable()
sgemm.gemm(a, b, c, trans_a=ta, trans_b=tb, precision=prec)
cp.cuda.Device().synchronize()
if prof: pr.disable()
t1 = time.perf_counter()
sgemm.gemm(a, b, c, trans_a=ta, trans_b=tb, precision=prec); cp.cuda.Device().synchronize()
t2 = time.perf_counter()
print(f"FIRST {m}x{n}x{k} {prec} {'profiled' if prof else 'plain'}: {1e3 * (t1 - t0):.1f} ms (second {1e3 * (t2 - t1):.1f} ms)")
if not prof: sys.exit(0)
s = io.StringIO()
pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(18)
print("\n".join(l for l in s.getvalue().splitlines() if l.strip())[:3500])
'''
CASES = [(8192, 8192, 2048, 0, 0, "ieee"), (64, 2048, 128256, 0, 0, "ieee"),
         (128, 64, 128, 0, 0, "ieee"), (373, 17, 153548, 0, 0, "tf32x3")]
if len(sys.argv) > 1:
    CASES = [tuple(a.split(",")) for a in sys.argv[1:]]
for case in CASES:
    # the plain wall time, then the profile (NOPROF_ONLY=1: the plain time alone)
    for noprof in ("1",) if os.environ.get("NOPROF_ONLY") else ("1", "0"):
        with tempfile.TemporaryDirectory() as cache:
            out = subprocess.run([sys.executable, "-c", CHILD] + [str(x) for x in case],
                                 capture_output=True, text=True, timeout=300,
                                 env=dict(os.environ, SGEMM_CACHE_DIR=cache, NOPROF=noprof))
        print(out.stdout[-4000:], out.stderr[-1500:], flush=True)
