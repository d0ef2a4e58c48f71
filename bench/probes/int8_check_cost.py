"""Probe, GPU: what the integer engine's scaling check (sgemm/int8x/bound.py)
costs, measured in one process: the conversion of A (column-major: the
tiles route) and of B (column-major: the rows route) with the statistics
and without (device.convert(stats=False)), and the whole pipeline
runner.gemm with the check (on_loss="raise") and without ("ignore"), at
SIZES^3 on N(0,1) data (the check passes: the common path).  CUDA events,
2 warm-ups, median of REPS.

    OUT=dir python bench/probes/int8_check_cost.py [SIZES...]     # default 8192

Writes $OUT/int8_check_cost.json and prints a line per size.
"""
import datetime
import json
import os
import sys

import cupy as cp

import int8_gemm  # noqa: E402 -- the probe beside this one: its timed()
from sgemm.int8x import device as D
from sgemm.int8x import moduli as M
from sgemm.int8x import runner as RN

REPS = 9


def timed(f):
    med, lo, hi = int8_gemm.timed(f, REPS)
    return {"median_ms": med, "min_ms": lo, "max_ms": hi}


def probe(n: int) -> dict:
    rs = cp.random.RandomState(n)
    a = cp.asfortranarray(rs.standard_normal((n, n), dtype=cp.float32))
    b = cp.asfortranarray(rs.standard_normal((n, n), dtype=cp.float32))
    bud = M.budget(8, n)
    words = D.summary_words()
    rec = {"m": n, "n": n, "k": n, "routes": {"a": D.route_for(1, n), "b": D.route_for(n, 1)}}
    for name, x, axis, bits, w in (("convert_a", a, 1, bud.alpha, words[0]),
                                   ("convert_b", b, 0, bud.beta, words[1])):
        rec[name] = timed(lambda: D.convert(x, axis, bits, stats=w))
        rec[name + "_nocheck"] = timed(lambda: D.convert(x, axis, bits, stats=False))
    rec["gemm"] = timed(lambda: RN.gemm(a, b, on_loss="raise"))
    rec["gemm_nocheck"] = timed(lambda: RN.gemm(a, b, on_loss="ignore"))
    rec["tflops"] = 2.0 * n ** 3 / rec["gemm"]["median_ms"] / 1e9
    rec["tflops_nocheck"] = 2.0 * n ** 3 / rec["gemm_nocheck"]["median_ms"] / 1e9
    return rec


def main(argv) -> int:
    sizes = [int(s) for s in argv] or [8192]
    props = cp.cuda.runtime.getDeviceProperties(0)
    recs = []
    for n in sizes:
        r = probe(n)
        recs.append(r)
        f = lambda k: f"{r[k]['median_ms']:.3f}"  # noqa: E731
        print(f"{n}^3: convert A {f('convert_a')} ms (without the check {f('convert_a_nocheck')}),"
              f" B {f('convert_b')} ({f('convert_b_nocheck')}); pipeline {f('gemm')} ms "
              f"({f('gemm_nocheck')}): {r['tflops']:.1f} TFLOPS ({r['tflops_nocheck']:.1f})",
              flush=True)
    out = {"device": props["name"].decode(), "date": datetime.date.today().isoformat(),
           "reps": REPS, "records": recs}
    path = os.path.join(os.environ.get("OUT", "."), "int8_check_cost.json")
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
    print("wrote", path, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
