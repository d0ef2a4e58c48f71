"""Probe: how small back-to-back calls run in the first tens of ms after the
GPU sat idle, or after a first call.  Not part of the package.

Why: bench/probes/judge_watch.py found host-bound rows (9-10 us a call at
64^3-like sizes) timed at 14-16 us by the judge right after their first call
and at 9.6 us when timed again at once; the judge's 64^3 eager rows run the
first entry point right after its first call too.  Either the GPU (clocks
after an idle gap while the host plans) or the host is slower for a while.

For each case, batches of 100 back-to-back calls, one after another: per
batch the GPU time a call (events around the batch) and the host time a
call (perf_counter around the loop, before the synchronize).  Cases: after
a busy GPU then an idle sleep of 0, 2, 10, 50 or 200 ms, for sgemm.gemm
(cached) and cupy.matmul; and right after the first call of a new shape.

    OUT=dir python bench/probes/idle_ramp.py
"""
import json
import os
import time

os.environ.setdefault("CUPY_TF32", "0")
import cupy as cp  # noqa: E402
import sgemm  # noqa: E402

BATCHES, REPS = 12, 100


def batches(fn):
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    out = []
    for _ in range(BATCHES):
        e0.record()
        t = time.perf_counter()
        for _ in range(REPS):
            fn()
        host = (time.perf_counter() - t) / REPS * 1e6
        e1.record(); e1.synchronize()
        out.append((round(cp.cuda.get_elapsed_time(e0, e1) / REPS * 1e3, 2), round(host, 2)))
    return out


def busy():
    x = cp.ones((4096, 4096), cp.float32)
    for _ in range(8):
        cp.matmul(x, x)
    cp.cuda.Device().synchronize()


def main():
    a, b = (cp.random.standard_normal((64, 64), dtype=cp.float32) for _ in range(2))
    c = cp.empty((64, 64), cp.float32)
    fns = {"sgemm.gemm(a, b, c)": lambda: sgemm.gemm(a, b, c),
           "cupy.matmul(a, b, out=c)": lambda: cp.matmul(a, b, out=c)}
    for f in fns.values():
        for _ in range(50):
            f()
    rows = []
    for idle_ms in (0, 2, 10, 50, 200, 0):
        for name, f in fns.items():
            busy()
            time.sleep(idle_ms / 1e3)
            rows.append(dict(case=f"idle {idle_ms} ms", fn=name, batches=batches(f)))
    for i, (m, n, k) in enumerate(((65, 64, 64), (64, 66, 64), (64, 64, 67))):
        x = cp.random.standard_normal((m, k), dtype=cp.float32)
        y = cp.random.standard_normal((k, n), dtype=cp.float32)
        z = cp.empty((m, n), cp.float32)
        busy()
        t = time.perf_counter()
        sgemm.gemm(x, y, z); cp.cuda.Device().synchronize()
        first = (time.perf_counter() - t) * 1e3
        rows.append(dict(case=f"after first call {m}x{n}x{k} ({first:.1f} ms)", fn="sgemm.gemm",
                         batches=batches(lambda: sgemm.gemm(x, y, z))))
    for r in rows:
        print(f"{r['case']:34s} {r['fn']:26s} gpu/host us: " +
              " ".join(f"{g:.1f}/{h:.1f}" for g, h in r["batches"]), flush=True)
    json.dump(dict(probe="idle_ramp", device=cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                   reps=REPS, rows=rows),
              open(os.path.join(os.environ.get("OUT", "/tmp"), "idle-ramp.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
