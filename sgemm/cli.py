"""The ``sgemm`` command.

    sgemm bench [--kernels LIST] [--sizes LIST | --shapes FILE] [--precision P]
                [--cold-l2] [--graphs] [--repeat N] [--out DIR] [--json]
    sgemm info [--json] [--no-measure]
    sgemm profile KERNEL --size M N K [--warmup W] [--out DIR]
    sgemm plot RESULTS.json [--readme README.md] [--docs docs/kernels.md] [--out DIR]
    sgemm results [--check] [--root DIR]
    sgemm tune ...          (sgemm.tune.main)
    sgemm warmup [--arch ARCH] [--shapes FILE | --kernels LIST] [--list]   (sgemm.warmup)
    sgemm --version         (``python -m sgemm ...`` is the same command)

Errors a user can act on (no GPU, a bad size list, a missing tool) end with
one sentence on stderr and a non-zero exit code, never a traceback.
"""
from __future__ import annotations

import argparse
import os
import sys

EXIT_USAGE = 2
EXIT_NO_GPU = 1


class CliError(Exception):
    """Ends the command with its message on stderr and ``code``."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


def _need_gpu(cmd: str, cupy: bool = True) -> None:
    from .runtime.device import has_gpu
    if not has_gpu():
        raise CliError(f"sgemm {cmd}: no CUDA GPU is visible (no NVIDIA driver or no device), "
                       f"so there is nothing to {'measure' if cmd != 'profile' else 'profile'}.",
                       EXIT_NO_GPU)
    if cupy:
        try:
            import cupy  # noqa: F401
        except ImportError:
            raise CliError(f"sgemm {cmd}: CuPy is not installed; install it with "
                           "pip install 'sgemm[cu13]' (or [cu12]).") from None


# -- subcommands ------------------------------------------------------------------------------
def cmd_bench(args, argv) -> int:
    from .bench import bench
    try:
        bench.validate_args(args)         # a typo fails fast, GPU or not
        _need_gpu("bench")
        return bench.run(args, argv)
    except ValueError as e:       # sizes, shapes file, kernel names
        raise CliError(f"sgemm bench: {e}", EXIT_USAGE) from None


def cmd_info(args, argv) -> int:
    _need_gpu("info", cupy=not args.no_measure)
    from .bench import info
    return info.main(args)


def cmd_profile(args, argv) -> int:
    _need_gpu("profile")
    from .bench import profile
    try:
        return profile.main(args)
    except ValueError as e:
        raise CliError(f"sgemm profile: {e}", EXIT_USAGE) from None


def cmd_plot(args, argv) -> int:
    from pathlib import Path

    from .bench import readme, report, schema
    try:
        doc = schema.load(args.results)
    except schema.SchemaError as e:
        raise CliError(f"sgemm plot: {e}") from None
    src = Path(args.results)
    out_dir = Path(args.out) if args.out else src.parent
    try:
        from .bench import plots
        for p in plots.plot_all(doc, out_dir, src.stem):
            print(f"plot: {p}")
    except ImportError:
        print("sgemm plot: matplotlib is not installed, so no plots were drawn "
              "(pip install 'sgemm[plot]'); tables are still rewritten.", file=sys.stderr)
    targets = []
    if args.readme:
        targets.append(Path(args.readme))
    docs = Path(args.docs) if args.docs else Path("docs") / "kernels.md"
    if not args.no_docs and docs.exists():
        targets.append(docs)
    elif args.docs and not docs.exists():
        raise CliError(f"sgemm plot: {docs} does not exist")
    for t in targets:
        if not t.exists():
            raise CliError(f"sgemm plot: {t} does not exist")
        done, unknown = readme.update_file(t, doc)
        print(f"{t}: rewrote {', '.join(done) if done else 'no tables (no sgemm markers)'}"
              + (f"; unknown table names left alone: {', '.join(unknown)}" if unknown else ""))
    if not args.quiet:
        print(report.summary_table(doc))
    return 0


def cmd_results(args, argv) -> int:
    from .bench import claims
    missing = claims.missing_files(args.root)
    if missing:
        raise CliError(f"sgemm results: {len(missing)} claimed file(s) missing from "
                       f"{claims.RESULTS}: {', '.join(missing)}")
    changed = claims.update(args.root, check=args.check)
    for c in changed:
        print(f"{c}: {'out of date' if args.check else 'rewritten'}")
    if not changed:
        print("README, docs tables and bench/results/README.md are up to date")
    return 1 if args.check and changed else 0


def cmd_tune(argv) -> int:
    if "--calibrate" in argv:        # the cost model's calibration (sgemm/calibrate.py)
        from . import calibrate
        return int(calibrate.main([a for a in argv if a != "--calibrate"]) or 0)
    from . import tune
    return int(tune.main(argv) or 0)


# -- parser ------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from .bench.bench import add_arguments
    p = argparse.ArgumentParser(
        prog="sgemm", description="Hand-written FP32 GEMM kernels: benchmark, inspect, profile.")
    from . import __version__
    p.add_argument("--version", action="version", version=f"sgemm {__version__}")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")
    sub.required = True

    b = sub.add_parser("bench", help="check and time the kernel ladder against cuBLAS, Triton "
                                     "and CPU BLAS; write JSON, tables and plots",
                       description="Check every kernel against a float64 product, then time "
                                   "it with CUDA events (median and IQR).")
    add_arguments(b)
    b.set_defaults(fn=cmd_bench)

    i = sub.add_parser("info", help="GPU, clocks, FP32 peak, bandwidth, versions, cache")
    i.add_argument("--json", action="store_true", help="print JSON instead of text")
    i.add_argument("--no-measure", action="store_true",
                   help="skip the copy-bandwidth and FMA-peak measurements")
    i.set_defaults(fn=cmd_info)

    pr = sub.add_parser("profile", help="one launch of a kernel under Nsight Compute")
    pr.add_argument("kernel", help="kernel name or id (see sgemm bench --kernels)")
    pr.add_argument("--size", nargs=3, type=int, metavar=("M", "N", "K"),
                    default=(4096, 4096, 4096))
    pr.add_argument("--ta", action="store_true", help="A transposed")
    pr.add_argument("--tb", action="store_true", help="B transposed")
    pr.add_argument("--warmup", type=int, default=3, help="launches before the profiled one")
    pr.add_argument("--out", metavar="DIR", help="where the raw CSV goes (./sgemm-results)")
    pr.set_defaults(fn=cmd_profile)

    pl = sub.add_parser("plot", help="redraw plots and README/docs tables from results JSON")
    pl.add_argument("results", help="a results JSON written by sgemm bench")
    pl.add_argument("--readme", metavar="FILE", help="rewrite the tables between "
                    "<!-- sgemm:...:start/end --> markers in FILE")
    pl.add_argument("--docs", metavar="FILE", help="per-rung tables file "
                    "(default docs/kernels.md when it exists)")
    pl.add_argument("--no-docs", action="store_true", help="leave docs/kernels.md alone")
    pl.add_argument("--out", metavar="DIR", help="plot directory (default: beside the JSON)")
    pl.add_argument("--quiet", action="store_true", help="do not print the summary table")
    pl.set_defaults(fn=cmd_plot)

    rs = sub.add_parser("results", help="regenerate the README results table, the docs' "
                        "generated tables and bench/results/README.md from the committed "
                        "results (sgemm/bench/claims.py)")
    rs.add_argument("--check", action="store_true",
                    help="change nothing; exit 1 if any generated text is out of date")
    rs.add_argument("--root", default=".", help="checkout root (default: current directory)")
    rs.set_defaults(fn=cmd_results)

    from .warmup import add_arguments as warmup_arguments, run as warmup_run
    w = sub.add_parser("warmup", help="compile ahead of time, in parallel, what first calls "
                       "would (sgemm.warmup; docs/first-call.md)")
    warmup_arguments(w)
    w.set_defaults(fn=lambda args, argv: warmup_run(args))

    sub.add_parser("tune", help="autotune tile configurations (sgemm.tune)", add_help=False)
    return p


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "tune":
            return cmd_tune(argv[1:])
        args = build_parser().parse_args(argv)
        return args.fn(args, argv[1:])
    except CliError as e:
        print(str(e), file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print("sgemm: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        from .errors import SgemmError
        if os.environ.get("SGEMM_TRACEBACK") or not isinstance(e, (SgemmError, OSError)):
            raise
        print(f"sgemm: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
