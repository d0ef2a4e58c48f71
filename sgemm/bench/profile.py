"""``sgemm profile KERNEL --size M N K``: one launch under Nsight Compute.

Runs ``ncu --clock-control none`` (the card's clocks as found: never locked
or changed) on ``python -m sgemm.bench.profile_target``, filtered to the
kernel's function name, skipping the warm-up launches and measuring one.
Prints a compact table and saves ncu's raw CSV beside it.

Every metric name lives in METRICS / STALL_REASONS below and nowhere else.
"""
from __future__ import annotations

import csv
import datetime
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

# (key, label, ncu metric).  Units come from ncu's CSV unit row.
METRICS = [
    ("duration", "duration", "gpu__time_duration.sum"),
    ("sm_hz", "SM clock during the launch", "sm__cycles_elapsed.avg.per_second"),
    ("ffma", "FFMA thread instructions", "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"),
    ("fadd", "FADD thread instructions", "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"),
    ("fmul", "FMUL thread instructions", "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"),
    ("fma_pipe", "FMA pipe utilization",
     "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"),
    ("dram_pct", "DRAM throughput", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("dram_bytes", "DRAM bytes", "dram__bytes.sum"),
    ("l2_pct", "L2 throughput", "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("l1_pct", "L1/shared throughput", "l1tex__throughput.avg.pct_of_peak_sustained_active"),
    ("bank_ld", "shared-load bank conflicts",
     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
    ("bank_st", "shared-store bank conflicts",
     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
    ("regs", "registers per thread", "launch__registers_per_thread"),
    ("occ", "achieved occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active"),
    ("occ_max", "theoretical occupancy", "sm__maximum_warps_per_active_cycle_pct"),
    ("grid", "grid size", "launch__grid_size"),
    ("block", "block size", "launch__block_size"),
    ("smem_static", "static shared memory per block", "launch__shared_mem_per_block_static"),
    ("smem_dynamic", "dynamic shared memory per block", "launch__shared_mem_per_block_dynamic"),
]
# Warp-state statistics: average cycles a warp spends stalled for each reason
# per issued instruction (the WarpStateStats section's source metrics).
STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
STALL_REASONS = ("barrier", "long_scoreboard", "short_scoreboard", "mio_throttle",
                 "math_pipe_throttle", "wait", "not_selected", "dispatch_stall",
                 "lg_throttle", "no_instruction", "branch_resolving", "membar", "drain",
                 "imc_miss", "tex_throttle", "sleeping", "misc")
TOP_STALLS = 4

_SCALE = {"": 1, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9,
          "T": 1e12}


def metric_names() -> list[str]:
    return [m for _, _, m in METRICS] + [STALL_METRIC.format(r) for r in STALL_REASONS]


_BASES = ("second", "byte", "hz", "Hz", "cycle", "inst", "warp", "thread", "sector",
          "request", "block", "register")
_SHORT = {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}   # ncu 2025+ prints "ns" for durations


def _unit_scale(u: str) -> float:
    """Scale of one unit word to its base: 'usecond'/'us' -> 1e-6, 'Mbyte' -> 1e6,
    'Ghz' -> 1e9; unknown words ('%', 'inst' ratios) -> 1."""
    if u in _SHORT:
        return _SHORT[u]
    for base in _BASES:
        if u.endswith(base):
            return _SCALE.get(u[: -len(base)], 1)
    return 1


def to_base(value: str, unit: str) -> float | None:
    """ncu value in base units: ('1,234.5', 'usecond') -> 1.2345e-3 s;
    ('1.6', 'cycle/nsecond') -> 1.6e9 Hz; '%' and counts unchanged."""
    v = value.replace(",", "").strip()
    try:
        x = float(v)
    except ValueError:
        return None
    u = unit.strip()
    if "/" in u:
        num, den = u.split("/", 1)
        return x * _unit_scale(num) / _unit_scale(den)
    return x * _unit_scale(u)


def parse_csv(text: str) -> list[dict]:
    """Rows of ncu --csv --page raw: {metric: (value in base units, raw, unit)}.
    ncu's own '==PROF==' lines and the program's output are skipped."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if len(lines) < 2:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    head, units, data = rows[0], rows[1], rows[2:]
    if units and units[0] not in ("", "ID"):   # no unit row in this ncu version
        data, units = rows[1:], [""] * len(head)
    out = []
    for row in data:
        rec = {}
        for h, u, v in zip(head, units, row):
            rec[h] = (to_base(v, u), v, u)
        out.append(rec)
    return out


def summarize(row: dict, m: int, n: int, k: int, peak_tflops: float,
              lanes_x_sms: int | None) -> dict:
    """The compact table's numbers from one parsed row."""
    g = lambda key: row.get(dict((a, c) for a, _, c in METRICS)[key], (None,))[0]  # noqa: E731
    dur = g("duration")
    out = {"kernel_name": row.get("Kernel Name", (None, "?"))[1], "duration_s": dur}
    if dur:
        out["tflops"] = 2.0 * m * n * k / dur / 1e12
        out["pct_peak"] = 100 * out["tflops"] / peak_tflops if peak_tflops else None
        ffma, fadd, fmul = g("ffma"), g("fadd"), g("fmul")
        if ffma is not None:
            out["counted_tflops"] = (2 * ffma + (fadd or 0) + (fmul or 0)) / dur / 1e12
    hz = g("sm_hz")
    if hz:
        out["sm_mhz"] = hz / 1e6
        if lanes_x_sms:
            out["peak_at_clock_tflops"] = lanes_x_sms * 2 * hz / 1e12
    for key in ("fma_pipe", "dram_pct", "dram_bytes", "l2_pct", "l1_pct", "bank_ld", "bank_st",
                "regs", "occ", "occ_max", "grid", "block", "smem_static", "smem_dynamic"):
        out[key] = g(key)
    stalls = []
    for r in STALL_REASONS:
        v = row.get(STALL_METRIC.format(r), (None,))[0]
        if v is not None:
            stalls.append((r, v))
    stalls.sort(key=lambda t: -t[1])
    out["stalls"] = stalls
    return out


def format_summary(s: dict, title: str) -> str:
    f = lambda v, fmt="{:.1f}", unit="": "n/a" if v is None else fmt.format(v) + unit  # noqa
    rows = [("kernel", s.get("kernel_name", "?")),
            ("duration", f(s["duration_s"] * 1e3 if s.get("duration_s") else None, "{:.4g}",
                           " ms"))]
    if "tflops" in s:
        pk = f" = {s['pct_peak']:.0f}% of FP32 peak" if s.get("pct_peak") else ""
        rows.append(("achieved FP32", f"{s['tflops']:.2f} TFLOP/s (2MNK/duration){pk}"))
    if "counted_tflops" in s:
        rows.append(("  counted", f"{s['counted_tflops']:.2f} TFLOP/s (2 FFMA + FADD + FMUL "
                                  "thread instructions / duration)"))
    if "sm_mhz" in s:
        extra = (f"; peak at this clock {s['peak_at_clock_tflops']:.1f} TFLOP/s"
                 if "peak_at_clock_tflops" in s else "")
        rows.append(("SM clock", f"{s['sm_mhz']:.0f} MHz during the launch{extra}"))
    rows += [
        ("FMA pipe", f(s.get("fma_pipe"), unit=" % of peak (active cycles)")),
        ("DRAM", f(s.get("dram_pct"), unit=" % of peak")
         + (f", {s['dram_bytes'] / 1e6:.1f} MB moved" if s.get("dram_bytes") else "")),
        ("L2", f(s.get("l2_pct"), unit=" % of peak")),
        ("L1/shared", f(s.get("l1_pct"), unit=" % of peak")),
        ("bank conflicts", f"{f(s.get('bank_ld'), '{:.0f}')} load, "
                           f"{f(s.get('bank_st'), '{:.0f}')} store (shared memory)"),
        ("registers", f(s.get("regs"), "{:.0f}", " per thread")),
        ("occupancy", f"{f(s.get('occ'), unit=' %')} achieved, "
                      f"{f(s.get('occ_max'), unit=' %')} theoretical"),
        ("launch", f"grid {f(s.get('grid'), '{:.0f}')}, block {f(s.get('block'), '{:.0f}')}, "
                   f"shared {f((s.get('smem_static') or 0) + (s.get('smem_dynamic') or 0), '{:.0f}')} B"),
    ]
    st = s.get("stalls") or []
    rows.append(("top warp stalls", ", ".join(f"{r} {v:.2f}" for r, v in st[:TOP_STALLS])
                 + " (cycles per issued instruction)" if st else "n/a"))
    w = max(len(a) for a, _ in rows)
    return title + "\n" + "\n".join(f"  {a:<{w}}  {b}" for a, b in rows)


def find_ncu() -> str | None:
    exe = shutil.which("ncu")
    if exe:
        return exe
    for p in ("/usr/local/cuda/bin/ncu",):
        if Path(p).exists():
            return p
    return None


_BAD_METRIC = re.compile(r"(?:metric|Metric)[^\n]*?([a-z0-9_]+__[A-Za-z0-9_.]+)")


def run_ncu(ncu: str, spec, m: int, n: int, k: int, warmup: int, metrics: list[str],
            ta=False, tb=False) -> subprocess.CompletedProcess:
    cmd = [ncu, "--clock-control", "none", "--target-processes", "all",
           # the demangled name ("void sgemm_smem<32, false, false>(...)") holds the
           # function name between non-identifier characters
           "-k", f"regex:(^|[^A-Za-z0-9_]){spec.function}([^A-Za-z0-9_]|$)", "--launch-skip", str(warmup),
           "--launch-count", "1", "--metrics", ",".join(metrics), "--csv", "--page", "raw",
           sys.executable, "-m", "sgemm.bench.profile_target", spec.name, str(m), str(n),
           str(k), "--warmup", str(warmup)] + (["--ta"] if ta else []) + (["--tb"] if tb else [])
    return subprocess.run(cmd, capture_output=True, text=True)


def main(args) -> int:
    from ..kernels import registry
    from . import info
    ncu = find_ncu()
    if ncu is None:
        print("sgemm profile: Nsight Compute (ncu) is not on PATH, so there is nothing to "
              "profile with; install the CUDA toolkit's Nsight Compute and retry.",
              file=sys.stderr)
        return 2
    spec = registry.get(args.kernel)
    m, n, k = args.size
    from ..runtime import device
    d = device.info(0)
    clocks = info.read_clocks()
    lanes = info.lanes_per_sm(d.cc)
    peak = info.fp32_peak_tflops(d.sm_count, clocks.get("max_sm_mhz") or d.clock_khz / 1e3,
                                 lanes)
    metrics = metric_names()
    r = run_ncu(ncu, spec, m, n, k, args.warmup, metrics, args.ta, args.tb)
    rows = parse_csv(r.stdout)
    if not rows:
        # An ncu that lacks some metric refuses the whole list: drop the ones it
        # names (or fall back to the stall-free list) and try once more.
        bad = set(_BAD_METRIC.findall(r.stdout + r.stderr)) & set(metrics)
        metrics = [x for x in metrics if x not in bad] if bad else [x for _, _, x in METRICS]
        r = run_ncu(ncu, spec, m, n, k, args.warmup, metrics, args.ta, args.tb)
        rows = parse_csv(r.stdout)
    out_dir = Path(args.out) if args.out else Path("sgemm-results")
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    stem = out_dir / f"profile-{spec.name}-{m}x{n}x{k}-{stamp}"
    csv_path = stem.with_suffix(".csv")
    csv_path.write_text("\n".join(ln for ln in r.stdout.splitlines() if ln.startswith('"'))
                        + "\n")
    stem.with_suffix(".log").write_text(" ".join(r.args) + "\n\n--- stdout ---\n" + r.stdout
                                        + "\n--- stderr ---\n" + r.stderr)
    if not rows:
        tail = (r.stderr.strip() or r.stdout.strip()).splitlines()[-5:]
        print(f"sgemm profile: ncu returned no measurement of {spec.function} "
              f"(exit {r.returncode}); log: {stem.with_suffix('.log')}\n  " + "\n  ".join(tail),
              file=sys.stderr)
        return 1
    s = summarize(rows[-1], m, n, k, peak, d.sm_count * lanes)
    title = (f"sgemm profile: {spec.id}:{spec.name} at {m}x{n}x{k} on {d.name} "
             f"(FP32 peak {peak:.1f} TFLOP/s at {clocks.get('max_sm_mhz') or d.clock_khz / 1e3:.0f}"
             f" MHz; ncu --clock-control none, 1 launch after {args.warmup} warm-up)")
    print(format_summary(s, title))
    print(f"raw CSV: {csv_path}", file=sys.stderr)
    return 0
