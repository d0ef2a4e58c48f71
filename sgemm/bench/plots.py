"""PNG figures from a results document (matplotlib, Agg backend: no display).

    tflops   TFLOP/s vs problem size, one line per runner, log2 x axis
    ratio    each runner's TFLOP/s over cuBLAS's at the same size
    roofline arithmetic intensity (FLOP/byte, fewest DRAM bytes) vs TFLOP/s,
             roof = min(measured FP32 peak, intensity x measured bandwidth)

Everything is read from the JSON, so ``sgemm plot results.json`` redraws
them anywhere, no GPU needed.
"""
from __future__ import annotations

from pathlib import Path

from . import report, runners

# Fixed styles for the references; ladder rungs take colours from a map in id order.
REF_STYLE = {   # references in black/brown, told apart by line style and marker
    "cublas": dict(color="black", ls="--", marker="s"),
    "cublas-tf32": dict(color="black", ls=":", marker="s"),
    "triton": dict(color="black", ls="-.", marker="^"),
    "triton-tf32x3": dict(color="dimgray", ls="-.", marker="^"),
    "triton-tf32": dict(color="dimgray", ls=":", marker="^"),
    "numpy": dict(color="saddlebrown", ls=":", marker="v"),
}


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


MARKERS = "osD^vP<X>hp*"


def _styles(doc) -> dict:
    """Ladder rungs: 20 distinct colours (tab20) and a marker cycle, so that
    neighbouring rungs stay apart even with a dozen lines."""
    plt = _plt()
    rs = report.runners(doc)
    ladder = [d for d in rs if d["kind"] == "sgemm"]
    cmap = plt.get_cmap("tab10" if len(ladder) <= 10 else "tab20")
    out = {}
    for i, d in enumerate(ladder):
        out[d["runner"]] = dict(color=cmap(i % cmap.N), ls="-", marker=MARKERS[i % len(MARKERS)])
    for d in rs:
        if d["runner"] not in out:
            out[d["runner"]] = REF_STYLE.get(d["runner"], dict(color="gray", ls="-", marker="x"))
    return out


def _label(d) -> str:
    rung = d["kind"] == "sgemm" and d["id"] is not None and d["id"] < runners.AUTO_ID
    return f"{d['id']}: {d['runner']}" if rung else d["runner"]


def _x(doc):
    """x value per shape: N for square sizes, else (M*N*K)^(1/3)."""
    ss = report.shapes(doc)
    sq = all(s.square for s in ss)
    xs = {s: (s.m if sq else (s.m * s.n * s.k * s.batch) ** (1 / 3)) for s in ss}
    label = "matrix size N (M = N = K)" if sq else "problem size (M·N·K·batch)^(1/3)"
    return xs, label


def _titles(fig, ax, doc, what: str) -> None:
    """Big title says what is plotted; the small one says where and when."""
    dev = doc["env"].get("device", {}).get("name", "?")
    sub = f"{dev}, {(doc.get('created') or '')[:10]}"
    if doc.get("test_fixture"):
        sub += " — TEST FIXTURE, not a measurement"
    elif doc.get("status") != "complete":
        sub += f" ({doc.get('status')} run)"
    fig.suptitle(what, fontsize=12)
    ax.set_title(sub, fontsize=9)


def _series(doc, runner, xs, value):
    pts = []
    for s, x in xs.items():
        r = report.find(doc, runner, s)
        if r is not None and r["status"] == "ok":
            v = value(r)
            if v is not None:
                pts.append((x, v))
    pts.sort()
    return [p[0] for p in pts], [p[1] for p in pts]


def _size_axis(ax, xs) -> None:
    """log2 x axis labelled with the sizes themselves (256, 512, ...)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    ax.set_xscale("log", base=2)
    ticks = sorted(set(xs.values()))
    if len(ticks) <= 12:
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0f}"))


def _finish(fig, ax, path):
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    _plt().close(fig)


def plot_tflops(doc, path):
    plt = _plt()
    xs, xl = _x(doc)
    st = _styles(doc)
    fig, ax = plt.subplots(figsize=(9, 5.2))
    for d in report.runners(doc):
        x, y = _series(doc, d["runner"], xs, lambda r: r["tflops"])
        if x:
            ax.plot(x, y, label=_label(d), ms=4, lw=1.5, **st[d["runner"]])
    peak = doc["ceilings"].get("fp32_peak_tflops")
    if peak:
        ax.axhline(peak, color="red", lw=0.8, alpha=0.6)
        ax.text(min(xs.values()), peak, f" FP32 peak {peak:.0f}", color="red", fontsize=8,
                va="bottom")
    _size_axis(ax, xs)
    ax.set_xlabel(xl)
    ax.set_ylabel("throughput (TFLOP/s, 2·M·N·K / median time)")
    _titles(fig, ax, doc, "SGEMM throughput")
    _finish(fig, ax, path)


def plot_ratio(doc, path):
    plt = _plt()
    xs, xl = _x(doc)
    st = _styles(doc)
    fig, ax = plt.subplots(figsize=(9, 5.2))
    for d in report.runners(doc):
        if d["runner"].startswith("cublas"):
            continue
        x, y = _series(doc, d["runner"], xs,
                       lambda r: (report.pct_of_baseline(doc, r) or 0) / 100 or None)
        if x:
            ax.plot(x, y, label=_label(d), ms=4, lw=1.5, **st[d["runner"]])
    ax.axhline(1.0, color="black", ls="--", lw=1, label="cuBLAS = 1")
    _size_axis(ax, xs)
    ax.set_yscale("log")
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    lo, hi = ax.get_ylim()
    ticks = [t for t in (0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3) if lo <= t <= hi]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.set_xlabel(xl)
    ax.set_ylabel("TFLOP/s over cuBLAS's (TF32 runners: over TF32 cuBLAS)")
    _titles(fig, ax, doc, "Speed relative to cuBLAS")
    _finish(fig, ax, path)


def plot_roofline(doc, path):
    plt = _plt()
    st = _styles(doc)
    c = doc["ceilings"]
    peak = c.get("fp32_measured_tflops") or c["fp32_peak_tflops"]
    bw = c["bandwidth_gbs"]
    fig, ax = plt.subplots(figsize=(9, 5.2))
    ai_all = [r["flops"] / r["min_bytes"] for r in doc["results"]
              if r["status"] == "ok" and r["kind"] != "numpy"]
    lo = min(ai_all + [1.0]) / 2
    hi = max(ai_all + [2 * peak * 1e3 / bw]) * 2
    knee = peak * 1e12 / (bw * 1e9)
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.plot(xs, [min(peak, x * bw * 1e9 / 1e12) for x in xs], color="red", lw=1.5,
            label=f"roof: {peak:.1f} TFLOP/s FP32, {bw:.0f} GB/s")
    ax.axvline(knee, color="red", lw=0.5, ls=":")
    sizes = sorted({r["flops"] for r in doc["results"]})
    for d in report.runners(doc):
        pts = [r for r in doc["results"] if r["runner"] == d["runner"] and r["status"] == "ok"]
        if not pts or d["kind"] == "numpy":   # a CPU has no place under the GPU's roof
            continue
        ms = [12 + 60 * sizes.index(r["flops"]) / max(len(sizes) - 1, 1) for r in pts]
        s = st[d["runner"]]
        ax.scatter([r["flops"] / r["min_bytes"] for r in pts], [r["tflops"] for r in pts],
                   s=ms, color=s["color"], marker=s["marker"], alpha=0.85, label=_label(d),
                   edgecolors="black", linewidths=0.3)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    from matplotlib.ticker import FuncFormatter
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.xaxis.set_major_formatter(plain)
    ax.yaxis.set_major_formatter(plain)
    ax.set_xlabel("arithmetic intensity (FLOP/byte, 2MNK / fewest DRAM bytes)")
    ax.set_ylabel("attainable throughput (TFLOP/s)")
    src = "measured" if c.get("fp32_measured_tflops") else "nominal"
    _titles(fig, ax, doc, f"Roofline: {src} FP32 peak, {c.get('bandwidth_source', '')} "
                          "bandwidth (larger marker = larger problem)")
    _finish(fig, ax, path)


PLOTS = {"tflops": plot_tflops, "ratio": plot_ratio, "roofline": plot_roofline}


def plot_suite(doc, path):
    """The shape suite (bench/suite.py's JSON): our time over cuBLAS's per
    shape, eager (bars) and under CUDA graphs (dots, small problems), with
    the issue's lines at 0.8, 1.0 and 1.3."""
    plt = _plt()
    rows = [r for r in doc["rows"] if "ratio" in r]
    fig, ax = plt.subplots(figsize=(8, 0.22 * len(rows) + 1.6))
    ys = list(range(len(rows)))[::-1]
    ax.barh(ys, [r["ratio"] for r in rows], color="#4c72b0", label="eager (CUDA events)")
    g = [(y, r["graph_ratio"]) for y, r in zip(ys, rows) if r.get("graph_ratio")]
    if g:
        ax.plot([x for _, x in g], [y for y, _ in g], "o", color="#dd8452", ms=4,
                label="under CUDA graphs")
    for x, style in ((0.8, ":"), (1.0, "-"), (1.3, "--")):
        ax.axvline(x, color="k", lw=0.8, ls=style)
    ax.set_yticks(ys)
    ax.set_yticklabels([f"{r['shape']}  {r['kernel']}" for r in rows], fontsize=7)
    ax.set_xlabel("cuBLAS time / our time (> 1: faster than cuBLAS)")
    s = doc.get("summary", {})
    env = doc.get("env", {})
    ax.set_title(f"{env.get('device', '?')}: geomean {s.get('geomean_ratio', float('nan')):.3f}, "
                 f"min {s.get('min_ratio', float('nan')):.3f}", fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return Path(path)


def plot_all(doc, out_dir, stem: str) -> list[Path]:
    """Write <stem>-tflops.png, <stem>-ratio.png, <stem>-roofline.png."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    if not any(r["status"] == "ok" for r in doc["results"]):
        return paths
    for name, fn in PLOTS.items():
        p = out / f"{stem}-{name}.png"
        fn(doc, p)
        paths.append(p)
    return paths
