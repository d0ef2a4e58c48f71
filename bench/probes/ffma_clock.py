"""Probe: the SM clock and board power while sgemm's ieee plan and cuBLAS
SGEMM each run back to back on a large layer.  Not part of the package.

Why: on the judges' large ML layers the rung-9 tiles run at 44-47 TFLOP/s
where cuBLAS runs at 50-53 (docs/notes/ffma-fast.md).  Either our kernels
issue FFMAs less often per cycle, or they run at a lower clock because they
draw more power (the H100 caps the board at 700 W): this tells which.

    OUT=dir python bench/probes/ffma_clock.py [MxNxK:LAYOUT ...]

For each problem, three alternating rounds of each engine: calls back to
back for ~1.5 s while nvidia-smi samples clocks.sm and power.draw every
50 ms (the first 0.3 s of each run dropped: the clock settles), then the
run's TFLOP/s from events.  Writes $OUT/ffma-clock.json.
"""
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp  # noqa: E402

import sgemm  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _gpu import operands  # noqa: E402

DEFAULT = ["4096x12288x4096:NT", "12288x4096x4096:TN", "4096x4096x16384:NN"]


def parse(s):
    dims, _, lay = s.partition(":")
    m, n, k = (int(x) for x in dims.split("x"))
    lay = lay or "NN"
    return m, n, k, lay[0] == "T", lay[1] == "T"


def run_sampled(fn, flops, seconds=1.5):
    """(median MHz, median W, TFLOP/s) of calls of fn back to back for ~seconds."""
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw",
                            "--format=csv,noheader,nounits", "-lms", "50"],
                           stdout=subprocess.PIPE, text=True)
    fn()
    cp.cuda.Device().synchronize()
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    t0 = time.time()
    e0.record()
    calls = 0
    while time.time() - t0 < seconds:
        for _ in range(5):
            fn()
        calls += 5
        cp.cuda.Device().synchronize()       # keeps the wall clock honest; ~us gaps
    e1.record()
    e1.synchronize()
    ms = cp.cuda.get_elapsed_time(e0, e1)
    smi.terminate()
    lines = smi.communicate()[0].strip().splitlines()
    rows = []
    for line in lines:
        parts = [p.strip() for p in line.split(",")]
        try:
            rows.append((float(parts[1]), float(parts[2])))
        except (ValueError, IndexError):
            continue
    rows = rows[6:] or rows                     # the first ~0.3 s: the clock settles
    return (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows),
            flops * calls / (ms * 1e-3) / 1e12, len(rows))


def main(argv):
    out = []
    for spec in argv or DEFAULT:
        m, n, k, ta, tb = parse(spec)
        a, b, c, A, B = operands(m, n, k, ta, tb)
        flops = 2.0 * m * n * k
        fns = {"sgemm": lambda: sgemm.gemm(a, b, c, trans_a=ta, trans_b=tb),
               "cublas": lambda: cp.matmul(A, B, out=c)}
        row = dict(problem=spec, runs=[])
        for rnd in range(3):
            for name in (("sgemm", "cublas") if rnd % 2 == 0 else ("cublas", "sgemm")):
                mhz, w, tf, ns = run_sampled(fns[name], flops)
                row["runs"].append(dict(engine=name, round=rnd, sm_mhz=mhz, power_w=w,
                                        tflops=tf, samples=ns))
                print(f"{spec:22s} {name:6s} {mhz:6.0f} MHz {w:5.0f} W {tf:5.1f} TF/s "
                      f"{tf * 1e6 / mhz:6.1f} GF/s per MHz", flush=True)
        out.append(row)
        del a, b, c, A, B
        cp.get_default_memory_pool().free_all_blocks()
    with open(os.path.join(os.environ.get("OUT", "."), "ffma-clock.json"), "w") as f:
        json.dump(dict(probe="ffma_clock", device=cp.cuda.runtime.getDeviceProperties(0)["name"]
                       .decode(), rows=out), f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
