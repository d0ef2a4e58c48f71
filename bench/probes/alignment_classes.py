"""Probe (CPU, no GPU): the judges' ieee ratios by which operands allow
16-byte access, as the judge lays them out (contiguous row-major arrays):
A, B and C each aligned when its leading dimension is a multiple of 4
(the bases are CuPy allocations, 256-byte aligned; batched strides
likewise).  Today one flag, Problem.aligned, covers all three: a problem
with any operand unaligned runs every operand through scalar loads (or
the pack scheme's copies).  How many problems have some operands aligned
and others not, and how do they fare?

    python bench/probes/alignment_classes.py JUDGE.json ...
"""
import collections
import json
import math
import statistics
import sys


def aligned(r) -> tuple:
    m, n, k, ta, tb = r["m"], r["n"], r["k"], r["ta"], r["tb"]
    lda, ldb, ldc = (m if ta else k), (k if tb else n), n
    return lda % 4 == 0, ldb % 4 == 0, ldc % 4 == 0


def main(files) -> None:
    by = collections.defaultdict(list)
    for f in files:
        for r in json.load(open(f))["rows"]:
            a, b, c = aligned(r)
            cls = "all aligned" if a and b and c else "none aligned" if not (a or b or c) \
                else "mixed: " + "".join(x for x, ok in zip("ABC", (a, b, c)) if ok) + " aligned"
            big = r["cublas_ms"] >= 0.05
            by[(cls, big)].append(r["ieee"]["ratio"])
    n = sum(map(len, by.values()))
    print(f"{len(files)} judges, {n} problems; ieee ratio (cuBLAS / sgemm) by class")
    print(f"{'class':24s} {'cuBLAS':>9s} {'n':>5s} {'share':>6s} {'geomean':>8s} {'p10':>6s} {'min':>6s}")
    for (cls, big), xs in sorted(by.items()):
        xs = sorted(xs)
        g = math.exp(statistics.mean(map(math.log, xs)))
        print(f"{cls:24s} {'>=50us' if big else '<50us':>9s} {len(xs):5d} {len(xs) / n:6.1%} "
              f"{g:8.3f} {xs[len(xs) // 10]:6.3f} {xs[0]:6.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
