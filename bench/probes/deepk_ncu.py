"""Probe: ncu on cuBLAS's kernels and sgemm's plan, side by side, on
unaligned deep-K rows where sgemm runs 0.8-0.9 of cuBLAS's speed.  Not part
of the package.

Why: rung 9 (register prefetch) and rung 10 (4-byte cp.async) both run
these rows slower than cuBLAS's align1 kernels (docs/notes/ffma-fast.md,
twentieth session), and the calibration cannot say why.  The profile says
where each kernel's cycles go: issue activity, the stall classes, the
instruction mix (instructions per FFMA), occupancy and registers.

    OUT=dir python bench/probes/deepk_ncu.py              # GPU: runs ncu on itself
    OUT=dir python bench/probes/deepk_ncu.py source       # --set full, sgemm's kernel of the
                                                          # second problem: SASS source page
    python bench/probes/deepk_ncu.py summary SOURCE.csv[.gz]  # (CPU) that page, summed
    python bench/probes/deepk_ncu.py child                # (what ncu runs)

Each product runs three times unprofiled (compiles, sgemm's measured
choice, caches), then once between the profiler's start and stop.  Writes
$OUT/deepk-ncu.csv (ncu's raw page: sgemm.bench.profile's metrics, the
stall classes among them, and a few of the scheduler's) and prints a line
per kernel.
"""
import os
import subprocess
import sys

PROBLEMS = [(502, 614, 32427, True, False), (904, 379, 24713, False, False),
            (616, 905, 123705, False, False)]       # (m, n, k, ta, tb) as the judge calls them
EXTRA = ("smsp__inst_executed.sum", "smsp__issue_active.avg.pct_of_peak_sustained_active",
         "smsp__warps_active.avg.per_cycle_active", "smsp__warps_eligible.avg.per_cycle_active")


def child(problems=PROBLEMS):
    import cupy as cp
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import sgemm
    from cublas_kernels import operands
    for (m, n, k, ta, tb) in problems:
        a, b, A, B = operands(cp, 1, m, n, k, ta, tb)
        c = cp.empty((m, n), cp.float32)
        for _ in range(3):            # compiles, the measured choice, caches: not profiled
            cp.matmul(A, B, out=c)
            sgemm.gemm(a, b, c, trans_a=ta, trans_b=tb)
        cp.cuda.Device().synchronize()
        cp.cuda.profiler.start()
        cp.matmul(A, B, out=c)
        sgemm.gemm(a, b, c, trans_a=ta, trans_b=tb)
        cp.cuda.Device().synchronize()
        cp.cuda.profiler.stop()


def main():
    from sgemm.bench.profile import STALL_METRIC, STALL_REASONS, metric_names, parse_csv
    out = os.environ.get("OUT", ".")
    cmd = ["ncu", "--clock-control", "none", "--profile-from-start", "off", "--csv", "--page",
           "raw", "--metrics",
           ",".join(metric_names() + list(EXTRA)),
           sys.executable, os.path.abspath(__file__), "child"]
    got = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, CUPY_TF32="0"))
    with open(os.path.join(out, "deepk-ncu.csv"), "w") as f:
        f.write(got.stdout)
    rows = parse_csv(got.stdout)
    if not rows:
        print(got.stdout[-3000:], got.stderr[-3000:])
        return 1
    v = lambda r, m: r.get(m, (None, "-"))[1]          # noqa: E731 -- ncu's own text
    for r in rows:
        stalls = sorted(((r.get(STALL_METRIC.format(s), (0,))[0] or 0, s) for s in STALL_REASONS),
                        reverse=True)[:5]
        print(f"{v(r, 'ID')} {v(r, 'Kernel Name')[:60]} grid {v(r, 'launch__grid_size')} "
              f"block {v(r, 'launch__block_size')} regs {v(r, 'launch__registers_per_thread')} "
              f"us {v(r, 'gpu__time_duration.sum')} issue% "
              f"{v(r, 'smsp__issue_active.avg.pct_of_peak_sustained_active')} fma% "
              f"{v(r, 'sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active')} warps "
              f"{v(r, 'smsp__warps_active.avg.per_cycle_active')} elig "
              f"{v(r, 'smsp__warps_eligible.avg.per_cycle_active')} inst "
              f"{v(r, 'smsp__inst_executed.sum')} ffma "
              f"{v(r, 'smsp__sass_thread_inst_executed_op_ffma_pred_on.sum')} stalls "
              + " ".join(f"{s} {x:.2f}" for x, s in stalls))
    return 0


def source() -> int:
    """ncu --set full on sgemm's kernel of the second problem alone, its
    SASS-level source page (stall samples per instruction) to $OUT."""
    out = os.environ.get("OUT", ".")
    rep = "/tmp/deepk-source"
    env = dict(os.environ, CUPY_TF32="0")
    subprocess.run(["ncu", "--clock-control", "none", "--profile-from-start", "off", "--set",
                    "full", "--import-source", "no", "-k", "regex:sgemm_double_buffer", "-f",
                    "-o", rep, sys.executable, os.path.abspath(__file__), "child1"], env=env,
                   check=True)
    with open(os.path.join(out, "deepk-ncu-source.csv"), "w") as f:
        subprocess.run(["ncu", "-i", rep + ".ncu-rep", "--page", "source", "--csv",
                        "--print-source", "sass"], stdout=f, check=True)
    with open(os.path.join(out, "deepk-ncu-source-details.csv"), "w") as f:
        subprocess.run(["ncu", "-i", rep + ".ncu-rep", "--page", "details", "--csv"], stdout=f,
                       check=True)
    return 0


def summarize(path: str) -> int:
    """(CPU) The source page's stall samples: by reason, the dispatch stalls
    by opcode, each opcode's own mix, and the FFMAs whose uncached register
    reads share one bank (rung9_sass.one_bank's test) against the rest."""
    import collections
    import csv
    import gzip
    import io
    import re
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from rung9_sass import one_bank_flags
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        lines = f.read().splitlines()
    rows = list(csv.reader(io.StringIO("\n".join(lines[1:]))))
    head, data = rows[0], rows[1:]
    ix = {h: i for i, h in enumerate(head)}

    def num(x: str) -> float:                      # "1,234" -> 1234.0; "-" or "" -> 0
        try:
            return float(x.replace(",", ""))
        except ValueError:
            return 0.0
    reasons = [h for h in head if h.startswith("stall_") and "(Not Issued)" not in h]
    total, by_op, ffma = collections.Counter(), collections.defaultdict(collections.Counter), []
    for r in data:
        src = r[ix["Source"]].strip()
        op = re.sub(r"^@!?U?P\w+\s+", "", src).split()[0].split(".")[0] if src else "?"
        for c in reasons:
            total[c] += num(r[ix[c]])
            by_op[op][c] += num(r[ix[c]])
        if op == "FFMA" and num(r[ix["Instructions Executed"]]) > 0:
            ffma.append((src, num(r[ix["stall_dispatch"]])))
    n = sum(total.values())
    print(lines[0][:160])
    print(f"{n:.0f} stall samples: " + ", ".join(f"{c[6:]} {v / n:.3f}"
                                                   for c, v in total.most_common(8)))
    print("dispatch stalls by opcode: " + ", ".join(
        f"{o} {c['stall_dispatch']:.0f}" for o, c in sorted(
            by_op.items(), key=lambda t: -t[1]["stall_dispatch"])[:6]))
    for o in ("FFMA", "IADD3", "LDS", "STS", "LDG"):
        c, t = by_op[o], sum(by_op[o].values()) or 1
        print(f"  {o}: {t:.0f} samples, " + " ".join(f"{k[6:]} {v / t:.2f}"
                                                    for k, v in c.most_common(5)))
    flags = one_bank_flags([src for src, _ in ffma])   # in program order, .reuse included
    one = [d for (_, d), f in zip(ffma, flags) if f]
    rest = [d for (_, d), f in zip(ffma, flags) if not f]
    print(f"executed FFMAs: {len(one)} one-bank, {sum(one) / max(1, len(one)):.2f} dispatch "
          f"samples each; {len(rest)} others, {sum(rest) / max(1, len(rest)):.2f}")
    return 0


if __name__ == "__main__":
    what = sys.argv[1:]
    if what[:1] == ["summary"]:
        sys.exit(summarize(what[1]))
    sys.exit(child() if what == ["child"] else child(PROBLEMS[1:2]) if what == ["child1"]
             else source() if what == ["source"] else main())
