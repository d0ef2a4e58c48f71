#!/usr/bin/env python3
"""Scaling plot from bench/distributed_bench.py JSON (one or more files).

    python bench/plot_scaling.py results.json [mpi2.json mpi4.json] --out scaling.png

Panels: TFLOPS against GPU count for each N (SUMMA per launcher and local
GEMM, the seed-002 scheme end to end and kernel-only, linear scaling of our
single-GPU kernel, cuBLAS on one GPU, the 190 TFLOPS target); parallel
efficiency (against our kernel on the same local shape, and strong scaling
against one GPU; the 90 % target); SUMMA time split into compute and exposed
communication.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

TARGET_TFLOPS = 190.0
TARGET_EFF = 0.90


def load(paths):
    runs = []
    for p in paths:
        runs += json.loads(Path(p).read_text()).get("runs", [])
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        from distributed_bench import derive
        derive(runs)
    except Exception:       # noqa: BLE001 - plotting must not need CuPy
        pass
    return [r for r in runs if not r.get("skipped") and "time_s" in r]


def series(runs, n, pred, key):
    pts = sorted((r["gpus"], r[key]) for r in runs
                 if r.get("n") == n and pred(r) and r.get(key) is not None)
    return [p for p, _ in pts], [v for _, v in pts]


def plot(runs, out, title=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # A non-FP32-FMA local GEMM (tf32x3) is its own series: fold the precision
    # into the local_gemm label; single-GPU references stay the ieee ones.
    def _prec(r):
        return r.get("precision") or "ieee"
    runs = [{**r, "local_gemm": f"{r.get('local_gemm')}-{_prec(r)}"}
            if r.get("scheme") == "summa" and _prec(r) != "ieee" and r.get("local_gemm") != "cublas"
            else r for r in runs
            if not (r.get("scheme") == "sgemm_1gpu" and _prec(r) != "ieee")]
    sizes = sorted({r["n"] for r in runs if "n" in r and r.get("scheme") != "nccl_bcast"})
    if not sizes:
        raise SystemExit("no runs to plot")
    gpus_all = sorted({r["gpus"] for r in runs if r.get("scheme") == "summa"}) or [1]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.2))
    ax_t, ax_e, ax_b = axes

    summa_kinds = sorted({(r.get("launcher"), r.get("local_gemm")) for r in runs
                          if r.get("scheme") == "summa"})
    styles = ["-", "--", "-.", ":"]
    for i, n in enumerate(sizes):
        col = colors[i % len(colors)]
        for j, (launcher, lg) in enumerate(summa_kinds):
            x, y = series(runs, n, lambda r: r.get("scheme") == "summa" and
                          r.get("launcher") == launcher and r.get("local_gemm") == lg, "tflops")
            if x:
                ax_t.plot(x, y, styles[j % 4], marker="o", color=col,
                          label=f"SUMMA {launcher}/{lg}, N={n}")
            x, y = series(runs, n, lambda r: r.get("scheme") == "summa" and
                          r.get("launcher") == launcher and r.get("local_gemm") == lg,
                          "efficiency_local")
            if x:
                ax_e.plot(x, y, styles[j % 4], marker="o", color=col,
                          label=f"vs local shape, {launcher}/{lg}, N={n}")
            x, y = series(runs, n, lambda r: r.get("scheme") == "summa" and
                          r.get("launcher") == launcher and r.get("local_gemm") == lg,
                          "efficiency_1gpu")
            if x:
                ax_e.plot(x, y, styles[j % 4], marker="s", color=col, alpha=0.5,
                          label=f"strong vs 1 GPU, {launcher}/{lg}, N={n}")
        x, y = series(runs, n, lambda r: r.get("scheme") == "seed002", "tflops")
        if x:
            ax_t.plot(x, y, ":", marker="v", color=col, label=f"seed-002 end to end, N={n}")
        x, y = series(runs, n, lambda r: r.get("scheme") == "seed002", "tflops_kernel")
        if x:
            ax_t.plot(x, y, ":", marker="^", color=col, alpha=0.5,
                      label=f"seed-002 kernels only, N={n}")
        one = [r for r in runs if r.get("scheme") == "sgemm_1gpu" and r["n"] == n]
        if one:
            t1 = one[0]["tflops"]
            ax_t.plot(gpus_all, [t1 * p for p in gpus_all], color=col, lw=0.8, alpha=0.4,
                      label=f"linear from sgemm 1 GPU, N={n}")
        cub = [r for r in runs if r.get("scheme") == "cublas_1gpu" and r["n"] == n]
        if cub:
            ax_t.scatter([1], [cub[0]["tflops"]], marker="*", s=140, color=col, zorder=5,
                         label=f"cuBLAS 1 GPU, N={n}")
    ax_t.axhline(TARGET_TFLOPS, color="k", lw=0.8, ls="--")
    ax_t.text(gpus_all[0], TARGET_TFLOPS, f" target {TARGET_TFLOPS:.0f}", va="bottom", fontsize=8)
    ax_t.set_xlabel("GPUs")
    ax_t.set_ylabel("TFLOPS (2N^3 / time)")
    ax_t.set_xticks(gpus_all)
    ax_t.set_title("Throughput")
    ax_t.legend(fontsize=6.5, loc="upper left")
    ax_t.grid(alpha=0.3)

    ax_e.axhline(TARGET_EFF, color="k", lw=0.8, ls="--")
    ax_e.set_ylim(0, 1.1)
    ax_e.set_xticks(gpus_all)
    ax_e.set_xlabel("GPUs")
    ax_e.set_ylabel("parallel efficiency")
    ax_e.set_title("Efficiency (dashed: 90 % target)")
    ax_e.legend(fontsize=6.5, loc="lower left")
    ax_e.grid(alpha=0.3)

    bars = sorted((r for r in runs if r.get("scheme") == "summa" and "compute_s" in r),
                  key=lambda r: (r["n"], r.get("launcher", ""), r.get("local_gemm", ""),
                                 r["gpus"]))
    labels, comp, expo, comm = [], [], [], []
    for r in bars:
        lg = r.get("local_gemm") or ""
        labels.append(f"N={r['n'] // 1024}k {r['gpus']}G {r.get('launcher', '')[:3]}"
                      f"{'/cb' if lg == 'cublas' else ''}{'/' + lg.split('-')[1] if '-' in lg else ''}")
        tot = r["compute_s"] + r["exposed_comm_s"]
        comp.append(100 * r["compute_s"] / tot if tot else 0)
        expo.append(100 * r["exposed_comm_s"] / tot if tot else 0)
        comm.append(100 * r["comm_s"] / tot if tot else 0)
    xs = list(range(len(bars)))
    ax_b.bar(xs, comp, label="compute (local GEMMs)")
    ax_b.bar(xs, expo, bottom=comp, label="exposed (time - compute)")
    ax_b.scatter(xs, comm, marker="_", s=200, color="k", zorder=5,
                 label="communication, overlapped or not")
    ax_b.set_xticks(xs)
    ax_b.set_xticklabels(labels, fontsize=7, rotation=60, ha="right")
    ax_b.set_ylabel("% of SUMMA time (worst rank)")
    ax_b.set_ylim(0, 105)
    ax_b.set_title("SUMMA time split")
    ax_b.legend(fontsize=7, loc="lower right")
    ax_b.grid(alpha=0.3, axis="y")

    bw = [r for r in runs if r.get("scheme") == "nccl_bcast"]
    sub = ", ".join(f"NCCL bcast {r['gpus']} GPUs {r['busbw_gbs']:.0f} GB/s" for r in bw)
    fig.suptitle((title or "FP32 GEMM scaling on one host") + (f"   ({sub})" if sub else ""),
                 fontsize=10)
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=130)
    plt.close(fig)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", nargs="+")
    ap.add_argument("--out", default="scaling.png")
    ap.add_argument("--title", default=None)
    args = ap.parse_args(argv)
    print(plot(load(args.json), args.out, args.title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
