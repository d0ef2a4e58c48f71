"""Probe: the eager host cost per call of the PyTorch entry points against
torch.matmul / F.linear, at 64^3 and at layer sizes.  Not part of the package.

    python bench/probes/eager_costs.py --out eager.json                 # GPU
    python bench/probes/eager_costs.py --stand-in                       # CPU model
    python bench/probes/eager_costs.py --judge --out judge-eager.json   # GPU: the judge's list

GPU: for each size and precision, each row is timed two ways in the same
loop (sgemm.bench.eager's method: 30 warm-up calls, then 5 samples of 400
back-to-back calls, median sample): ``wall_us``, the sample's wall time per
call ended by a synchronize (what the judge and ``python -m
sgemm.torch.bench`` report; on a small problem it is the GPU's time when
the kernel is slower than the host), and ``host_us``, the time spent inside
the calls only (their return is the launch's return: the GPU waits for
nothing here, so this is the host path alone -- unless the GPU falls so far
behind that a launch waits for room in its queue, as at 8x4096x4096 where
the rows' wall times are 34-57 us); ``idle_us`` is the time inside 200
calls each made on an idle GPU (a synchronize after each, untimed): the
host path alone at every size, the eager overhead the targets name.  Ratios are against
torch.matmul (F.linear for the linear rows) on the same tensors.
The plan cache's hit/bypass counts are reported: a row that bypasses
measures the uncached path, not the cached one.

--stand-in (CPU, no GPU): the host path up to the launch, with CPU tensors
taken for CUDA tensors of device 0 by patching the points where sgemm
reads the device (this probe's patches, not the library's), the stand-in
driver of tests/runtime/fake_driver.py (made-up cubins, launches that do
nothing) and torch's CPU allocator.  It measures Python overhead only, for
before/after comparisons on one machine; it is no GPU number.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SIZES = [(64, 64, 64), (32, 768, 768), (8, 4096, 4096)]      # (rows, in, out): m, k, n


def timed(f, sync, n=400, samples=5, warmup=30, n_idle=200):
    """(wall_us, host_us, idle_us): medians over samples of back-to-back
    calls, and of calls each made with the GPU idle (a synchronize after
    each, outside the timing)."""
    for _ in range(warmup):
        f()
    sync()
    wall, host, idle = [], [], []
    clock = time.perf_counter
    for _ in range(samples):
        inside = 0.0
        t0 = clock()
        for _ in range(n):
            t = clock()
            f()
            inside += clock() - t
        sync()
        wall.append((clock() - t0) / n * 1e6)
        host.append(inside / n * 1e6)
        inside = 0.0
        for _ in range(n_idle):
            t = clock()
            f()
            inside += clock() - t
            sync()
        idle.append(inside / n_idle * 1e6)
    return statistics.median(wall), statistics.median(host), statistics.median(idle)


def rows(torch, sgemm, st, m, k, n, prec, device):
    F = torch.nn.functional
    a, b = torch.randn(m, k, device=device), torch.randn(k, n, device=device)
    c = torch.empty(m, n, device=device)
    lin = torch.nn.Linear(k, n).to(device)          # Parameters that need a gradient
    w, bias = lin.weight, lin.bias
    frozen = torch.nn.Linear(k, n).to(device).requires_grad_(False)     # inference
    fw, fb = frozen.weight, frozen.bias
    ag, bg = a.clone().requires_grad_(), b.clone().requires_grad_()
    op, lop = torch.ops.sgemm.mm, torch.ops.sgemm.linear
    return {
        "torch.matmul(a, b)": lambda: torch.matmul(a, b),
        "sgemm.torch.mm(a, b)": lambda: st.mm(a, b, precision=prec),
        "torch.ops.sgemm.mm(a, b)": lambda: op(a, b, prec),
        "sgemm.matmul(a, b)": lambda: sgemm.matmul(a, b, precision=prec),
        "sgemm.gemm(a, b, c)": lambda: sgemm.gemm(a, b, c, precision=prec),
        "F.linear(x, w, bias)": lambda: F.linear(a, fw, fb),
        "sgemm.torch.linear(x, w, bias)": lambda: st.linear(a, fw, fb, precision=prec),
        "F.linear(x, w, bias), requires_grad": lambda: F.linear(a, w, bias),
        "sgemm.torch.linear(x, w, bias), requires_grad":
            lambda: st.linear(a, w, bias, precision=prec),
        "torch.matmul(a, b), requires_grad": lambda: torch.matmul(ag, bg),
        "sgemm.torch.mm(a, b), requires_grad": lambda: st.mm(ag, bg, precision=prec),
        "torch.ops.sgemm.mm(a, b), requires_grad": lambda: op(ag, bg, prec),
        "torch.ops.sgemm.linear(x, w, bias)": lambda: lop(a, fw, fb, prec),
        "torch.ops.sgemm.linear(x, w, bias), requires_grad": lambda: lop(a, w, bias, prec),
    }


def ratios(us: dict) -> dict:
    base = {k: us["torch.matmul(a, b)"] for k in us}
    base["sgemm.torch.linear(x, w, bias)"] = us["F.linear(x, w, bias)"]
    for k in ("sgemm.torch.mm(a, b), requires_grad", "torch.ops.sgemm.mm(a, b), requires_grad"):
        base[k] = us["torch.matmul(a, b), requires_grad"]
    base["torch.ops.sgemm.linear(x, w, bias)"] = us["F.linear(x, w, bias)"]
    for k in ("sgemm.torch.linear(x, w, bias), requires_grad",
              "torch.ops.sgemm.linear(x, w, bias), requires_grad"):
        base[k] = us["F.linear(x, w, bias), requires_grad"]
    return {k: v / base[k] for k, v in us.items()
            if k.startswith(("sgemm", "torch.ops"))}


def gpu(precisions) -> dict:
    import torch

    import sgemm
    import sgemm.torch as st
    from sgemm import plan_cache
    torch.backends.cuda.matmul.allow_tf32 = False
    doc = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "runs": []}
    for prec in precisions:
        for m, k, n in SIZES:
            before = dict(plan_cache.stats)
            wall, host, idle = {}, {}, {}
            for name, f in rows(torch, sgemm, st, m, k, n, prec, "cuda").items():
                wall[name], host[name], idle[name] = timed(f, torch.cuda.synchronize)
            stats = {s: plan_cache.stats[s] - before[s] for s in before}
            doc["runs"].append({"precision": prec, "m": m, "k": k, "n": n,
                                "wall_us": wall, "host_us": host, "idle_us": idle,
                                "wall_ratio": ratios(wall), "host_ratio": ratios(host),
                                "idle_ratio": ratios(idle), "plan_cache": stats})
    return doc


def stand_in(precisions) -> dict:
    """The CPU model described in the module docstring."""
    import inspect

    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "tests", "runtime"))
    import fake_driver
    import torch
    fake_driver.install(record_launches=False)
    import sgemm
    import sgemm.torch as st
    from sgemm import arrays, plan_cache
    from sgemm.runtime import compiler
    from sgemm.torch import _impl, functional
    compiler.nvrtc_compile = lambda src, expr, arch, extra=(), debug=None: compiler.Compiled(
        compiler.cache_key(src, expr, arch, extra, debug), b"fake", {expr: "_Zfake"}, "",
        arch, expr)
    real_describe, real_stream = arrays.describe, arrays.current_stream

    def describe(x, name):       # a float32 CPU tensor stands for one on device 0
        if type(x).__module__.startswith("torch") and not x.is_cuda and x.dtype == torch.float32:
            return arrays.ArrayDesc(name, "torch", x.data_ptr(), tuple(x.shape),
                                    tuple(x.stride()), np.dtype(np.float32), 0, False, x)
        return real_describe(x, name)
    for mod in [arrays] + [sys.modules[m] for m in list(sys.modules) if m.startswith("sgemm")]:
        if getattr(mod, "describe", None) is real_describe:
            mod.describe = describe
        if getattr(mod, "current_stream", None) is real_stream:
            mod.current_stream = lambda kind, device: 0
    src = inspect.getsource(plan_cache._read_torch).replace("x.get_device()", "0")
    exec(src, vars(plan_cache))                  # the tree's own reader, device 0
    if hasattr(plan_cache, "_KIND"):
        plan_cache._KIND.clear()
    plan_cache._torch()
    plan_cache._tcur = lambda d: 0
    plan_cache._tdevs[0] = torch.device("cpu")
    eager = functional._eager
    functional._eager = lambda what, *ts: (not functional._compiling() and all(
        t is None or type(t) in functional._PLAIN for t in ts)) or eager(what, *ts)
    lib = torch.library.Library("sgemm", "IMPL")
    lib.impl("mm", lambda a, b, precision="tf32x3": _impl.mm(a, b, precision), "CPU")
    lib.impl("linear", lambda x, w, bias=None, precision="tf32x3", activation=None:
             _impl.linear(x, w, bias, precision, activation), "CPU")
    from sgemm.torch import ops
    if hasattr(ops, "_DIRECT_KEY"):     # CPU tensors take the route CUDA tensors take
        ops._DIRECT_KEY = torch._C.DispatchKey.CPU
    doc = {"device": "stand-in (CPU)", "torch": torch.__version__, "runs": []}
    for prec in precisions:
        for m, k, n in SIZES[:1]:
            us = {}
            for name, f in rows(torch, sgemm, st, m, k, n, prec, "cpu").items():
                if name.startswith(("torch.matmul", "F.linear")):
                    continue                     # CPU math: not torch's CUDA host path
                for _ in range(100):
                    f()
                us[name] = min(timeit.repeat(f, number=5000, repeat=7)) / 5000 * 1e6
            doc["runs"].append({"precision": prec, "m": m, "k": k, "n": n, "host_us": us,
                                "plan_cache": dict(plan_cache.stats)})
    lib._destroy()
    return doc


def judge_rows(recycle_ab: bool = True) -> dict:
    """--judge: the judge's ``eager_overheads`` list (its calls, its method:
    sgemm.bench.eager.per_call_us) with cupy.matmul and torch.matmul in the
    same process, then the pieces of the cached path and the allocation
    candidates, each timed back to back.  With recycle_ab, the allocating
    rows are timed again with outputs not kept (plan_cache._RECYCLE off)."""
    import cupy as cp
    import numpy as np
    import torch

    import sgemm
    import sgemm.blas
    from sgemm import plan_cache
    from sgemm.bench.eager import eager_costs, per_call_us
    from sgemm.runtime import device as devmod
    torch.backends.cuda.matmul.allow_tf32 = False
    out = {"judge": eager_costs()}
    sync = cp.cuda.Device().synchronize
    s = 64
    a = cp.random.standard_normal((s, s), dtype=cp.float32)
    b = cp.random.standard_normal((s, s), dtype=cp.float32)
    a3 = cp.random.standard_normal((8, s, s), dtype=cp.float32)
    b3 = cp.random.standard_normal((8, s, s), dtype=cp.float32)
    ta, tb = torch.randn(s, s, device="cuda"), torch.randn(s, s, device="cuda")
    if recycle_ab:
        plan_cache._RECYCLE = False
        plan_cache.clear()
        alloc = {
            "sgemm.gemm(a, b)": lambda: sgemm.gemm(a, b),
            "sgemm.matmul(a, b)": lambda: sgemm.matmul(a, b),
            "sgemm.matmul(a3, b3)": lambda: sgemm.matmul(a3, b3),
            "cupy.matmul(a, b)": lambda: cp.matmul(a, b),
        }
        out["outputs not kept"] = {k: per_call_us(f, sync) for k, f in alloc.items()}
        plan_cache._RECYCLE = True
        plan_cache.clear()
        out["outputs kept, held by the caller (y = ... in a loop)"] = {}
        for k, f in alloc.items():
            keep = [None]

            def held(f=f, keep=keep):
                keep[0] = f()
            out["outputs kept, held by the caller (y = ... in a loop)"][k] = per_call_us(held, sync)
    t_alloc = {}
    for flag in (False, True):
        plan_cache._TORCH_TEMPLATE = flag
        plan_cache.clear()
        name = "torch.empty_like(template)" if flag else "torch.empty(shape, dtype=, device=)"
        t_alloc[name] = per_call_us(lambda: sgemm.matmul(ta, tb), sync)
    plan_cache._TORCH_TEMPLATE = True
    out["sgemm.matmul(torch a, b), its output by"] = t_alloc
    out["torch.matmul(a, b), again"] = {"torch.matmul(a, b)": per_call_us(
        lambda: torch.matmul(ta, tb), sync)}
    tdev = torch.device("cuda", 0)
    tmpl = torch.empty_strided((s, s), (0, 0), dtype=torch.float32, device=tdev)
    assert torch.empty_like(tmpl).stride() == (s, 1)
    sgemm.gemm(a, b)
    e = next(v for v in plan_cache._entries.values() if v.prepared)
    c = cp.empty((s, s), cp.float32)          # kept alive: the launches below write it
    ptrs = (a.data.ptr, b.data.ptr, c.data.ptr)
    st = cp.cuda.get_current_stream().ptr
    pieces = {
        "cupy.ndarray((64, 64), float32)": lambda: cp.ndarray((s, s), np.float32),
        "cupy.empty((64, 64), float32)": lambda: cp.empty((s, s), np.float32),
        "torch.empty(shape, dtype=, device=torch.device)":
            lambda: torch.empty((s, s), dtype=torch.float32, device=tdev),
        "torch.empty(shape, dtype=, device=0)":
            lambda: torch.empty((s, s), dtype=torch.float32, device=0),
        "ta.new_empty(shape)": lambda: ta.new_empty((s, s)),
        "torch.empty_like(ta)": lambda: torch.empty_like(ta),
        "torch.empty_like(zero-stride template)": lambda: torch.empty_like(tmpl),
        "a.ravel()": lambda: a.ravel(),
        "cupy.cuda.get_current_stream().ptr": lambda: cp.cuda.get_current_stream().ptr,
        "cupy.cuda.runtime.getDevice()": lambda: cp.cuda.runtime.getDevice(),
        "torch raw current stream": lambda: plan_cache._tcur(0),
        "_read_cupy(a) x3": lambda: (plan_cache._read_cupy(a), plan_cache._read_cupy(b),
                                     plan_cache._read_cupy(a)),
        "_read_torch(ta) x2": lambda: (plan_cache._read_torch(ta), plan_cache._read_torch(tb)),
        "devmod.make_current(0)": lambda: devmod.make_current(0),
        "prepared launch": lambda: e.prepared[0](st, ptrs),
        "plan_cache._run": lambda: plan_cache._run(e, ptrs, st),
    }
    out["pieces"] = {k: per_call_us(f, sync) for k, f in pieces.items()}
    out["plan_cache.stats"] = dict(plan_cache.stats)
    return out


def print_judge(doc: dict) -> None:
    j = doc["judge"]
    base = {k: j[k] for k in ("cupy.matmul(a, b, out=c)", "cupy.matmul(a, b)",
                              "torch.matmul(a, b)") if isinstance(j.get(k), float)}
    lim = min(base.values())
    print(f"\n{doc['device']}: the judge's eager list, us per call (64^3; limit = min of "
          f"cupy.matmul and torch.matmul = {lim:.2f})")
    for k, v in j.items():
        if isinstance(v, float):
            flag = "" if not k.startswith("sgemm") else ("  ok" if v <= lim else "  OVER")
            print(f"  {k:34s} {v:7.2f}{flag}")
    for sect in [k for k in doc if k not in ("judge", "device", "plan_cache.stats")]:
        print(f"{sect}:")
        for k, v in doc[sect].items():
            print(f"  {k:52s} {v:7.2f}")
    print("plan cache", doc.get("plan_cache.stats"), "judge rows", j.get("plan_cache.stats"))


def summarize(out_dir: str) -> None:
    """The short table scripts/host_overhead_probe.sh ends with: first-call
    minima (first_call.py's JSON) and host ratios at 64^3 (this probe's)."""
    for arr in ("cupy", "torch"):
        try:
            with open(os.path.join(out_dir, f"first-call-{arr}.json")) as f:
                m = json.load(f)["modes"]["present"]["summary"]
        except (OSError, KeyError, ValueError):
            continue
        cells = [f"{k[:-6]} {m[k]['min']:.1f}" for k in m
                 if k.endswith("first") and isinstance(m[k], dict)]
        print(f"first call {arr:5s} ms (min, bytecode present): " + ", ".join(cells))
    with open(os.path.join(out_dir, "eager-costs.json")) as f:
        runs = [r for r in json.load(f)["runs"] if (r["m"], r["k"], r["n"]) == SIZES[0]]
    print(f"{'host us / torch, 64^3':48s}" + "".join(f"{r['precision']:>16s}" for r in runs))
    for name in runs[0]["host_ratio"]:
        print(f"  {name:46s}" + "".join(f"{r['host_us'][name]:7.1f} x{r['host_ratio'][name]:<6.2f}"
                                        for r in runs))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stand-in", action="store_true")
    p.add_argument("--precisions", default="ieee,tf32x3")
    p.add_argument("--out")
    p.add_argument("--judge", action="store_true",
                   help="the judge's eager list beside cupy.matmul and torch.matmul, the "
                        "cached path's pieces and the allocation candidates (GPU)")
    p.add_argument("--summarize", metavar="DIR", help="print the short table of DIR's results")
    a = p.parse_args(argv)
    if a.summarize:
        summarize(a.summarize)
        return 0
    if a.judge:
        import torch
        doc = {"device": torch.cuda.get_device_name(), **judge_rows()}
        if a.out:
            with open(a.out, "w") as f:
                json.dump(doc, f, indent=1)
        print_judge(doc)
        return 0
    precs = a.precisions.split(",")
    doc = stand_in(precs) if a.stand_in else gpu(precs)
    for r in doc["runs"]:
        print(f"\n{doc['device']}: {r['precision']}, m={r['m']} k={r['k']} n={r['n']}, "
              f"plan cache {r['plan_cache']}")
        for name, h in r["host_us"].items():
            w, i = r.get("wall_us", {}).get(name), r.get("idle_us", {}).get(name)
            hr, ir = r.get("host_ratio", {}).get(name), r.get("idle_ratio", {}).get(name)
            print(f"  {name:42s} host {h:7.2f} us" + (f"  wall {w:7.2f}  idle {i:7.2f} us"
                                                      if w else "")
                  + (f"   x{hr:.2f} host, x{ir:.2f} idle" if hr else ""))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
