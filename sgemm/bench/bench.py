"""``sgemm bench``: check, then time, every runner on every shape; write JSON,
print tables, draw plots.  The JSON is rewritten after each measurement, so
Ctrl-C (or a crash) leaves a valid partial document."""
from __future__ import annotations

import datetime
import json
import math
import os
import random
import sys
import time
from pathlib import Path

from . import harness, report, runners, schema
from .sizes import DEFAULT_SIZES, Shape, parse_sizes, read_shapes, square


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def default_out() -> Path:
    """./sgemm-results.  Never bench/results: that directory holds only the
    files the README and docs cite (sgemm/bench/claims.py), and a result
    joins it by hand, with its claim (CONTRIBUTING.md)."""
    return Path("sgemm-results")


def _clean(x):
    """JSON has no NaN/Inf: store them as null (the record's error says why)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


class Writer:
    """Atomic rewrite of the results file: readers never see half a document."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, doc: dict) -> None:
        doc["updated"] = _now()
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(_clean(doc), indent=1, allow_nan=False) + "\n")
        os.replace(tmp, self.path)


class Progress:
    """One line on stderr: redrawn in place on a terminal, one line per step
    otherwise (logs stay readable).  No dependency."""

    def __init__(self, total: int):
        self.total, self.done, self.t0 = total, 0, time.perf_counter()
        self.tty = sys.stderr.isatty()

    def show(self, what: str, result: str = "") -> None:
        w = 24
        fill = int(w * self.done / max(self.total, 1))
        el = int(time.perf_counter() - self.t0)
        line = (f"[{'#' * fill}{'.' * (w - fill)}] {self.done}/{self.total} "
                f"{el // 60}:{el % 60:02d}  {what}  {result}")
        if self.tty:
            sys.stderr.write("\r" + line[:120].ljust(120))
        elif result:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def step(self, what: str, result: str) -> None:
        self.done += 1
        self.show(what, result)

    def close(self) -> None:
        if self.tty:
            sys.stderr.write("\n")


# -- one measurement ------------------------------------------------------------------------
def _error_text(e: BaseException) -> str:
    msg = str(e).strip() or type(e).__name__
    lines = msg.splitlines()
    if len(lines) > 12:  # a compiler log: keep its head, the JSON is not a log file
        msg = "\n".join(lines[:12] + [f"... ({len(lines) - 12} more lines)"])
    return f"{type(e).__name__}: {msg}"


def measure(r: runners.Runner, inp: harness.Inputs, stream, opts, est_s: float | None,
            fast_clock) -> dict:
    sh = inp.shape
    tol = harness.TOLERANCE[r.precision]
    rec = dict(r.describe(), shape=sh.to_json(), flops=sh.flops, min_bytes=sh.min_bytes,
               status="ok", error=None, rel_error=None, tolerance=tol, samples_ms=[],
               inner=None, sets=inp.n_sets if r.gpu else 1,
               graphs=bool(opts.graphs and r.gpu),
               timer="cuda-events" if r.gpu else "perf_counter", config=None, clock_mhz=None)
    why = r.unsupported(sh)
    if why is None and est_s is not None and est_s > harness.SLOW_RUN_S:
        why = (f"one run would take ~{est_s:.1f} s (> {harness.SLOW_RUN_S} s, "
               "extrapolated from the previous size); not timed")
    if why:
        rec.update(status="skipped", error=why)
        return rec
    from ..errors import ArgumentError
    try:
        b = r.bind(inp, stream)
    except ArgumentError as e:
        # The plan refused the shape (a scheme kernel that serves other shapes,
        # a tile that cannot cover it): not a failure of the kernel.
        rec.update(status="skipped", error=f"does not run this shape: {e}")
        return rec
    except KeyboardInterrupt:
        raise
    except Exception as e:
        rec.update(status="failed", error=_error_text(e))
        return rec
    try:
        with b.context():
            if r.gpu:
                b.poison(0)                       # unwritten elements stay NaN and fail
                t0 = time.perf_counter()
                b.launch(0)
                stream.synchronize()
                one = time.perf_counter() - t0
                err = harness.rel_error(b.output(0), inp)
            else:
                t0 = time.perf_counter()
                b.run_host()
                one = time.perf_counter() - t0
                err = harness.rel_error_host(b.outs[0], inp)
            rec["rel_error"] = err
            if not err <= tol:
                rec.update(status="failed", error=(
                    "check failed: output has NaN/Inf (unwritten or overflowed elements)"
                    if not math.isfinite(err) else
                    f"check failed: relative error {err:.2e} > tolerance {tol:.0e}"))
                return rec
            if r.kind == "sgemm" and one > harness.SLOW_RUN_S:
                rec.update(status="skipped", error=f"one run took {one:.2f} s "
                           f"(> {harness.SLOW_RUN_S} s); checked, not timed")
                return rec
            before = fast_clock()
            graphs = bool(opts.graphs and b.capturable)
            if opts.graphs and not graphs:
                rec.update(graphs=False, note="cannot be captured in a CUDA graph (CuPy "
                           "refuses cuBLAS calls during capture): timed with plain launches")
            if r.gpu:
                t = harness.time_launches(b.launch, stream, inp.n_sets, opts.repeat, graphs)
            else:
                t = harness.time_host(b.run_host, opts.repeat)
            after = fast_clock()
        cfg = b.config if b.config else (b.config_fn() if hasattr(b, "config_fn") else None)
        q1, med, q3 = harness.quartiles(t.samples_ms)
        rec.update(samples_ms=t.samples_ms, median_ms=med, q1_ms=q1, q3_ms=q3,
                   tflops=sh.flops / (med * 1e-3) / 1e12, inner=t.inner, config=cfg,
                   clock_mhz={"before": before, "after": after} if before or after else None)
    except KeyboardInterrupt:
        raise
    except Exception as e:
        rec.update(status="failed", error=_error_text(e), samples_ms=[])
    return rec


def _context_alive() -> bool:
    """After a failure: is the CUDA context still usable (an illegal address
    poisons it for the rest of the process)?"""
    import cupy
    try:
        cupy.cuda.Device().synchronize()
        return True
    except Exception:
        return False


# -- the run --------------------------------------------------------------------------------
def _shapes(args) -> list[Shape]:
    if args.shapes:
        return read_shapes(args.shapes)
    return square(parse_sizes(args.sizes) if args.sizes else DEFAULT_SIZES)


def new_doc(args, argv, env, ceilings, rs, shapes) -> dict:
    return {"schema": schema.SCHEMA, "schema_version": schema.VERSION, "status": "running",
            "created": _now(), "updated": _now(), "command": ["sgemm", "bench"] + list(argv),
            "options": {"kernels": [r.name for r in rs], "precision": args.precision,
                        "sizes": None if args.shapes else [s.m for s in shapes],
                        "shapes_file": args.shapes, "cold_l2": bool(args.cold_l2),
                        "graphs": bool(args.graphs), "repeat": args.repeat,
                        "seed": args.seed},
            "env": env, "ceilings": ceilings, "results": []}


def ceilings(env: dict) -> dict:
    m = env.get("measured", {})
    bw = m.get("copy_bandwidth_gbs")
    return {"fp32_peak_tflops": env["fp32_peak_tflops"],
            "fp32_peak_source": env["fp32_peak_formula"],
            "fp32_measured_tflops": m.get("fma_peak_tflops"),
            "bandwidth_gbs": bw or env["dram_bandwidth_datasheet_gbs"],
            "bandwidth_source": "measured copy" if bw else "datasheet",
            "bandwidth_datasheet_gbs": env["dram_bandwidth_datasheet_gbs"]}


def validate_args(args) -> tuple[list[Shape], list[runners.Runner]]:
    """Everything about the arguments that can be checked without a GPU."""
    if args.repeat < 1:
        raise ValueError("--repeat must be at least 1")
    if args.sizes and args.shapes:
        raise ValueError("give --sizes or --shapes, not both")
    return _shapes(args), runners.select(args.kernels, args.precision)


def run(args, argv) -> int:
    # FP32 cuBLAS unless a tf32 runner asks: CuPy reads CUPY_TF32 once, at first use.
    os.environ["CUPY_TF32"] = "0"
    from . import info
    shapes, rs = validate_args(args)
    if args.seed is None:
        args.seed = random.randrange(2**31)
    out_dir = Path(args.out) if args.out else default_out()
    env = info.collect(measure=True)
    ceil = ceilings(env)
    import cupy
    runners.set_cublas_tf32(False)
    dev_slug = "".join(c if c.isalnum() else "-" for c in env["device"]["name"].lower())
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = out_dir / f"bench-{dev_slug.strip('-')}-{stamp}.json"
    doc = new_doc(args, argv, env, ceil, rs, shapes)
    writer = Writer(path)
    writer.write(doc)

    log = sys.stderr
    print(f"sgemm bench: {env['device']['name']}, {env['fp32_peak_formula']}; measured "
          f"{ceil['bandwidth_gbs']:.0f} GB/s copy"
          + (f", {ceil['fp32_measured_tflops']:.1f} TFLOP/s FMA" if ceil["fp32_measured_tflops"]
             else ""), file=log)
    print(f"  {len(rs)} runners x {len(shapes)} shapes: {', '.join(r.name for r in rs)}",
          file=log)
    print(f"  each checked against float64 before timing; runs longer than "
          f"{harness.SLOW_RUN_S} s are skipped; results -> {path}", file=log)

    stream = cupy.cuda.Stream(non_blocking=True)
    fast_clock = (lambda: info.read_clocks(fast=True).get("sm_mhz")) \
        if info._nvml() else (lambda: None)
    prog = Progress(len(rs) * len(shapes))
    last: dict[str, tuple[float, int]] = {}     # runner -> (median s, flops) at its last size
    code = 0
    try:
        for sh in shapes:
            prog.show(f"inputs {sh.label}")
            try:
                inp = harness.make_inputs(sh, harness.n_sets_for(sh, env["device"]["l2_bytes"],
                                                                 args.cold_l2), args.seed)
            except cupy.cuda.memory.OutOfMemoryError as e:
                for r in rs:
                    doc["results"].append(dict(
                        r.describe(), shape=sh.to_json(), flops=sh.flops,
                        min_bytes=sh.min_bytes, status="skipped",
                        error=f"inputs do not fit in GPU memory ({e})"))
                    prog.step(f"{r.name} {sh.label}", "skipped (memory)")
                writer.write(doc)
                continue
            for r in rs:
                prog.show(f"{r.name} {sh.label}")
                prev = last.get(r.name)
                est = prev[0] * sh.flops / prev[1] if prev else None
                rec = measure(r, inp, stream, args, est, fast_clock)
                doc["results"].append(rec)
                writer.write(doc)
                if rec["status"] == "ok":
                    last[r.name] = (rec["median_ms"] * 1e-3, sh.flops)
                    res = f"{rec['tflops']:.2f} TFLOP/s"
                else:
                    res = rec["status"]
                    if rec["status"] == "skipped" and rec["error"].startswith("one run"):
                        last[r.name] = (1e9, 1)   # slower still at larger sizes
                prog.step(f"{r.name} {sh.label}", res)
                if rec["status"] == "failed" and r.gpu and not _context_alive():
                    raise RuntimeError(f"{r.name} at {sh.label} left the CUDA context unusable "
                                       f"({rec['error'].splitlines()[0]}); stopping")
            del inp
            cupy.get_default_memory_pool().free_all_blocks()
        doc["status"] = "complete"
    except KeyboardInterrupt:
        doc["status"] = "interrupted"
        code = 130
    except RuntimeError as e:
        doc["status"] = "aborted"
        doc["abort_reason"] = str(e)
        code = 1
    finally:
        prog.close()
        doc["env"]["clocks_after"] = info.read_clocks()
        writer.write(doc)

    return finish(doc, path, args, code)


def finish(doc, path: Path, args, code: int) -> int:
    out = sys.stderr if args.json else sys.stdout
    print(report.text_table(doc), file=out)
    print("\nTFLOP/s by size:", file=out)
    print(report.summary_table(doc), file=out)
    skipped = [r for r in doc["results"] if r["status"] == "skipped"]
    failed = [r for r in doc["results"] if r["status"] == "failed"]
    for r in skipped:
        print(f"skipped {r['runner']} at {Shape.from_json(r['shape']).label}: {r['error']}",
              file=out)
    for r in failed:
        print(f"FAILED {r['runner']} at {Shape.from_json(r['shape']).label}: "
              f"{r['error'].splitlines()[0]}", file=out)
    if doc["status"] != "complete":
        print(f"run {doc['status']}: {doc.get('abort_reason', 'partial results kept')}",
              file=sys.stderr)
    if not args.no_plots:
        try:
            from . import plots
            pngs = plots.plot_all(doc, path.parent, path.stem)
            for p in pngs:
                print(f"plot: {p}", file=sys.stderr)
        except ImportError:
            print("no plots: matplotlib is not installed (pip install 'sgemm[plot]')",
                  file=sys.stderr)
    print(f"results: {path}", file=sys.stderr)
    if args.json:
        json.dump(_clean(doc), sys.stdout, indent=1)
        print()
    if code == 0 and failed:
        code = 3   # a kernel failed its check: the run is complete but not clean
    return code


def add_arguments(p) -> None:
    p.add_argument("--kernels", metavar="LIST",
                   help="comma list of kernel names or ids, 'cublas', 'cublas-tf32', "
                        "'triton[-PREC]', 'numpy', 'ladder' (default: the whole ladder of "
                        "the precision plus cuBLAS, Triton and NumPy)")
    p.add_argument("--sizes", metavar="LIST",
                   help="square sizes: '256,512', '256:8192:x2', '1024:4096:+1024' "
                        f"(default {','.join(map(str, DEFAULT_SIZES))})")
    p.add_argument("--shapes", metavar="FILE",
                   help="file of 'M N K [transA transB] [batch]' lines (# comments)")
    p.add_argument("--precision", choices=("ieee", "tf32x3", "tf32", "all"), default="ieee",
                   help="which arithmetic to compare (default ieee: FP32 FMA)")
    p.add_argument("--cold-l2", action="store_true",
                   help="rotate input sets totalling > 2x L2 so no launch reuses cached operands")
    p.add_argument("--graphs", action="store_true",
                   help="time CUDA-graph replays of the launches (no launch overhead)")
    p.add_argument("--repeat", type=int, default=20,
                   help="timed samples per point (default 20; fewer for points over "
                        f"{harness.POINT_BUDGET_S:.0f} s, at least {harness.MIN_REPEAT})")
    p.add_argument("--out", metavar="DIR",
                   help="results directory (default ./sgemm-results)")
    p.add_argument("--json", action="store_true", help="print the results JSON on stdout")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--seed", type=int, default=None,
                   help="random seed of the inputs (default: a fresh one, recorded in the JSON)")
