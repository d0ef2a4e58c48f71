"""Tables from a results document: text for the terminal, Markdown for the
README and docs.  Everything is computed from the JSON (schema.py)."""
from __future__ import annotations

from .sizes import Shape

# Baseline per precision (cuBLAS has no 3xTF32 mode: FP32 cuBLAS for those).
BASELINE = {"ieee": "cublas", "tf32x3": "cublas", "tf32": "cublas-tf32"}


def shape_of(rec) -> Shape:
    return Shape.from_json(rec["shape"])


def shapes(doc) -> list[Shape]:
    out = []
    for r in doc["results"]:
        s = shape_of(r)
        if s not in out:
            out.append(s)
    return out


def runners(doc) -> list[dict]:
    """One descriptor per runner, ladder kernels in id order, then the rest
    in the order they were measured."""
    seen = {}
    for r in doc["results"]:
        seen.setdefault(r["runner"], {k: r.get(k) for k in
                                      ("runner", "kind", "id", "title", "precision")})
    ladder = sorted((d for d in seen.values() if d["kind"] == "sgemm"), key=lambda d: d["id"])
    return ladder + [d for d in seen.values() if d["kind"] != "sgemm"]


def find(doc, runner: str, shape: Shape):
    for r in doc["results"]:
        if r["runner"] == runner and shape_of(r) == shape:
            return r
    return None


def baseline(doc, rec):
    b = find(doc, BASELINE.get(rec["precision"], "cublas"), shape_of(rec))
    return b if b is not None and b["status"] == "ok" else None


def pct_of_baseline(doc, rec) -> float | None:
    b = baseline(doc, rec)
    if rec["status"] != "ok" or b is None:
        return None
    return 100.0 * rec["tflops"] / b["tflops"]


def pct_of_peak(doc, rec) -> float | None:
    """% of the FP32 (FMA) peak; None for tensor-core precisions, whose peak
    is another number altogether."""
    peak = doc["ceilings"].get("fp32_peak_tflops")
    if rec["status"] != "ok" or not peak or rec.get("precision", "ieee") != "ieee":
        return None
    return 100.0 * rec["tflops"] / peak


def _f(v, fmt, none="-"):
    return none if v is None else format(v, fmt)


def _status_text(rec) -> str:
    if rec["status"] == "ok":
        return (rec.get("note") or "")[:70]
    msg = (rec.get("error") or "").splitlines()[0] if rec.get("error") else ""
    return f"{rec['status'].upper()}: {msg}"[:70]


def text_table(doc) -> str:
    """One row per measurement: time, TFLOP/s, % of cuBLAS, % of peak, error."""
    head = ["kernel", "size", "median ms", "IQR ms", "TFLOP/s", "% cuBLAS", "% peak",
            "rel err", "note"]
    rows = []
    for s in shapes(doc):
        for d in runners(doc):
            r = find(doc, d["runner"], s)
            if r is None:
                continue
            ok = r["status"] == "ok"
            rows.append([
                d["runner"], s.label,
                _f(r.get("median_ms") if ok else None, ".4g"),
                _f(r["q3_ms"] - r["q1_ms"] if ok else None, ".2g"),
                _f(r.get("tflops") if ok else None, ".2f"),
                _f(pct_of_baseline(doc, r), ".0f"),
                _f(pct_of_peak(doc, r), ".0f"),
                _f(r.get("rel_error"), ".1e"),
                _status_text(r)])
    return _grid(head, rows)


def summary_table(doc) -> str:
    """TFLOP/s, runner x size: the ladder at a glance."""
    ss = shapes(doc)
    head = ["kernel"] + [s.label for s in ss]
    rows = []
    for d in runners(doc):
        row = [d["runner"]]
        for s in ss:
            r = find(doc, d["runner"], s)
            row.append("" if r is None else
                       f"{r['tflops']:.2f}" if r["status"] == "ok" else r["status"])
        rows.append(row)
    return _grid(head, rows)


def _grid(head, rows) -> str:
    w = [max(len(str(x)) for x in col) for col in zip(head, *rows)] if rows else \
        [len(h) for h in head]
    last = len(head) - 1   # name and note columns read left-aligned, numbers right-aligned
    line = lambda r: "  ".join(str(x).ljust(w[i]) if i in (0, last) and head[last] == "note"  # noqa: E731
                               or i == 0 else str(x).rjust(w[i])
                               for i, x in enumerate(r)).rstrip()
    return "\n".join([line(head), line(["-" * n for n in w])] + [line(r) for r in rows])


# -- Markdown ----------------------------------------------------------------------------
def _md(head, rows) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(x) for x in r) + " |" for r in rows]
    return "\n".join(out)


def _cell(doc, r) -> str:
    if r is None:
        return ""
    if r["status"] != "ok":
        return r["status"]
    return f"{r['tflops']:.1f}"


def md_ladder(doc) -> str:
    """Rung x size TFLOP/s, plus % of cuBLAS at the largest size measured."""
    ss = shapes(doc)
    big = ss[-1] if ss else None
    head = ["#", "kernel", "what it adds"] + [s.label for s in ss] + \
        [f"% of cuBLAS at {big.label}" if big else "% of cuBLAS"]
    rows = []
    for d in runners(doc):
        cells = [_cell(doc, find(doc, d["runner"], s)) for s in ss]
        r = find(doc, d["runner"], big) if big else None
        p = pct_of_baseline(doc, r) if r else None
        rung = d["id"] is not None and d["id"] < 100   # 100: the dispatcher ('auto')
        rows.append([d["id"] if rung else "", f"`{d['runner']}`",
                     d["title"]] + cells + [_f(p, ".0f", "")])
    return _md(head, rows) + "\n\n" + _caption(doc)


def md_results(doc) -> str:
    head = ["kernel", "size", "median ms", "TFLOP/s", "% of cuBLAS", "% of peak", "rel. error"]
    rows = []
    for s in shapes(doc):
        for d in runners(doc):
            r = find(doc, d["runner"], s)
            if r is None:
                continue
            ok = r["status"] == "ok"
            rows.append([f"`{d['runner']}`", s.label,
                         _f(r.get("median_ms") if ok else None, ".4g"),
                         _f(r.get("tflops") if ok else None, ".2f", r["status"]),
                         _f(pct_of_baseline(doc, r), ".0f"), _f(pct_of_peak(doc, r), ".0f"),
                         _f(r.get("rel_error"), ".1e")])
    return _md(head, rows) + "\n\n" + _caption(doc)


def md_rung(doc, key: str) -> str:
    """Numbers for one rung (by id or name) across sizes, for docs/kernels.md."""
    d = next((x for x in runners(doc) if str(x["id"]) == key or x["runner"] == key), None)
    if d is None:
        return f"_no measurements of `{key}` in this results file_"
    head = ["size", "median ms", "TFLOP/s", "% of cuBLAS", "% of peak", "rel. error"]
    rows = []
    for s in shapes(doc):
        r = find(doc, d["runner"], s)
        if r is None:
            continue
        ok = r["status"] == "ok"
        rows.append([s.label, _f(r.get("median_ms") if ok else None, ".4g"),
                     _f(r.get("tflops") if ok else None, ".2f", r["status"]),
                     _f(pct_of_baseline(doc, r), ".0f"), _f(pct_of_peak(doc, r), ".0f"),
                     _f(r.get("rel_error"), ".1e")])
    return _md(head, rows) + "\n\n" + _caption(doc)


def md_speedup_numpy(doc) -> str:
    """Seed 001's table: CPU BLAS vs the best ladder kernel, and the speedup."""
    head = ["size", "NumPy (CPU) GFLOP/s", "best sgemm kernel", "GFLOP/s", "speedup"]
    rows = []
    for s in shapes(doc):
        n = find(doc, "numpy", s)
        if n is None or n["status"] != "ok":
            continue
        ours = [r for r in doc["results"] if r["kind"] == "sgemm" and r["status"] == "ok"
                and shape_of(r) == s]
        if not ours:
            continue
        best = max(ours, key=lambda r: r["tflops"])
        rows.append([s.label, f"{n['tflops'] * 1e3:.0f}", f"`{best['runner']}`",
                     f"{best['tflops'] * 1e3:.0f}", f"{best['tflops'] / n['tflops']:.0f}x"])
    return _md(head, rows) + "\n\n" + _caption(doc)


def md_accuracy(doc) -> str:
    ss = shapes(doc)
    head = ["kernel", "precision"] + [s.label for s in ss]
    rows = []
    for d in runners(doc):
        cells = []
        for s in ss:
            r = find(doc, d["runner"], s)
            cells.append("" if r is None or r.get("rel_error") is None
                         else f"{r['rel_error']:.1e}")
        rows.append([f"`{d['runner']}`", d["precision"]] + cells)
    return _md(head, rows) + "\n\n_relative Frobenius error against a float64 product_"


def _caption(doc) -> str:
    env = doc["env"]
    o = doc.get("options", {})
    dev = env.get("device", {}).get("name", "?")
    date = (doc.get("created") or "")[:10]
    how = ["CUDA graphs" if o.get("graphs") else "CUDA events",
           "cold L2" if o.get("cold_l2") else "warm L2"]
    fix = " **Test fixture, not a measurement.**" if doc.get("test_fixture") else ""
    return (f"_Median of repeats, {dev}, {date}, {', '.join(how)}; "
            f"peak {doc['ceilings']['fp32_peak_tflops']:.1f} TFLOP/s FP32. "
            f"Regenerate with `sgemm plot`.{fix}_")


TABLES = {"ladder": md_ladder, "results": md_results, "speedup-numpy": md_speedup_numpy,
          "accuracy": md_accuracy}


def markdown(doc, name: str) -> str | None:
    """The Markdown table called ``name`` ('rung-<id|name>' for one rung)."""
    if name in TABLES:
        return TABLES[name](doc)
    if name.startswith("rung-"):
        return md_rung(doc, name[len("rung-"):])
    return None
