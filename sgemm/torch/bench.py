"""The PyTorch integration's benchmark (the targets: a training step and the eager cost per call).

    python -m sgemm.torch.bench --out torch-bench.json [--precision tf32x3]

1. MLP training step: ``layers`` nn.Linear layers of ``width`` (ReLU
   between), batch ``batch``, float32, forward + MSE loss + backward.
   PyTorch FP32 with TF32 off against the same model after
   ``sgemm.torch.convert(model, precision=...)``.  Correctness first: the
   gradients of one step against the same step in float64 (max over
   parameters of ||g - g64|| / ||g64||, Frobenius), for both.  Then time:
   CUDA events around each step, warm-up first, median and quartiles.
   Targets: speedup >= 1.6 and sgemm's gradient error <= PyTorch FP32's.
2. Eager cost per call on a small problem (64^3 by default), where host time
   dominates: ``torch.matmul`` against ``sgemm.torch.mm`` (the eager fast
   path), ``torch.ops.sgemm.mm`` (the registered operator), ``sgemm.gemm``
   with an output (sgemm's own floor) and the linear and with-grad variants.
   Method: sgemm.bench.eager.per_call_us (back-to-back calls, wall clock,
   median of samples).  Target: ``sgemm.torch.mm`` within 1.5x of
   ``torch.matmul``.

Prints a short table and writes everything to ``--out`` as JSON.  Needs a
GPU and PyTorch with CUDA; nothing runs at import.
"""
from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys

SPEEDUP_TARGET = 1.6
EAGER_TARGET = 1.5


def _mlp(torch, layers: int, width: int, seed: int = 0):
    torch.manual_seed(seed)
    mods = []
    for i in range(layers):
        mods.append(torch.nn.Linear(width, width))
        if i < layers - 1:
            mods.append(torch.nn.ReLU())
    return torch.nn.Sequential(*mods).cuda()


def _step(torch, model, x, t):
    model.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), t)
    loss.backward()
    return loss


def _grad_error(model, ref) -> float:
    """max over parameters of ||g - g_ref||_F / ||g_ref||_F."""
    worst = 0.0
    for p, r in zip(model.parameters(), ref.parameters()):
        g, gr = p.grad.double(), r.grad
        worst = max(worst, float((g - gr).norm() / gr.norm().clamp_min(1e-300)))
    return worst


def _time_steps(torch, fn, iters: int, warmup: int) -> dict:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(iters):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        ms.append(e0.elapsed_time(e1))
    q = statistics.quantiles(ms, n=4) if len(ms) > 1 else [ms[0]] * 3
    return {"median_ms": statistics.median(ms), "q1_ms": q[0], "q3_ms": q[2], "samples_ms": ms}


def mlp_step(precision: str = "tf32x3", layers: int = 4, width: int = 4096,
             batch: int = 4096, iters: int = 20, warmup: int = 3) -> dict:
    """Training-step time and gradient error, PyTorch FP32 (TF32 off) against
    sgemm.torch at ``precision``."""
    import torch

    import sgemm.torch as st
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        base = _mlp(torch, layers, width)
        ours = st.convert(copy.deepcopy(base), precision=precision)
        g = torch.Generator(device="cuda").manual_seed(1)
        x = torch.randn(batch, width, device="cuda", generator=g)
        t = torch.randn(batch, width, device="cuda", generator=g)

        ref = copy.deepcopy(base).double()
        _step(torch, ref, x.double(), t.double())
        _step(torch, base, x, t)
        _step(torch, ours, x, t)
        err_torch, err_ours = _grad_error(base, ref), _grad_error(ours, ref)
        del ref
        torch.cuda.empty_cache()

        t_torch = _time_steps(torch, lambda: _step(torch, base, x, t), iters, warmup)
        t_ours = _time_steps(torch, lambda: _step(torch, ours, x, t), iters, warmup)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    speedup = t_torch["median_ms"] / t_ours["median_ms"]
    return {
        "precision": precision, "layers": layers, "width": width, "batch": batch,
        "torch_fp32": {**t_torch, "grad_rel_err": err_torch},
        "sgemm": {**t_ours, "grad_rel_err": err_ours},
        "speedup": speedup,
        "targets": {"speedup>=1.6": speedup >= SPEEDUP_TARGET,
                    "grad_err<=torch_fp32": err_ours <= err_torch},
    }


def eager_overhead(precision: str = "tf32x3", size: int = 64) -> dict:
    """Microseconds per call, back to back on a size^3 problem."""
    import torch
    import torch.nn.functional as F

    import sgemm
    import sgemm.torch as st
    from sgemm.bench.eager import per_call_us

    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    sync = torch.cuda.synchronize
    s = size
    a, b = torch.randn(s, s, device="cuda"), torch.randn(s, s, device="cuda")
    c = torch.empty(s, s, device="cuda")
    w, bias = torch.randn(s, s, device="cuda"), torch.randn(s, device="cuda")
    ag, bg = a.clone().requires_grad_(), b.clone().requires_grad_()
    op = torch.ops.sgemm.mm
    rows = {
        "torch.matmul(a, b)": lambda: torch.matmul(a, b),
        "sgemm.torch.mm(a, b)": lambda: st.mm(a, b, precision=precision),
        "torch.ops.sgemm.mm(a, b)": lambda: op(a, b, precision),
        "sgemm.gemm(a, b, c)": lambda: sgemm.gemm(a, b, c, precision=precision),
        "F.linear(x, w, bias)": lambda: F.linear(a, w, bias),
        "sgemm.torch.linear(x, w, bias)": lambda: st.linear(a, w, bias, precision=precision),
        "torch.matmul(a, b), requires_grad": lambda: torch.matmul(ag, bg),
        "sgemm.torch.mm(a, b), requires_grad": lambda: st.mm(ag, bg, precision=precision),
        "torch.ops.sgemm.mm(a, b), requires_grad": lambda: op(ag, bg, precision),
    }
    try:
        us = {k: per_call_us(f, sync) for k, f in rows.items()}
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    ratio = us["sgemm.torch.mm(a, b)"] / us["torch.matmul(a, b)"]
    return {
        "precision": precision, "size": size, "us_per_call": us,
        "ratio_mm": ratio,
        "ratio_linear": us["sgemm.torch.linear(x, w, bias)"] / us["F.linear(x, w, bias)"],
        "ratio_mm_grad": (us["sgemm.torch.mm(a, b), requires_grad"]
                          / us["torch.matmul(a, b), requires_grad"]),
        "ratio_op": us["torch.ops.sgemm.mm(a, b)"] / us["torch.matmul(a, b)"],
        "targets": {"mm<=1.5x torch.matmul": ratio <= EAGER_TARGET},
    }


def run(out: str | None = None, precision: str = "tf32x3", layers: int = 4,
        width: int = 4096, batch: int = 4096, iters: int = 20, eager_size: int = 64,
        mlp: bool = True, eager: bool = True) -> dict:
    """Both parts; prints the table, writes JSON to ``out`` if given."""
    import torch
    doc = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "precision": precision}
    if mlp:
        doc["mlp"] = mlp_step(precision, layers, width, batch, iters)
    if eager:
        doc["eager"] = eager_overhead(precision, eager_size)
    print(table(doc))
    if out:
        with open(out, "w") as f:
            json.dump(doc, f, indent=1)
    return doc


def table(doc: dict) -> str:
    lines = [f"{doc['device']}, torch {doc['torch']}, precision={doc['precision']}"]
    m = doc.get("mlp")
    if m:
        lines += [
            f"\nMLP step: {m['layers']} x Linear({m['width']}), batch {m['batch']}, fwd+bwd",
            f"{'':<14}{'median ms':>10}{'q1':>9}{'q3':>9}{'grad err':>11}",
        ]
        for name, key in (("torch FP32", "torch_fp32"), ("sgemm", "sgemm")):
            r = m[key]
            lines.append(f"{name:<14}{r['median_ms']:>10.2f}{r['q1_ms']:>9.2f}"
                         f"{r['q3_ms']:>9.2f}{r['grad_rel_err']:>11.2e}")
        lines.append(f"speedup {m['speedup']:.2f}x (target >= {SPEEDUP_TARGET}); "
                     f"targets met: {m['targets']}")
    e = doc.get("eager")
    if e:
        lines.append(f"\nEager cost per call, {e['size']}^3 (us)")
        for k, v in e["us_per_call"].items():
            lines.append(f"  {k:<42}{v:>8.1f}")
        lines.append(f"sgemm.torch.mm / torch.matmul = {e['ratio_mm']:.2f} (target <= "
                     f"{EAGER_TARGET}); linear {e['ratio_linear']:.2f}; with grad "
                     f"{e['ratio_mm_grad']:.2f}; operator {e['ratio_op']:.2f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m sgemm.torch.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--precision", default="tf32x3", choices=("ieee", "tf32x3", "tf32"))
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=4096)
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--eager-size", type=int, default=64)
    p.add_argument("--no-mlp", action="store_true")
    p.add_argument("--no-eager", action="store_true")
    a = p.parse_args(argv)
    run(a.out, a.precision, a.layers, a.width, a.batch, a.iters, a.eager_size,
        mlp=not a.no_mlp, eager=not a.no_eager)
    return 0


if __name__ == "__main__":
    sys.exit(main())
