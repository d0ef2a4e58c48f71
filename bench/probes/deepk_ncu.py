"""Probe: ncu on cuBLAS's kernels and sgemm's plan, side by side, on
unaligned deep-K rows where sgemm runs 0.8-0.9 of cuBLAS's speed.  Not part
of the package.

Why: rung 9 (register prefetch) and rung 10 (4-byte cp.async) both run
these rows slower than cuBLAS's align1 kernels (docs/notes/ffma-fast.md,
twentieth session), and the calibration cannot say why.  The profile says
where each kernel's cycles go: issue activity, the stall classes, the
instruction mix (instructions per FFMA), occupancy and registers.

    OUT=dir python bench/probes/deepk_ncu.py              # GPU: runs ncu on itself
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


def child():
    import cupy as cp
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import sgemm
    from cublas_kernels import operands
    for (m, n, k, ta, tb) in PROBLEMS:
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


if __name__ == "__main__":
    sys.exit(child() if sys.argv[1:] == ["child"] else main())
