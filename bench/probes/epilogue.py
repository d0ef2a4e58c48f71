"""Probe: Linear + bias + GELU with the epilogue fused into sgemm's GEMM,
against the same GEMM followed by PyTorch's bias and GELU, and against
PyTorch itself (F.linear then F.gelu, TF32 off), at MLP sizes, in both
precisions.  Inference (no gradient): the case the fused epilogue serves.
Correctness first (each against float64), then time.

    python bench/probes/epilogue.py [--out $OUT/epilogue.json] [--sizes mlp|transformer]

Shapes (``--sizes mlp``, the default): the layers followed by a GELU in
the MLPs users run, a few hundred to 4096 tokens by 1024-4096 features --
the up-projection of a 1024-wide model (1024 -> 4096) and the square
4096-wide layer of the training-step target (4096 -> 4096) at 512, 2048
and 4096 tokens, and a 2048-wide square layer.  ``--sizes transformer``
runs the earlier list (2048-8192 tokens, 768-11008 features).

Rows per shape and precision, each timed on the same operands:

* ``fused``: ``activation(x @ w.T + b)``, bias and GELU in the GEMM's store;
* ``unfused``: sgemm's linear without bias, then ``act(y + b)`` in PyTorch
  (two elementwise kernels: what a user writes; ``y.add_(b)`` moves the same
  bytes);
* ``plain``: sgemm's linear without bias or activation, the GEMM alone: the
  floor of both (the fused row minus it is what the epilogue costs; the
  unfused row minus it is what PyTorch's two passes cost);
* ``torch``: F.linear then the activation, cuBLAS FP32.

``ceiling`` = unfused / plain: the most fused / unfused can reach, with an
epilogue that costs nothing.  The issue's target: fused >= 1.2x unfused.

``--cases`` (for compute-sanitizer): the kernels with an unrolled epilogue
(rungs 8-11 and 38, whose second pass reads back what they stored through
tile_loaders.cuh's epi_tile; the wgmma kernels, tf32x3 and tf32, and the RS
kernel, which finish each element in registers before its one store in
21_tf32x3_wgmma.cu's store_tile_epi), forced, on boundary shapes (extents 1,
17, 63, 65, 127, 129, 257 and the tiles' multiples), C row- and
column-major (bias along the canonical rows and columns), 16-byte aligned
and not, beta = 0 on a NaN-poisoned C and beta != 0 (alpha != 1), every
activation (one per shape) with a bias and one without, each checked against
float64; exits 1 on a mismatch.

    compute-sanitizer --tool memcheck python bench/probes/epilogue.py --cases \
        [--case-kernels tf32x3_wgmma,tf32_wgmma,tf32x3_wgmma_rs]

Timing: CUDA events around ``reps`` back-to-back calls after a warm-up
(reps chosen so a sample lasts ~20 ms), median and quartiles of 7 samples,
per call.  Each row names the plan sgemm ran (``plans``).  Writes JSON (to
--out, default $OUT/epilogue.json or ./epilogue.json).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics

# (tokens, in_features, out_features)
MLP = [(512, 1024, 4096), (2048, 1024, 4096), (4096, 1024, 4096),
       (512, 4096, 4096), (2048, 4096, 4096), (4096, 4096, 4096), (4096, 2048, 2048)]
TRANSFORMER = [(2048, 768, 3072), (2048, 3072, 768), (4096, 1024, 4096), (8192, 4096, 4096),
               (8192, 4096, 11008), (512, 4096, 4096), (64, 4096, 4096)]
TARGET = 1.2


def _time(torch, f, samples: int = 7, sample_ms: float = 20.0) -> dict:
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    f()
    e.record()
    e.synchronize()
    reps = max(3, min(200, int(sample_ms / max(s.elapsed_time(e), 1e-3))))
    out = []
    for _ in range(samples):
        s.record()
        for _ in range(reps):
            f()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) / reps * 1e3)     # us per call
    q = statistics.quantiles(out, n=4)
    return {"median_us": statistics.median(out), "q1_us": q[0], "q3_us": q[2], "reps": reps}


CASE_KERNELS = ("warptile", "double_buffer", "async", "swizzle", "db_cluster",
                "tf32x3_wgmma", "tf32_wgmma", "tf32x3_wgmma_rs")
CASE_SHAPES = [(1, 17, 63), (17, 65, 129), (65, 127, 17), (129, 257, 65), (127, 129, 257),
               (256, 256, 64), (257, 511, 33)]
# (bias, activation), one per shape: every activation code of the epilogue
CASE_EPI = [(True, "gelu"), (True, "gelu_tanh"), (True, "silu"), (True, "relu"),
            (True, None), (False, "gelu"), (True, "gelu")]
# (alpha, beta): beta == 0 on a NaN-poisoned C (C must not be read), and a C
# that is read
CASE_SCALARS = [(1.0, 0.0), (1.5, -0.75)]


def cases(kernels=CASE_KERNELS) -> int:
    """The boundary cases above for ``kernels``; the number of mismatches."""
    import cupy as cp
    import numpy as np
    import sgemm
    from sgemm import epilogue
    from sgemm.kernels.registry import KERNELS
    bad = 0
    rng = np.random.default_rng(0)
    for name in kernels:
        spec = KERNELS[name]
        if spec.min_cc > int(cp.cuda.Device().compute_capability):
            continue
        tol = 5e-3 if spec.precision == "tf32" else 1e-4
        for ((m, n, k), (with_bias, act)), order, off, (alpha, beta) in (
                (s, o, f, ab) for s in zip(CASE_SHAPES, CASE_EPI) for o in "CF"
                for f in (0, 1) for ab in CASE_SCALARS):
            base = [cp.asarray(rng.standard_normal(r * c + off).astype(np.float32))
                    for r, c in ((m, k), (k, n), (m, n))]
            a, b, c = (x[off:].reshape(sh, order=order) for x, sh in
                       zip(base, ((m, k), (k, n), (m, n))))
            bias = cp.asarray(rng.standard_normal(n).astype(np.float32)) if with_bias else None
            c_in = cp.asnumpy(c).astype(np.float64)
            if beta == 0.0:
                c[...] = cp.nan
            label = (f"CASE {name} {m}x{n}x{k} {order} off={off} bias={int(with_bias)} "
                     f"act={act} alpha={alpha} beta={beta}")
            try:
                sgemm.gemm(a, b, c, alpha=alpha, beta=beta, kernel=name, bias=bias,
                           activation=act)
            except Exception as e:          # a kernel that cannot take the shape
                print(f"{label}: skipped ({e})"[:200])
                continue
            z = alpha * (cp.asnumpy(a).astype(np.float64) @ cp.asnumpy(b).astype(np.float64))
            if beta != 0.0:
                z += beta * c_in
            if with_bias:
                z += cp.asnumpy(bias).astype(np.float64)[None, :]
            ref = epilogue.activate(z, act)
            out = cp.asnumpy(c)
            err = (float("inf") if np.isnan(out).any() else
                   float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-30)))
            ok = err < tol
            bad += not ok
            print(f"{label}: rel err {err:.1e}{'' if ok else '  MISMATCH'}", flush=True)
    print(f"cases: {bad} mismatches")
    return bad


def _plan(sgemm, x, w, b, precision, act):
    try:
        return str(sgemm.plan(x, w, trans_b=True, bias=b, activation=act,
                              precision=precision)).replace("\n", " | ")[:300]
    except Exception as e:          # the probe's own description; timing goes on
        return f"(plan: {type(e).__name__}: {e})"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "epilogue.json"))
    ap.add_argument("--act", default="gelu", choices=["gelu", "gelu_tanh", "relu", "silu"])
    ap.add_argument("--sizes", default="mlp", choices=["mlp", "transformer"])
    ap.add_argument("--precisions", default="ieee,tf32x3")
    ap.add_argument("--label", default="", help="a name for the tree measured (JSON only)")
    ap.add_argument("--cases", action="store_true", help="the sanitizer's boundary cases")
    ap.add_argument("--case-kernels", default=",".join(CASE_KERNELS),
                    help="comma-separated kernel names for --cases (default: all of them)")
    args = ap.parse_args(argv)
    if args.cases:
        raise SystemExit(1 if cases(args.case_kernels.split(",")) else 0)

    import torch
    import torch.nn.functional as F
    import sgemm
    import sgemm.torch as st
    from sgemm.torch import _impl
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    act = st.functional.ACTIVATIONS[args.act]
    rows = []
    for tokens, n_in, n_out in (MLP if args.sizes == "mlp" else TRANSFORMER):
        torch.manual_seed(0)
        x = torch.randn(tokens, n_in, device="cuda")
        w = torch.randn(n_out, n_in, device="cuda") / n_in ** 0.5
        b = torch.randn(n_out, device="cuda")
        with torch.no_grad():
            ref = act(F.linear(x.double(), w.double(), b.double()))
            for precision in args.precisions.split(","):
                fs = {"fused": lambda: _impl.linear(x, w, b, precision, args.act),
                      "unfused": lambda: act(_impl.linear(x, w, None, precision) + b),
                      "plain": lambda: _impl.linear(x, w, None, precision),
                      "torch": lambda: act(F.linear(x, w, b))}
                err = {k: float(((fs[k]() - ref).abs().max() / ref.abs().max()).item())
                       for k in ("fused", "unfused", "torch")}
                t = {k: _time(torch, f) for k, f in fs.items()}
                med = {k: v["median_us"] for k, v in t.items()}
                row = {"tokens": tokens, "in": n_in, "out": n_out, "precision": precision,
                       "activation": args.act, "rel_err": err, "time": t,
                       "plans": {"fused": _plan(sgemm, x, w, b, precision, args.act),
                                 "plain": _plan(sgemm, x, w, None, precision, None)},
                       "fused_over_unfused": med["unfused"] / med["fused"],
                       "ceiling": med["unfused"] / med["plain"],
                       "epilogue_us": med["fused"] - med["plain"],
                       "torch_passes_us": med["unfused"] - med["plain"],
                       "fused_over_torch": med["torch"] / med["fused"]}
                rows.append(row)
                print(f"{tokens:5d}x{n_in:5d}->{n_out:5d} {precision:7s} fused "
                      f"{med['fused']:8.1f} unfused {med['unfused']:8.1f} plain "
                      f"{med['plain']:8.1f} torch {med['torch']:8.1f} us  "
                      f"x{row['fused_over_unfused']:.3f} (ceiling x{row['ceiling']:.3f})"
                      f"  err {err['fused']:.1e}", flush=True)
    precs = args.precisions.split(",")
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
              "label": args.label, "sizes": args.sizes, "activation": args.act,
              "target_fused_over_unfused": TARGET, "rows": rows,
              "geomean_fused_over_unfused": {
                  p: statistics.geometric_mean([r["fused_over_unfused"] for r in rows
                                                if r["precision"] == p]) for p in precs},
              "geomean_ceiling": {
                  p: statistics.geometric_mean([r["ceiling"] for r in rows
                                                if r["precision"] == p]) for p in precs}}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({k: result[k] for k in ("geomean_fused_over_unfused", "geomean_ceiling")}))
    return result


if __name__ == "__main__":
    main()
