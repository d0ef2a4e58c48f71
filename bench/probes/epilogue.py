"""Probe: Linear + bias + GELU with the epilogue fused into sgemm's GEMM,
against the same GEMM followed by PyTorch's bias and GELU, and against
PyTorch itself (F.linear then F.gelu, TF32 off), at transformer sizes, in
both precisions.  Inference (no gradient): the case the fused epilogue
serves.  Correctness first (each against float64), then time.

    python bench/probes/epilogue.py [--out $OUT/epilogue.json] [--reps 50]

Timing: CUDA events around ``reps`` back-to-back calls after a warm-up,
median and quartiles of 7 such samples, per call.  The issue's target:
fused >= 1.2x the unfused sgemm (GEMM, then bias + GELU in PyTorch).
Writes JSON (to --out, default $OUT/epilogue.json or ./epilogue.json).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics

# (tokens, in_features, out_features): GPT-2/LLaMA-like MLP and projection layers
SIZES = [(2048, 768, 3072), (2048, 3072, 768), (4096, 1024, 4096), (8192, 4096, 4096),
         (8192, 4096, 11008), (512, 4096, 4096), (64, 4096, 4096)]
TARGET = 1.2


def _time(torch, f, reps: int, samples: int = 7) -> dict:
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    out = []
    for _ in range(samples):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            f()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) / reps * 1e3)     # us per call
    q = statistics.quantiles(out, n=4)
    return {"median_us": statistics.median(out), "q1_us": q[0], "q3_us": q[2]}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "epilogue.json"))
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--act", default="gelu", choices=["gelu", "gelu_tanh", "relu", "silu"])
    args = ap.parse_args(argv)

    import torch
    import torch.nn.functional as F
    import sgemm.torch as st
    from sgemm.torch import _impl
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    act = st.functional.ACTIVATIONS[args.act]
    rows = []
    for tokens, n_in, n_out in SIZES:
        torch.manual_seed(0)
        x = torch.randn(tokens, n_in, device="cuda")
        w = torch.randn(n_out, n_in, device="cuda") / n_in ** 0.5
        b = torch.randn(n_out, device="cuda")
        with torch.no_grad():
            ref = act(F.linear(x.double(), w.double(), b.double()))
            for precision in ("ieee", "tf32x3"):
                fused = lambda: _impl.linear(x, w, b, precision, args.act)       # noqa: E731
                unfused = lambda: act(_impl.linear(x, w, None, precision) + b)   # noqa: E731
                torch_ = lambda: act(F.linear(x, w, b))                          # noqa: E731
                err = {k: float(((f() - ref).abs().max() / ref.abs().max()).item())
                       for k, f in (("fused", fused), ("unfused", unfused), ("torch", torch_))}
                t = {k: _time(torch, f, args.reps)
                     for k, f in (("fused", fused), ("unfused", unfused), ("torch", torch_))}
                row = {"tokens": tokens, "in": n_in, "out": n_out, "precision": precision,
                       "activation": args.act, "rel_err": err, "time": t,
                       "fused_over_unfused": t["unfused"]["median_us"] / t["fused"]["median_us"],
                       "fused_over_torch": t["torch"]["median_us"] / t["fused"]["median_us"]}
                rows.append(row)
                print(f"{tokens:5d}x{n_in:5d}->{n_out:5d} {precision:7s} "
                      f"fused {t['fused']['median_us']:9.1f} us  unfused "
                      f"{t['unfused']['median_us']:9.1f}  torch {t['torch']['median_us']:9.1f}"
                      f"  x{row['fused_over_unfused']:.2f} / x{row['fused_over_torch']:.2f}"
                      f"  err {err['fused']:.1e}", flush=True)
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
              "target_fused_over_unfused": TARGET, "rows": rows,
              "geomean_fused_over_unfused": {
                  p: statistics.geometric_mean([r["fused_over_unfused"] for r in rows
                                                if r["precision"] == p])
                  for p in ("ieee", "tf32x3")}}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result["geomean_fused_over_unfused"]))
    return result


if __name__ == "__main__":
    main()
