"""Probe, CPU only: the skinny probe's problems re-planned with the shipped
H100 calibration; the measured time of the planner's pick (the first of its
five best that the probe timed) over the fastest timed candidate.

    python bench/probes/replan_skinny_probe.py
"""
import json
from sgemm.runtime.device import DeviceInfo
H100 = DeviceInfo(0, "NVIDIA H100 80GB HBM3", (9, 0), 132, 232448, 233472, 52428800,
                  1980000, 2619000, 5120, 85520809984)
from sgemm import planner
from sgemm.problem import Problem
d = json.load(open('bench/results/skinny-probe-h100-2026-11-25.json'))
NAMES = {"tall256x32": (256, 32, 32, 256), "tall128x64": (128, 64, 32, 256), "tall128x64t128": (128, 64, 16, 128),
         "tall256x64": (256, 64, 8, 128), "tall128x32": (128, 32, 32, 128)}
def norm(name):
    base, _, s = name.rpartition(":s")
    if base in NAMES:
        bm, bn, bk, th = NAMES[base]; return f"double_buffer:{bm}x{bn}x{bk}:{th}:s{s}"
    return name
import math
lg = []
for r in d['rows']:
    m, n, k, ta, tb, al = r['canon']
    b = 1 << 30
    p = Problem(m=m, n=n, k=k, ta=ta, tb=tb, a=b, lda=(k if ta else m), b=2*b, ldb=(n if tb else k), c=3*b, ldc=m)
    if not al:
        p = Problem(**{**p.__dict__, "a": b + 4, "lda": p.lda + 1})
    meas = {norm(c[0]): c[2] for c in r['cands'] if c[2] == c[2] and (c[3] or 9) <= 2.0}
    best = min(meas.values())
    cs = planner.candidates(p, H100, "ieee")
    pick = None
    for c in cs[:5]:
        q = c.params
        key = f"{c.spec.name}:{q.BM}x{q.BN}x{q.BK}:{q.threads}:s{q.split_k}{':pack' if c.pack else ''}"
        if key in meas:
            pick = (key, meas[key]); break
    if pick:
        lg.append(math.log(pick[1] / best))
    print(f"{r['cat']:7s} {r['m']:6d} {r['n']:6d} {r['k']:6d} cub {r['cublas_us']:7.1f} old {r['auto_us']:7.1f} best {best:7.1f}  pick {pick}  -> vs cub {r['cublas_us']/pick[1] if pick else 0:.2f}")
print("geomean pick/best", math.exp(sum(lg)/len(lg)), len(lg))
