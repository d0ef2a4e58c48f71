"""Probe, GPU: the host time of sgemm.torch.linear at 8x4096x4096 (x @ W^T,
bias or not, tf32x3 and ieee) beside sgemm.torch.mm on the same product and
F.linear, each call alone on an idle GPU (200 calls, a synchronize before
each, median), the plan cache's counts over them, then cProfile of 200
calls of linear and mm.  Written when eager-costs-h200-2026-11-29.json
showed tf32x3 linear at 33.7 us against mm's 19.3.  Not part of the package.

    python bench/probes/torch_linear_host.py
"""
import cProfile, io, pstats, time
import torch, sgemm
import sgemm.torch as st
from sgemm import plan_cache
dev = "cuda"
x = torch.randn(8, 4096, device=dev); w = torch.randn(4096, 4096, device=dev); b = torch.randn(4096, device=dev)
wt = w.t()
cases = {
  "st.linear(x,w,b) tf32x3": lambda: st.linear(x, w, b, precision="tf32x3"),
  "st.linear(x,w) tf32x3": lambda: st.linear(x, w, precision="tf32x3"),
  "st.mm(x,w.t()) tf32x3": lambda: st.mm(x, wt, precision="tf32x3"),
  "st.linear(x,w,b) ieee": lambda: st.linear(x, w, b, precision="ieee"),
  "torch F.linear": lambda: torch.nn.functional.linear(x, w, b),
}
for name, f in cases.items():
    for _ in range(20): f()
    torch.cuda.synchronize()
    h0 = dict(plan_cache.stats)
    ts = []
    for _ in range(200):
        torch.cuda.synchronize()
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    torch.cuda.synchronize()
    d = {k: plan_cache.stats[k] - h0[k] for k in h0}
    ts.sort()
    print(f"{name:28s} idle host {ts[100]*1e6:7.2f} us  cache {d}", flush=True)
for name in ("st.linear(x,w,b) tf32x3", "st.mm(x,w.t()) tf32x3"):
    f = cases[name]
    pr = cProfile.Profile(); pr.enable()
    for _ in range(200):
        f(); torch.cuda.synchronize()
    pr.disable()
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(14)
    print("=====", name); print(s.getvalue()[:3000])
p = sgemm.plan(x, wt, precision="tf32x3")
print(p)
