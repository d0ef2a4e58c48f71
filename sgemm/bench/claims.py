"""Every claim the README and the reference docs make, the committed file(s)
in ``bench/results/`` behind it, and the command that made them.

One list (``CLAIMS``) feeds three generated outputs, so no number is typed by
hand and nothing is listed twice:

* the README's results table (``<!-- sgemm:table:claims:start/end -->``),
  one row per claim that has a README value, one number per cell;
* tables in the docs (``accuracy-tf32x3`` in docs/accuracy.md,
  ``sanitizers`` in docs/reliability.md);
* ``bench/results/README.md``, the index: each claim, its files, its command,
  and every file of the directory under the claim that keeps it.

    sgemm results              # rewrite all three from the committed files
    sgemm results --check      # exit 1 if any of them is out of date (CI)

Judge rows report the median of the seeds' values (three fresh seeds of 120
random problems each); ratios are cuBLAS time / sgemm time, so above 1 means
sgemm is faster.
"""
from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

RESULTS = Path("bench") / "results"
INDEX = RESULTS / "README.md"


class Evidence:
    """The files of one results directory, read once each."""

    def __init__(self, root: str | Path = "."):
        self.dir = Path(root) / RESULTS
        self._cache: dict[str, object] = {}

    def text(self, name: str) -> str:
        if name not in self._cache:
            self._cache[name] = (self.dir / name).read_text()
        return self._cache[name]

    def json(self, name: str):
        key = "json:" + name
        if key not in self._cache:
            self._cache[key] = json.loads(self.text(name))
        return self._cache[key]


@dataclass(frozen=True)
class Claim:
    key: str                          # stable id (index anchor, tests)
    text: str                         # the claim, without its number
    files: tuple[str, ...]            # names in bench/results/, the evidence
    command: str                      # what wrote the files (on a GPU machine)
    cited_in: tuple[str, ...]         # where the claim is made
    value: Callable[[Evidence], str] | None = None   # README cell: one number
    note: str = ""                    # how the command was narrowed, if it was

    @property
    def in_readme(self) -> bool:
        return self.value is not None


# -- value helpers ---------------------------------------------------------------------------
def _x(v: float) -> str:
    return f"{v:.2f}×"


def _judge(files, prec: str, stat: str):
    def value(ev: Evidence) -> str:
        return _x(statistics.median(ev.json(f)["summary"][prec]["all"][stat] for f in files))
    return value


def _judge_first(files, prec: str):
    def value(ev: Evidence) -> str:
        return f"{statistics.median(ev.json(f)['summary'][prec]['cold_first_call_s_total'] for f in files):.1f} s"
    return value


def _judge_eager(files, call: str):
    def value(ev: Evidence) -> str:
        e = [ev.json(f)["eager_us_per_call_64cubed"][call] for f in files]
        return f"{statistics.median(e):.1f} µs"
    return value


def _torch_step(files):
    def value(ev: Evidence) -> str:
        return _x(statistics.median(ev.json(f)["mlp"]["speedup"] for f in files))
    return value


def _first_call(name: str, row: str):
    """Median over the probe's fresh processes, sgemm's bytecode present (as
    an installed wheel has it)."""
    def value(ev: Evidence) -> str:
        return f"{ev.json(name)['modes']['present']['summary'][row]['median']:.0f} ms"
    return value


def _eager(call: str, base: str):
    """Host cost of a call over its torch counterpart's, 64³ FP32, in the
    eager probe: timed on an idle GPU where the file has it (idle_us), so
    no launch waits for room in the queue."""
    def value(ev: Evidence) -> str:
        data = ev.json(EAGER)
        data = data.get("new", data)    # a before/after file: the tree it was made for
        run = next(r for r in data["runs"]
                   if r["precision"] == "ieee" and (r["m"], r["k"], r["n"]) == (64, 64, 64))
        us = run.get("idle_us", run["host_us"])
        return _x(us[call] / us[base])
    return value


def _import_time():
    def value(ev: Evidence) -> str:
        t = [float(x.split()[0]) for x in ev.text("import-h100-2026-11-26.log").splitlines()
             if x.endswith(" s import sgemm")]
        return f"{max(t):.2f} s"
    return value


def _judge_errors(files):
    def value(ev: Evidence) -> str:
        bad = n = 0
        for f in files:
            for s in ev.json(f)["summary"].values():
                bad += s["err_over_2x_cublas"]
                n += s["all"]["n"]
        return f"{bad} of {n}"
    return value


def _suite(path: tuple[str, ...], fmt: str):
    def value(ev: Evidence) -> str:
        v = ev.json(SUITE)["summary"]
        for p in path:
            v = v[p]
        return fmt.format(v)
    return value


def _ladder_pct(rung: int, size: int):
    def value(ev: Evidence) -> str:
        doc = ev.json(LADDER)

        def tflops(pred):
            r = next(r for r in doc["results"] if pred(r) and r["shape"]["m"] == size
                     and r["shape"]["n"] == size and r["shape"]["k"] == size)
            return r["tflops"]
        ours = tflops(lambda r: r.get("kind") == "sgemm" and r.get("id") == rung)
        ref = tflops(lambda r: r["runner"] == "cublas")
        return f"{100 * ours / ref:.0f} %"
    return value


def _tf32x3_sustained(n: int):
    def value(ev: Evidence) -> str:
        row = next(r for r in ev.json(TF32X3)["sustain"]["rows"] if r["n"] == n)
        ours = max(v["tflops"] for k, v in row.items() if k.startswith("tf32x3_wgmma_rs/large"))
        return _x(ours / row["cublas_fp32"]["tflops"])
    return value


INT8X_API_H100 = "int8-api-cost-h100-2026-11-26.json"
INT8X_API = tuple(f"int8-api-cost-h200-2026-11-29-{i}.json" for i in (3, 4))
INT8X_MODULI = "int8-fp32-moduli-h200-2026-11-29.json"


def _int8x_api(n: int, what: str, precision: str = "fp32"):
    """sgemm.gemm(precision=...) at n^3 on the integer engine, calls back to
    back (bench/probes/int8_fp32_moduli.py: the median of three rounds):
    TFLOPS, or the ratio to cuBLAS FP32 in the same process."""
    def value(ev: Evidence) -> str:
        r = next(r for r in ev.json(INT8X_MODULI)["records"] if r["m"] == r["k"] == n)
        if what == "tflops":
            return f"{r[precision]['tflops']:.1f}"
        return _x(r[precision]["tflops"] / r["cublas"]["tflops"])
    return value


def _tf32x3_error(k: int):
    def value(ev: Evidence) -> str:
        row = next(r for r in ev.json(TF32X3)["accuracy"]["table"]
                   if r["dist"] == "normal" and r["K"] == k)
        return _x(row["tf32x3_wgmma_rs"]["fro"] / row["cublas_fp32"]["fro"])
    return value


def _summa(gpus: int, n: int, field: str, fmt: str, scale: float = 1.0):
    def value(ev: Evidence) -> str:
        r = next(r for r in ev.json(DIST)["runs"]
                 if r["scheme"] == "summa" and r.get("launcher") == "threads"
                 and r.get("local_gemm") == "sgemm" and r.get("precision") is None
                 and r["gpus"] == gpus and r["n"] == n)
        return fmt.format(r[field] * scale)
    return value


def pytest_counts(text: str) -> dict[str, int]:
    """Counts from pytest's last summary line ('3 failed, 20 passed in 5s')."""
    line = [ln for ln in text.strip().splitlines() if re.search(r"\d+ (passed|failed)", ln)][-1]
    return {w: int(n) for n, w in re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|"
                                             r"xpassed|deselected)", line)}


def _tests(name: str):
    def value(ev: Evidence) -> str:
        c = pytest_counts(ev.text(name))
        run = c.get("passed", 0) + c.get("failed", 0) + c.get("error", 0) + c.get("errors", 0)
        return f"{c.get('passed', 0)} of {run}"
    return value


def _suites(names):
    """Passed of run, summed over pytest runs that split one suite by file."""
    def value(ev: Evidence) -> str:
        passed = run = 0
        for name in names:
            c = pytest_counts(ev.text(name))
            passed += c.get("passed", 0)
            run += (c.get("passed", 0) + c.get("failed", 0) + c.get("error", 0)
                    + c.get("errors", 0))
        return f"{passed} of {run}"
    return value


def sanitizer_errors(doc) -> int:
    return sum(t["errors"] or 0 for t in doc["tools"].values())


def _sanitizer(name: str):
    def value(ev: Evidence) -> str:
        return str(sanitizer_errors(ev.json(name)))
    return value


# -- the claims ------------------------------------------------------------------------------
JUDGE = tuple(f"judge-h200-2026-11-29-{s}.json" for s in "vwx")
TORCH_BENCH = ("torch-bench-h100-2026-11-26.json",)
SUITE = "suite-h200-2026-11-29.json"
UNTUNED = "judge-untuned-final-h200-2026-11-29.json"
LADDER = "ladder-h200-2026-11-22.json"
TF32X3 = "tf32x3-rs-final-h200-2026-11-22.json"
ACCURACY = "accuracy-table-h200-2026-11-29.json"
_ACC_CMD = "OUT=dir python bench/probes/accuracy_table.py"
_MODULI_CMD = "OUT=dir python bench/probes/int8_fp32_moduli.py 4096 8192 16384 4096x4096x32768"
DIST = "distributed-h200x4-2026-11-22.json"
SANITIZER_LATEST = "sanitizer-rung9-pipe-h100-2026-11-27.json"
FIRST_CALL = tuple(f"first-call-h100-2026-11-26-{a}.json" for a in ("cupy", "torch"))
EAGER = "eager-costs-h200-2026-11-29.json"
EAGER_H100 = "eager-costs-h100-2026-11-27.json"
GPU_TESTS_FULL = ("gpu-tests-h100-2026-11-27-shortlist-1.log",
                  "gpu-tests-h100-2026-11-27-shortlist-2.log")
GPU_TESTS_UNALIGNED = ("gpu-tests-h100-2026-11-27-unaligned-1.log",
                       "gpu-tests-h100-2026-11-27-unaligned-2.log")
GPU_TESTS_H200 = ("gpu-tests-h200-2026-11-27-parked.log", "gpu-tests-h200-2026-11-27-rest.log")

_JUDGE_CMD = "bash scripts/gpu_session.sh judge judge judge"
_SUITE_CMD = "bash scripts/gpu_session.sh suite"
_TC_CMD = "python scripts/tc_check.py"
_DIST_CMD = "EXTRA_PRECISION=tf32x3 bash scripts/gpu_distributed.sh"
_SAN_CMD = "bash scripts/gpu_session.sh sanitize"
_SAN_ONLY = "SANITIZE_ARGS=\"--only KERNEL,...\" narrowed it to the kernels listed"


def _judge_set(key: str, text: str, stem: str, seeds, cited: tuple) -> "Claim":
    """Fresh judges run back to back on one tree (files STEM-<seed letter>.json),
    cited in the worklogs."""
    return Claim(key, text, tuple(f"{stem}-{s}.json" for s in seeds),
                 "bash scripts/gpu_session.sh prebuild judge judge judge", cited)


def _san_claim(key: str, text: str, name: str, notes: str) -> "Claim":
    """A compute-sanitizer run narrowed to the kernels it checks, cited in
    docs/reliability.md and the worklog that changed them."""
    return Claim(key, text, (name,), _SAN_CMD, ("docs/reliability.md", notes), note=_SAN_ONLY)


_FFMA = "`precision=\"ieee\"` (FP32 FFMA)"
_TC = "`precision=\"tf32x3\"` (3xTF32 on tensor cores)"

CLAIMS: tuple[Claim, ...] = (
    # Headline: random problems nobody tuned for, and the public suite.
    Claim("judge-ieee-geomean", f"Random problems, {_FFMA}: cuBLAS time ÷ sgemm time, "
          "geometric mean", JUDGE, _JUDGE_CMD, ("README.md",), _judge(JUDGE, "ieee", "geomean")),
    Claim("judge-ieee-p10", f"Random problems, {_FFMA}: 10th percentile of that ratio",
          JUDGE, _JUDGE_CMD, ("README.md",), _judge(JUDGE, "ieee", "p10")),
    Claim("judge-ieee-min", f"Random problems, {_FFMA}: worst problem", JUDGE, _JUDGE_CMD,
          ("README.md",), _judge(JUDGE, "ieee", "min")),
    Claim("judge-tf32x3-geomean", f"Random problems, {_TC} against cuBLAS FP32: "
          "geometric mean", JUDGE, _JUDGE_CMD, ("README.md",),
          _judge(JUDGE, "tf32x3", "geomean")),
    Claim("judge-tf32x3-p10", f"Random problems, {_TC}: 10th percentile", JUDGE, _JUDGE_CMD,
          ("README.md",), _judge(JUDGE, "tf32x3", "p10")),
    Claim("judge-errors", "Random problems whose error exceeds twice cuBLAS FP32's "
          "(both precisions, every seed)", JUDGE, _JUDGE_CMD, ("README.md",),
          _judge_errors(JUDGE)),
    Claim("judge-first-calls", "Random problems, first calls with the kernel bundle built "
          "(`python -m sgemm.build`): seconds for all 120 first calls, FP32",
          JUDGE, "bash scripts/gpu_session.sh prebuild judge judge judge", ("README.md",
                                                                           "docs/first-call.md"),
          _judge_first(JUDGE, "ieee")),
    Claim("first-call-4096", "First call in a fresh process with the bundle and sgemm's "
          "bytecode present, CUDA context already created: `sgemm.gemm` at 4096³ on CuPy "
          "arrays, median of 5 processes (most of it imports; later first calls of new "
          "shapes and bytecode absent in the same file)", FIRST_CALL[:1],
          "bash scripts/host_overhead_probe.sh", ("README.md", "docs/first-call.md"),
          _first_call(FIRST_CALL[0], "gemm 4096^3 first"),
          note="after python -m sgemm.build --arch sm_90a; the CuPy file is the second round "
          "of the A/B run (first-call-ab: first_call.py --array cupy --runs 5, commit 5628b22), "
          "the torch file an earlier tree's (host_overhead_probe.sh)"),
    Claim("first-call-4096-torch", "… the same on torch tensors", FIRST_CALL[1:],
          "bash scripts/host_overhead_probe.sh", ("README.md", "docs/first-call.md"),
          _first_call(FIRST_CALL[1], "gemm 4096^3 first"),
          note="after python -m sgemm.build --arch sm_90a"),
    Claim("import-time", "`python -c \"import sgemm\"` on the GPU machine, slowest of three",
          ("import-h100-2026-11-26.log",), "/usr/bin/time python -c \"import sgemm\"",
          ("README.md", "docs/first-call.md"), _import_time()),
    Claim("judge-eager-sgemm", "Host cost per call at 64³ in the judge's runs, "
          "`sgemm.gemm(a, b, c)` (median of the runs)", JUDGE, _JUDGE_CMD, ("README.md",),
          _judge_eager(JUDGE, "sgemm.gemm(a, b, c)")),
    Claim("judge-eager-torch", "… `torch.matmul(a, b)`, the same runs", JUDGE, _JUDGE_CMD,
          ("README.md",), _judge_eager(JUDGE, "torch.matmul(a, b)")),
    Claim("judge-eager-cupy", "… `cupy.matmul(a, b, out=c)`, the same runs", JUDGE, _JUDGE_CMD,
          ("README.md",), _judge_eager(JUDGE, "cupy.matmul(a, b, out=c)")),
    Claim("judge-model-ab", "The cost-model refit (fractional q_sat, layout factors, absolute "
          "error) against the calibration before it, on one judge seed (91733) in one "
          "process: the evidence for the change, not a scorecard",
          ("judge-model-ab-h100-2026-11-25-new.json", "judge-model-ab-h100-2026-11-25-old.json"),
          "python judge.py --seed 91733 --no-eager, once with each calibration "
          "(the old one as the user's cost-*.json)", ("docs/notes/dispatch.md",)),
    Claim("measured-choice", "The measured choice (a shape's close candidates timed on its "
          "first call): every shape a judge run measured, with the kept plan's time and the "
          "model's pick's, both timed in one process; and that judge's seed run again with "
          "`SGEMM_AUTOTUNE=0` (first-call cost, paired ratios)",
          ("measured-choices-h100-2026-11-26.json", "judge-measured-ab-h100-2026-11-26-on.json",
           "judge-measured-ab-h100-2026-11-26-off.json"),
          "python judge.py; SGEMM_AUTOTUNE=0 python judge.py --seed SEED --no-eager; the choices "
          "are the cache directory's measured/<gpu-key>.jsonl", ("docs/dispatch.md",)),
    Claim("deepk-tiles", "Rung 9's 8x8 rectangles (128x64, 64x128) and 8x8 64x64 tiles forced at "
          "every K split on deep-K problems and a few ML layers, beside the planner's best "
          "candidates and cuBLAS: the data behind the `rect` configs",
          ("deepk-tiles-h100-2026-11-26.json",), "OUT=dir PROBE_S=150 python "
          "bench/probes/deepk_tiles.py 4242", ("sgemm/kernels/ladder.py", "docs/notes/dispatch.md")),
    Claim("accuracy-engines", "Every precision's error against fp64 beside cuBLAS FP32 and "
          "TF32: N(0,1), U(0,1) and wide-range inputs (2^U(-s, s), s = 10, 20, 30), K from 64 "
          "to 65536 (the table in docs/accuracy.md)", (ACCURACY,), _ACC_CMD,
          ("docs/accuracy.md",)),
    Claim("judge-before-skinny-limit", "Three fresh judges on the code before outputs with 64 "
          "or fewer rows or columns kept their FP32 chains short: one tf32x3 problem "
          "(8x32000x8192 NT, 4096-deep slices) at 2.12x cuBLAS's error, the evidence for the "
          "limit", tuple(f"judge-before-skinny-limit-h100-2026-11-26-{s}.json" for s in "abc"),
          "bash scripts/gpu_session.sh prebuild judge judge judge; run on commit 8b2ce19",
          ("docs/notes/dispatch.md", "sgemm/planner.py"),
          note="the limit's predicted cost on their skinny rows: python "
          "bench/probes/skinny_limit_cost.py"),
    Claim("judge-untuned", "Random problems, the cost model alone (`SGEMM_TUNED=0`): "
          "FP32 geometric mean", (UNTUNED,),
          "SGEMM_TUNED=0 python judge.py --precisions ieee", ("README.md",),
          _judge((UNTUNED,), "ieee", "geomean"),
          note="on the package code of the README's judges (839723e)"),
    Claim("gemv-x-ab", "A trial: sgemm_gemv's float4 loads where its big operand alone is "
          "16-byte aligned (the small operand or C not), tree A/B on the 13 of 1500 "
          "judge-distribution problems (own seed 7272) it changes and two judge rows: slower "
          "on most, reverted", ("gemv-x-ab-h100-2026-11-27.json",),
          "on commit 9bb38d1: python bench/probes/gemv_x_affected.py 1500 7272 > probs.json; "
          "PROBS=\"$(cat probs.json)\" OUT=dir python bench/probes/tree_ab.py OLD_TREE . "
          "gemvx 0 0 3", ("docs/notes/dispatch.md",)),
    Claim("store-refit", "The cost model's unaligned-store factor refitted for rung 9, tile "
          "and small after their unaligned stores went through shared memory: the sweep "
          "(store-heavy problems of calibrate's distribution, own seed 5150, those families' "
          "candidates timed) and the tree A/B on the 33 of 400 judge-distribution problems "
          "(own seed 9191) whose plan moved, three alternating rounds",
          ("store-sweep-h100-2026-11-27.json", "store-refit-ab-h100-2026-11-27.json"),
          "OUT=dir python bench/probes/store_refit.py sweep 200 5150; python "
          "bench/probes/store_refit.py fit SWEEP --write; python bench/probes/store_refit.py "
          "moved OLD_CAL 400 9191 > probs.json; PROBS=\"$(cat probs.json)\" OUT=dir python "
          "bench/probes/tree_ab.py OLD_TREE . moved 0 0 3", ("docs/notes/dispatch.md",)),
    Claim("unaligned-refit", "The cost model's unaligned-load factor refitted for rung 9 "
          "(rung 13's kept: no better on the grid): the sweep (compute-heavy problems of "
          "calibrate's distribution with a pitch not a multiple of 4, own seed 5353, rung 9's "
          "and 13's candidates timed) and the tree A/B on the 46 of 400 judge-distribution "
          "problems (own seed 9393) whose plan moved, three alternating rounds",
          ("unaligned-sweep-h100-2026-11-27.json", "unaligned-refit-ab-h100-2026-11-27.json"),
          "OUT=dir python bench/probes/unaligned_refit.py sweep 220 5353 190; python "
          "bench/probes/unaligned_refit.py fit SWEEP --write; python bench/probes/store_refit.py "
          "moved OLD_CAL 400 9393 > probs.json; PROBS=\"$(cat probs.json)\" OUT=dir python "
          "bench/probes/tree_ab.py OLD_TREE . moved 0 0 3", ("docs/notes/dispatch.md",)),
    Claim("layout-refit", "The cost model's layout factors refitted for rung 9 on large "
          "aligned problems: the sweep (calibrate's distribution, own seed 6262, FFMA time at "
          "least 200 us and twice the DRAM time, rung 9's candidates timed) and the tree A/B "
          "on the 76 of 400 judge-distribution problems (own seed 9494) whose plan moved, two "
          "alternating rounds (the new tree with the pipelined loop on every layout)",
          ("layout-sweep-h100-2026-11-27.json", "layout-refit-ab-h100-2026-11-27.json"),
          "OUT=dir python bench/probes/layout_refit.py sweep 120 6262 200; python "
          "bench/probes/layout_refit.py fit SWEEP --write; python bench/probes/store_refit.py "
          "moved OLD_CAL 400 9494 > probs.json; PROBS=\"$(cat probs.json)\" OUT=dir python "
          "bench/probes/tree_ab.py OLD_TREE . moved 0 0 2", ("docs/notes/dispatch.md",)),
    Claim("forced-cands-shortlist", "The cost model's best 8-14 candidates forced and timed "
          "(against fp64 first) beside the plan as called (auto, the measured choice on): an "
          "attention PV grid (batch 8/32/96 x T 512-2048 x dh 64/80/128) and fresh draws of "
          "the judge's batched, deep-K, general and large-batch small-matrix problems",
          ("forced-cands-shortlist-h100-2026-11-27.json",),
          "OUT=dir python bench/probes/forced_cands.py (each section's PROBS/DRAW/TOP in the "
          "file)", ("docs/notes/dispatch.md",)),
    Claim("measured-choice-max", "What the measured choice keeps against the model's pick with "
          "four and with six candidates timed, replayed on two calibration sweeps (in sample) "
          "and on the forced-candidates file (CPU)", ("measured-choice-max-cpu-2026-11-27.log",),
          "python bench/probes/measured_choice.py SWEEP.json ... --max 4,6",
          ("docs/notes/dispatch.md", "sgemm/measure.py")),
    Claim("measure-reps", "Each shortlisted candidate timed as the measured choice times it "
          "(one warm-up, the faster of two batches) at 1, 3 and 10 runs a batch, beside the "
          "judge's back-to-back timing, on attention PV and four rows judges lost",
          ("measure-reps-h100-2026-11-27.json",), "OUT=dir python bench/probes/measure_reps.py",
          ("docs/notes/dispatch.md", "sgemm/measure.py")),
    Claim("pack-inplace-ab", "The pack scheme with aligned operands of odd extent used in "
          "place (only C's pitch odd: no copies) against the tree before, on the 11 judge rows "
          "and 4 of 750 fresh draws (own seed 9191) whose model pick moved, two alternating "
          "rounds", ("pack-inplace-ab-h100-2026-11-27.json",),
          "PROBS=\"$(cat pack15.json)\" OUT=dir python bench/probes/tree_ab.py .base . pack 0 0 2 "
          "(.base: git archive 1c80e49)", ("docs/notes/dispatch.md",)),
    Claim("forced-cands-layers", "The model's three best candidates forced and timed on 16 "
          "large ML layers of the judge's distribution (own seed 8181, at least 3e10 flops; 8 "
          "TN, 4 NN, 4 NT), before the layout refit",
          ("forced-cands-layers-h100-2026-11-27.json",),
          "PROBS=\"$(cat layers.json)\" TOP=3 OUT=dir python bench/probes/forced_cands.py",
          ("docs/notes/dispatch.md",),
          note="layers.json: bench/probes/_draw.judge_draws('ml-layer', 200, 8181, keep=2mnk "
               ">= 3e10), the first 8 TN, 4 NN and 4 NT as the judge calls them"),
    Claim("ffma-clock", "SM clock and board power while sgemm's ieee plan and cuBLAS each run "
          "three large layers back to back, three alternating rounds",
          ("ffma-clock-h100-2026-11-27.json",), "OUT=dir python bench/probes/ffma_clock.py",
          ("docs/notes/ffma-fast.md",)),
    Claim("rung9-pipe", "Rung 9's pipelined loop: on every roomy config and layout, aligned or "
          "not, against none (48 problems, ml-layer seed 8282 and general seed 8383); aligned "
          "only, against none (48, seeds 8585 and 8686); where A is k-contiguous against every "
          "layout (34 large problems, seeds 8787 and 8888); tree A/Bs in one process each, two "
          "alternating rounds", ("pipe-all-ab-h100-2026-11-27.json", "pipe-ab-h100-2026-11-27.json",
                                 "pipe-layout-ab-h100-2026-11-27.json"),
          "PROBS=\"$(cat probs.json)\" OUT=dir python bench/probes/tree_ab.py "
          ".@SGEMM_DB_PIPE=0 . NAME 0 0 2", ("docs/notes/ffma-fast.md",),
          note="each file holds its problems (judge_draws with those seeds; at least 1e9 "
               "flops for seed 8383, 2e10 for 8787 and 8888); the trees: `. .@SGEMM_DB_PIPE=32` "
               "on a source whose loop was off unless asked, `.@SGEMM_DB_PIPE=0 .` before it "
               "was narrowed, `.@SGEMM_DB_PIPE=2 .` after"),
    Claim("rung9-sass", "Rung 9's main loop read from its SASS (the 256x128 tile, four "
          "layouts, sm_90a), and the final tree's rung 9 cubins against the tested trees'",
          ("rung9-sass-cpu-2026-11-27.log",), "python bench/probes/rung9_sass.py mix; "
          "python bench/probes/rung9_sass.py same CACHE_A CACHE_B",
          ("docs/notes/ffma-fast.md",), note="CPU only: NVRTC and nvdisasm, no GPU"),
    Claim("large-bk16", "A trial: rung 9's 256x128 tile at BK 16 against the registered BK 8 "
          "on 12 large layers of the judge's distribution (own seed 7878), forced, at split 1 "
          "and the model's split: slower on 17 of 20 pairs, not registered",
          ("large-bk16-h100-2026-11-27.json",), "OUT=dir python bench/probes/large_bk16.py",
          ("docs/notes/ffma-fast.md",)),
    Claim("large-t-ab", "A trial: a 128x256 rung-9 tile (two warp shapes) and the 256x128 "
          "tile forced at every split the planner weighs, beside its plan and its four best "
          "candidates, on 16 deep-K problems with 8192 or more outputs and 8 ML layers of the "
          "judge's distribution (own seed 5150): slower than the plan on 22 of 24 (1.2 % "
          "faster on 32000x1024x1024 TN, and on a K = 2 layer whose plan's time is the host's), "
          "not registered", ("large-t-ab-h200-2026-11-29.json",),
          "DRAW=deep-k:16:5150:8192 ML=8 OUT=dir python bench/probes/large_t_ab.py",
          ("docs/notes/dispatch.md",)),
    Claim("wave-splits", "Split counts up to 24 that fill their last wave to 90 % or more, "
          "for four rung-9 tiles, forced beside the planner's plan and its six best candidates "
          "on 12 ML layers with a million or more outputs (own seed 6262): the plan within "
          "4 % of the fastest on 11 rows (7.7 % on a K = 2 layer), each row's median prediction "
          "error 0.6-3.8 % (14 % on that layer)",
          ("wave-splits-h200-2026-11-29.json",),
          "DRAW=ml-layer:12:6262:1000000 OUT=dir python bench/probes/wave_splits.py",
          ("docs/notes/dispatch.md",)),
    Claim("ptxas-options", "A trial: NVRTC/ptxas options the compiler does not pass (-dlcm=cg, "
          "extra device vectorization, a 255-register cap) on the model's plans of five large "
          "problems, each variant in its own process and kernel cache, two alternating rounds, "
          "cuBLAS in each: within 1 % of the plain compile, the cap slower, none adopted",
          ("ptxas-options-h200-2026-11-29.json",), "OUT=dir python bench/probes/ptxas_options.py 2",
          ("docs/notes/ffma-fast.md",)),
    Claim("forced-cands-narrow-deepk", "The cost model's sixteen best candidates forced and "
          "timed on 12 deep-K problems of the judge's distribution with one side of at most 32 "
          "and the other of 400 or more (own seed 7171): the plan within 5 % of the fastest "
          "on 10; it loses to cuBLAS (0.79-0.93) on the five whose K is 40814 or more, all but "
          "one with the big operand stored along k", ("forced-cands-narrow-deepk-h200-2026-11-29.json",),
          "cd bench/probes && PROBS=\"$(python -c 'import json, _draw; print(json.dumps("
          "_draw.judge_draws(\"deep-k\", 12, 7171, lambda p: min(p[\"m\"], p[\"n\"]) <= 32 "
          "and max(p[\"m\"], p[\"n\"]) >= 400)))')\" TOP=16 OUT=dir python forced_cands.py",
          ("docs/notes/dispatch.md",)),
    Claim("calibration-sweep-h200", "`sgemm tune --calibrate` on an H200 (120 s: 24 problems, "
          "1592 timings), fitted on either half and judged on the other against the shipped "
          "H100 calibration: the FFMA pick's time over the fastest FFMA candidate's, geometric "
          "mean 1.29 and 1.20 for the half-sweep fits, 1.16 and 1.07 for the shipped "
          "calibration; not adopted", ("calibration-sweep-h200-2026-11-29.json",),
          "sgemm tune --calibrate --save-sweep FILE; python bench/probes/sweep_regret.py "
          "--ieee-only HALF.json h200 CAL.json ... (halves: the rows at even and odd positions)",
          ("docs/notes/dispatch.md",)),
    Claim("narrowk-ab", "A trial: a prototype kernel (bench/probes/narrowk.cu) streaming a "
          "big operand stored along k beside a side of at most 32, on 16 deep-K problems of "
          "that class (own seeds 7171 and 8282): correct (error 0.34-0.49 of cuBLAS's; four "
          "sanitizer tools clean on its boundary cases) but 0.40-0.47 of cuBLAS's speed in "
          "geometric mean where sgemm's plan ran 0.90-0.92 (0.45 with 4-warp blocks, two or "
          "three an SM; 0.75 at the best of its splits that fill whole waves, faster than "
          "sgemm's plan on 3 of 8, seed 7171; ncu: tails and 2 warps a scheduler; two rows a "
          "warp, two blocks an SM: 0.55 at its best splits); not adopted",
          ("narrowk-ab-h200-2026-11-29.json", "narrowk-ab-h200-2026-11-29-w4s4.json",
           "narrowk-ab-h200-2026-11-29-w4s3.json", "narrowk-ab-h200-2026-11-29-wave.json",
           "narrowk-ncu-h200-2026-11-29.log", "narrowk-ab-h200-2026-11-29-rows2.json"),
          "SEEDS=7171,8282 N=8 OUT=dir python bench/probes/narrowk_ab.py; the -w4s4 and -w4s3 "
          "files: NK_WARPS=4 NK_NST=4 (or 3) SEEDS=7171; -wave: NK_SPLITS=wave SEEDS=7171; -rows2: "
          "NK_ROWS=2 NK_SPLITS=wave SEEDS=7171; the "
          "ncu log: ncu --clock-control none -k regex:narrowk_main --section SpeedOfLight "
          "--section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy "
          "--section LaunchStats --section SchedulerStats python narrowk_ab.py --profile",
          ("docs/notes/dispatch.md",)),
    Claim("async-deepk", "A trial: rung 10 (cp.async, 4-byte copies where unaligned) forced "
          "on 12 deep-K problems of the judge's distribution, all unaligned (own seed 5151), "
          "five tiles at the two smallest accurate K splits, beside rung 9's rect, rect_t and "
          "large at theirs: rung 9's best time over rung 10's best 0.72 in geometric mean "
          "(0.41-0.97), rung 10 slower on every row; with four 128-thread blocks an SM "
          "(SGEMM_ASYNC_MINB=4, 119-128 registers, no spills) 0.66; not adopted",
          ("async-deepk-h200-2026-11-29.json", "async-deepk-h200-2026-11-29-minb4.json"),
          "DRAW=deep-k:12:5151 OUT=dir python bench/probes/forced_tiles.py; the -minb4 file: "
          "SGEMM_DEFINES=SGEMM_ASYNC_MINB=4 TAG=-minb4 and the same",
          ("docs/notes/ffma-fast.md",)),
    Claim("deepk-ncu-source", "ncu's SASS-level stall samples on sgemm's 128x64 kernel of "
          "904x379x24713 NN (unaligned, split 32): dispatch stalls 9.8 % of the samples, half "
          "of them on FFMAs and the rest spread over IADD3, LDS and STS; the 32 executed FFMAs "
          "whose uncached register reads share one bank 4.69 dispatch samples each against "
          "2.53 for the other 992, about 1 % of the dispatch stalls",
          ("deepk-ncu-source-h200-2026-11-29.csv.gz", "deepk-ncu-source-cpu-2026-11-29.log"),
          "OUT=dir python bench/probes/deepk_ncu.py source; python bench/probes/deepk_ncu.py "
          "summary FILE.csv.gz", ("docs/notes/ffma-fast.md",)),
    Claim("square-tiles", "A trial: rung 9 at 128x128 with four warps (128 accumulators a "
          "thread, two blocks an SM, 213-255 registers, no spills: the shape of cuBLAS's deep-K "
          "kernels), four warp shapes, forced on 10 deep-K problems with at least 40000 outputs "
          "and 8 ML layers with at least a million (own seeds 6161, 7373) beside rung 9's "
          "registered tiles at the same accurate splits and the plan's candidates: the best "
          "other time over the best 128x128 time 0.78 in geometric mean (0.36-1.04), faster "
          "on 3 of 18 by 1-4 %; not adopted", ("square-tiles-h200-2026-11-29.json",),
          "SET=square DRAW=deep-k:10:6161:40000,ml-layer:8:7373:1000000 OUT=dir python "
          "bench/probes/forced_tiles.py", ("docs/notes/ffma-fast.md",)),
    Claim("deepk-ncu", "ncu on cuBLAS's kernels and sgemm's plan on three unaligned deep-K "
          "rows (502x614x32427 TN, 904x379x24713 NN, 616x905x123705 NN): cuBLAS 2 warps a "
          "scheduler, 88-93 % issue, 79-82 % FMA pipe, 1.12-1.15 instructions a warp FFMA; "
          "sgemm's 8x8-tile plans 2.8-3.0 warps a scheduler, 77-79 % issue, 65-67 % FMA pipe, "
          "1.19-1.21 instructions a warp FFMA, dispatch stalls 0.36-0.38 an issue against "
          "0.11-0.16", ("deepk-ncu-h200-2026-11-29.csv",),
          "OUT=dir python bench/probes/deepk_ncu.py", ("docs/notes/ffma-fast.md",)),
    Claim("pipe-unaligned", "A trial: rung 9's pipelined loop on every layout and alignment "
          "(SGEMM_DB_PIPE=3) against the shipped rule (aligned operands with A along k), on 12 "
          "deep-K problems with at least 40000 outputs (own seed 8181, 10 unaligned), one "
          "process each, shipped rule first: forced tiles at the same splits, shipped time over "
          "the loop's, by tile: 128x64 1.011, 64x128 1.021, 256x128 0.955, 256x64 0.983 "
          "(cuBLAS 1.011 between the processes); the model's top candidate 1.035",
          ("pipe-unaligned-h200-2026-11-29-off.json", "pipe-unaligned-h200-2026-11-29-on.json"),
          "SET=none DRAW=deep-k:12:8181:40000 OUT=dir python bench/probes/forced_tiles.py, "
          "the -on file with SGEMM_DEFINES=SGEMM_DB_PIPE=3 (each in its own kernel cache)",
          ("docs/notes/ffma-fast.md",)),
    Claim("thin-tiles", "A trial: rung 9 tiles 32 wide (32x128 of four warps, 4x8 a thread, "
          "BK 16 and 32, either orientation) forced on 16 batched products with a side of "
          "33-96 (six attention PV problems with head dim 80 or 64, ten of the judge's batched "
          "draws, own seed 9191) beside rung 9's registered tiles and the plan's candidates: "
          "the best other time over the best 32-wide time 0.90 in geometric mean (0.69-1.04), "
          "faster on 4 of 16 by 0.2-4.5 %; on the two T = 2048 head-dim-80 rows the best forced "
          "time is 0.85-0.86 of cuBLAS's speed; not adopted", ("thin-tiles-h200-2026-11-29.json",),
          "DRAW=batched:10:9191 OUT=dir python bench/probes/thin_tiles.py",
          ("docs/notes/dispatch.md",)),
    Claim("rung9-sass-unaligned", "Rung 9's main loops read from their SASS (static counts, "
          "sm_90a): the unaligned 128x64 and 64x128 instantiations 1294-1433 instructions for "
          "1024 FFMAs with 49-68 FFMAs whose uncached register reads sit in one bank; the "
          "unaligned 256x128 ones 1212-1270 with 72-82; the aligned 128x64 ones 1213-1659 with "
          "2-12; 77-86 % of FFMAs mark an operand .reuse in all",
          ("rung9-sass-unaligned-cpu-2026-11-29.log",),
          "python bench/probes/rung9_sass.py mix rect:u rect_t:u large:u rect",
          ("docs/notes/ffma-fast.md",)),
    Claim("pipe8x8-ab", "A trial: the pipelined loop on every layout and alignment of the "
          "8x8 tiles of 128 threads only (SGEMM_DB_PIPE=4) against the shipped rule, the "
          "model's plans (measured choice off), two alternating rounds a tree, sgemm's "
          "best-round time shipped over trial: 16 deep-K problems (own seed 5252) 1.012 "
          "(0.96-1.04 a row), then 20 others (6363) 0.995 (0.88-1.04), 12 ML layers (6464) "
          "1.00 on the 10 over 50 us; general problems (5353, 6565) within the host noise of "
          "small calls; cuBLAS 1.008-1.029 between the trees' processes; no consistent gain, "
          "not adopted",
          ("pipe8x8-ab-h200-2026-11-29-deepk.json", "pipe8x8-ab-h200-2026-11-29-general.json",
           "pipe8x8-ab-h200-2026-11-29-deepk-2.json", "pipe8x8-ab-h200-2026-11-29-ml.json",
           "pipe8x8-ab-h200-2026-11-29-general-2.json"),
          "OUT=dir python bench/probes/tree_ab.py .@SGEMM_DB_PIPE=1 .@SGEMM_DB_PIPE=4 deep-k 16 "
          "5252 2 (general 12 5353 2; deep-k 20 6363 2; ml-layer 12 6464 2; general 12 6565 2)",
          ("docs/notes/ffma-fast.md",)),
    Claim("sanitizer-pipe8x8", "compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on "
          "rung 9's 128x64 and 64x128 tiles with the pipelined loop on every layout and "
          "alignment (SGEMM_DB_PIPE=4): 39 cases (edges, unaligned and padded operands, outputs "
          "over 256 a side, split K), 0 errors, 0 mismatches against fp64",
          ("sanitizer-pipe8x8-h200-2026-11-29.json", "sanitizer-pipe8x8-h200-2026-11-29.log"),
          "SGEMM_DEFINES=SGEMM_DB_PIPE=4 python -m sgemm.bench.sanitize --only "
          "double_buffer@rect,double_buffer@rect_t,double_buffer@rect/s5 --parallel",
          ("docs/notes/ffma-fast.md",)),
    Claim("layout-copy", "A measurement: 16 large x @ W^T layers of the judge's ml-layer "
          "draws over 40 GFLOP (own seed 9191) and 14 over 8 (9292), run by sgemm as called "
          "and on operands copied into the other three layouts: where the plan stays on the "
          "256x128 tile, the canonical NN and NT forms ran 1.04-1.08x faster than x @ W^T's "
          "canonical TN; with a 32x32 shared-memory transpose's copies (up to 3.3 TB/s) "
          "added, the 13 layers of 2048 tokens or more reach 0.92-0.97 of cuBLAS's speed "
          "against 0.88-0.93 as called; of the 17 smaller, one gained, three broke even, the "
          "rest lost up to 0.54x; not built",
          ("layout-copy-h200-2026-11-29-a.json", "layout-copy-h200-2026-11-29-b.json"),
          "DRAW=9191:16:40 OUT=dir python bench/probes/layout_copy.py (b: DRAW=9292:14:8)",
          ("docs/notes/ffma-fast.md",)),
    Claim("layout-ncu", "ncu --set full on rung 9's 256x128 tile at 4096^3 in the canonical "
          "layouts: NN 2.82 ms, NT 2.80, TN (x @ W^T) 2.96 and 3.04 without the pipelined "
          "loop; the same shared-memory wavefronts (3.61e8), global load requests and sectors "
          "in all four; TN issues in 78.5 % of cycles against 82.1-82.5 with dispatch stalls "
          "0.26 an issue (0.18 in NN), and 0.43 short-scoreboard stalls without the loop",
          ("layout-ncu-h200-2026-11-29.tgz",),
          "ncu --set full on python -m sgemm.bench.profile_target double_buffer 4096 4096 4096 "
          "[--tb | --ta] (tn-nopipe: SGEMM_DEFINES=SGEMM_DB_PIPE=0)", ("docs/notes/ffma-fast.md",)),
    Claim("define-ab", "Two kernel switches on 13 fixed large problems, one process a setting, "
          "two rounds: VEC_K stores in STS.64 pairs 0.97-0.98x on x @ W^T layers (refuted); "
          "the serpentine FFMA order in every block 1.02-1.03x on 4096^3 NN and TN (canonical "
          "NN and NT), 1.00-1.03x on x @ W^T, 1.04-1.06x on aligned deep K, 0.94x on "
          "502x614x32427 TN", ("define-ab-h200-2026-11-29.json",),
          "TAG=name [SGEMM_DEFINES=...] OUT=dir python bench/probes/define_ab.py",
          ("docs/notes/ffma-fast.md",)),
    Claim("serpentine-all-ab", "A/B of the serpentine FFMA order in every rung-9 block "
          "(guarded ones too) against the row order, the model's plans, two alternating rounds "
          "a tree, sgemm's best-round time row order over serpentine: ML layers 1.019 on 13 "
          "rows over 30 us (own seed 8787) and 1.019 on 16 (9090); deep K 1.008 on 14 over 30 "
          "us (8888) and 1.014 on 10 (9191), with guarded-block rows at 0.65-1.55",
          ("serpentine-all-ab-h200-2026-11-29-ml.json",
           "serpentine-all-ab-h200-2026-11-29-deepk.json",
           "serpentine-all-ab-h200-2026-11-29-general.json",
           "serpentine-all-ab-h200-2026-11-29-ml-2.json",
           "serpentine-all-ab-h200-2026-11-29-deepk-2.json"),
          "OUT=dir python bench/probes/tree_ab.py . .@SGEMM_FFMA_SERP=1 ml-layer 16 8787 2 "
          "(deep-k 20 8888; general 16 8989; ml-layer 16 9090; deep-k 16 9191), on the tree "
          "whose switch applied to every block", ("docs/notes/ffma-fast.md",)),
    Claim("serpentine-ab", "A/B of the shipped rule (serpentine order in unguarded blocks) "
          "against the row order, as above: ML layers 1.006 on 10 (own seed 9494), deep K "
          "0.998 on 14 (9393)", ("serpentine-ab-h200-2026-11-29-ml.json",
                                 "serpentine-ab-h200-2026-11-29-deepk.json"),
          "OUT=dir python bench/probes/tree_ab.py .@SGEMM_FFMA_SERP=0 . deep-k 14 9393 2 "
          "(ml-layer 10 9494)", ("docs/notes/ffma-fast.md",)),
    Claim("rung9-sass-serpentine", "Rung 9's 256x128 instantiations (sm_90a, aligned) with "
          "the serpentine order in unguarded blocks, read from their SASS on the CPU: 218, "
          "218, 231 and 232 registers; the unguarded loops 89-94 % of FFMAs marking an "
          "operand .reuse and 44-67 one-bank FFMAs, the guarded loops 85-87 % and 1-15",
          ("rung9-sass-serpentine-cpu-2026-11-29.log",),
          "python bench/probes/rung9_sass.py mix large", ("docs/notes/ffma-fast.md",)),
    Claim("serpentine-digests", "The outputs of every rung 8-11 and 38 kernel and auto on the "
          "sanitizer's 301 cases, with the serpentine order and with the row order: 301 of "
          "301 identical bit for bit", ("serpentine-digests-h200-2026-11-29.json",),
          "SGEMM_SANITIZE_DIGESTS=FILE python -m sgemm.bench.sanitize --driver --only "
          "KERNELS, once with SGEMM_DEFINES=SGEMM_FFMA_SERP=0", ("docs/notes/ffma-fast.md",)),
    Claim("sanitizer-serpentine", "compute-sanitizer (memcheck, racecheck, synccheck, "
          "initcheck) on rungs 8-11 and 38 with the serpentine order, every named config, and "
          "auto: 301 cases a tool, 0 errors, 0 mismatches against fp64",
          ("sanitizer-serpentine-h200-2026-11-29.json",
           "sanitizer-serpentine-h200-2026-11-29.log"),
          "python -m sgemm.bench.sanitize --parallel --only KERNELS (the rung 8-11 and 38 "
          "names and their configs, auto)", ("docs/notes/ffma-fast.md",)),
    Claim("reference-chain", "cuBLAS's FP32 accumulation chains implied by its errors in every "
          "judge file the repository has held (13282 batch-1 rows): on outputs with fewer "
          "128x128 tiles than SMs (1545 rows) as little as 0.03 times the chain of a GEMM "
          "that fills the GPU once (median 0.68), as short as 100 (5 % under 274); sgemm's "
          "error there under the 1024-deep cap at most 1.58 of cuBLAS's, so 2048-deep slices "
          "would reach about 2.2",
          ("reference-chain-cpu-2026-11-29.log",), "python bench/probes/reference_chain.py",
          ("docs/notes/dispatch.md",)),
    Claim("forced-cands", "The cost model's ten best candidates forced and timed on 14 rows "
          "where sgemm lost to cuBLAS in the judges of 2026-11-27 (before the unaligned refit)",
          ("forced-cands-h100-2026-11-27.json",), "OUT=dir python bench/probes/forced_cands.py",
          ("docs/notes/dispatch.md",)),
    Claim("forced-cands-deepk-small", "The same probe on 14 deep-K problems of the judge's "
          "distribution with at most 40000 outputs (own seed 6464), sixteen candidates, on the "
          "final tree", ("forced-cands-deepk-small-h100-2026-11-27.json",),
          "DRAW=deep-k:14:6464:40000 TOP=16 OUT=dir python bench/probes/forced_cands.py",
          ("docs/notes/dispatch.md",)),
    Claim("narrow-batch-sweep", "Every FFMA candidate timed on 70 batched problems with a "
          "side of at most 32 (the planner's distribution, own seed 6262), rung 13's narrow "
          "tiles of an experiment among them, and the probe's report",
          ("narrow-batch-sweep-h100-2026-11-27.json", "narrow-batch-report-cpu-2026-11-28.log"),
          "OUT=dir python bench/probes/narrow_batch_sweep.py sweep 70 6262 200; then "
          "python bench/probes/narrow_batch_sweep.py report FILE", ("docs/notes/dispatch.md",),
          note="the kmajor k32x32 .. k128x32 configs were in the experiment tree only"),
    Claim("kmajor-lean-ab", "Rung 13 against rung 9 tile for tile on 14 deep-K draws (own "
          "seed 7777) and the probe's fixed rows, as shipped and with one k-group of "
          "fragments at three blocks an SM (an experiment), and ptxas on the experiment",
          ("kmajor-lean-ab-h100-2026-11-27.json", "kmajor-lean-registers-cpu-2026-11-28.log"),
          "DRAW=deep-k:14:7777 BUDGET_S=130 OUT=dir python bench/probes/kmajor_ab.py 0 (and "
          "with SGEMM_DEFINES=KM_LEAN=1,KM_MINB=3 on the experiment tree)",
          ("docs/notes/ffma-fast.md",)),
    Claim("fixed-cost-refit", "Each config's per-wave cost refitted with its rate on the "
          "present sweeps: held-out regret (CPU)", ("fixed-cost-refit-cpu-2026-11-28.log",),
          "python bench/probes/fixed_cost_refit.py fit|crossval SWEEPS",
          ("docs/notes/dispatch.md",)),
    Claim("warm-first-call", "The two shapes whose first calls passed 50 ms late in the "
          "tenth session's judges, each as a new shape in a process that has called five "
          "others, three fresh processes each, under cProfile",
          ("warm-first-call-h100-2026-11-28.log",),
          "REPEAT=3 python bench/probes/warm_first_call.py", ("docs/notes/first-call.md",)),
    Claim("gemv-hoist-registers", "ptxas for every gemv instantiation, shipped against an "
          "experiment that loads the big operand's first group before staging the small one "
          "(CPU)", ("gemv-hoist-registers-cpu-2026-11-28.log",),
          "compile_kernel(...).resources() over KERNELS['gemv'].instantiations(), both trees",
          ("docs/notes/dispatch.md",)),
    Claim("occupancy-refit", "The unaligned occupancy line (and a factor per q) fitted on "
          "the present sweeps: held-out regret, and the fit that ships (CPU)",
          ("occupancy-refit-cpu-2026-11-28.log",),
          "python bench/probes/occupancy_refit.py [--linear] [--write] SWEEPS",
          ("docs/notes/dispatch.md",)),
    Claim("occ-u1-ab", "Tree A/B on the 33 of 600 judge-distribution problems (own seed "
          "5757) whose ieee pick the unaligned occupancy line moves, the model's plans",
          ("occ-u1-ab-h100-2026-11-28.json",),
          "PROBS=\"$(python bench/probes/store_refit.py moved OLD_CAL.json 600 5757)\" "
          "OUT=dir python bench/probes/tree_ab.py BASE . moved 0 0 2", ("docs/notes/dispatch.md",)),
    Claim("occ-perq-ab", "The same A/B for the two variants with a factor per q, not adopted: "
          "free (the moved 58) and held at 1 from full residency (the moved 47)",
          ("occ-perq-free-ab-h100-2026-11-28.json", "occ-perq-ab-h100-2026-11-28.json"),
          "PROBS=... OUT=dir python bench/probes/tree_ab.py BASE . moved 0 0 2",
          ("docs/notes/dispatch.md",)),
    _judge_set("judge-one-batch", "Six fresh judges on a variant of the final tree, not "
               "adopted: one timed batch of the measured choice where it lasts 1 ms (so plans "
               "up to the 2 ms cap fit its time bound)", "judge-h100-2026-11-27",
               ("aw", "ax", "ay", "az", "ba", "bb"), ("docs/notes/dispatch.md",)),
    Claim("align-mask-ab", "Tree A/B of rung 9 with float4 access per operand (commit "
          "f208a18, reverted) on the 142 of 600 judge-distribution problems (own seed 8181) "
          "whose plan or instantiation it changes, the model's plans; its sanitizer run; the "
          "rows by launched mask (CPU, at f208a18)",
          ("align-mask-ab-h100-2026-11-28.json", "sanitizer-align-mask-h100-2026-11-28.json",
           "align-mask-classes-cpu-2026-11-28.log"),
          "at f208a18: PROBS=\"$(python bench/probes/align_moved.py 600 8181)\" OUT=dir "
          "python bench/probes/tree_ab.py BASE . moved 0 0 2; python -m sgemm.bench.sanitize "
          "--only double_buffer,...,db_cluster@k2 --parallel", ("docs/notes/ffma-fast.md",)),
    Claim("deep-peel-ab", "Tree A/B of the peel scheme's deep cut (commit 1cd4db4, reverted) "
          "on the 45 of 2500 judge-distribution problems (own seed 9191) it takes, the "
          "model's plans, and the model's times for them (CPU)",
          ("deep-peel-ab-h100-2026-11-28.json", "deep-peel-moved-cpu-2026-11-28.log"),
          "at 1cd4db4: PROBS=\"$(python bench/probes/deep_peel_moved.py 2500 9191)\" OUT=dir "
          "python bench/probes/tree_ab.py BASE . moved 0 0 2", ("docs/notes/dispatch.md",)),
    Claim("unaligned-ncu", "Rung 9's rect and large tiles on the same canonical problems with "
          "every operand aligned and with none: event times, and ncu's instructions, load "
          "sectors, pipe and issue use, registers",
          ("unaligned-rung9-times-h100-2026-11-28.json", "unaligned-rung9-ncu-h100-2026-11-28.json"),
          "python bench/probes/unaligned_ncu.py OUT.json; ncu -k regex:sgemm_double_buffer "
          "--launch-skip 1 --launch-count 1 --metrics ... python bench/probes/unaligned_ncu.py "
          "--one CASE a|u", ("docs/notes/ffma-fast.md",)),
    Claim("planner-cost", "What the planner costs a first call (both precisions' candidates, "
          "CPU machine), the tree before and after resident() is remembered",
          ("planner-cost-cpu-2026-11-28.log",),
          "SGEMM_ROOT=TREE python bench/probes/planner_cost_cpu.py", ("docs/notes/first-call.md",)),
    _judge_set("judge-slices4096", "Six fresh judges on the tree before FFMA chains on large "
               "outputs were limited to 2560 (99d1316): the error over twice cuBLAS's that "
               "motivated the limit, and the rows slow in one precision only",
               "judge-slices4096-h100-2026-11-28", "abcdef",
               ("docs/dispatch.md", "docs/notes/dispatch.md")),
    Claim("narrow-sweep", "Every FFMA candidate, 43_narrow.cu's among them, timed on 60 "
          "batched problems with a side of at most 32 and 8 MiB or more (the planner's "
          "distribution, own seed 4343); the sweep narrow's shipped rates are fitted from",
          ("narrow-sweep-h100-2026-11-28.json",),
          "OUT=dir python bench/probes/narrow_batch_sweep.py sweep 60 4343 110 8; python -m "
          "sgemm.calibrate --sweep SWEEP --device h100", ("docs/notes/dispatch.md", "sgemm/data",
                                                          "sgemm/kernels/cuda/43_narrow.cu")),
    Claim("narrow-tworows-sweep", "43_narrow.cu with two wide rows a thread (half the "
          "threads; an experiment not landed): every FFMA candidate with those configs "
          "beside on 70 batched problems with a side of at most 32 and 8 MiB or more (own "
          "seed 28113), H200", ("narrow-tworows-sweep-h200-2026-11-28.json",),
          "OUT=dir python bench/probes/narrow_batch_sweep.py sweep 70 28113 190 8; python "
          "bench/probes/narrow_batch_sweep.py report SWEEP tworows",
          ("docs/notes/dispatch.md",)),
    Claim("eager-blas-ravel", "blas.sgemm's eager cost at 64^3 as the judge calls it (three "
          "cupy ravel() calls inside the timed call) against the same call on buffers "
          "raveled once, the ravels alone, gemm, cupy.matmul and torch.matmul (H200)",
          ("eager-blas-ravel-h200-2026-11-28.json",),
          "OUT=dir python bench/probes/eager_blas_ravel.py", ("docs/notes/dispatch.md",)),
    Claim("int8-api-cost-h200", "The integer engine through the public API at 8192^3 and "
          "16384^3 on an H200, cuBLAS in the same run (2026-11-28; its 16384^3 check "
          "recorded int8x unequal to the pipeline, max_rel 1.0, which did not reproduce)",
          ("int8-api-cost-h200-2026-11-28.json",),
          "OUT=dir python bench/probes/int8_api_cost.py 8192 16384", ("docs/notes/int8x.md",)),
    Claim("int8-large-check", "The integer engine's result at 8192-16384 a side checked against "
          "cupy.matmul path by path (public int8x, a second call, fp32, the runner), nine "
          "scenarios in fresh processes (keep=0, 8192 called first, rectangular), H200",
          ("int8-large-check-h200-2026-11-29.json", "int8-large-check-h200-2026-11-29.log"),
          "OUT=dir python bench/probes/int8_large_check.py", ("docs/notes/int8x.md",)),
    Claim("int8-plane-count", "The INT8 wgmma GEMM back to back at the 700 W cap with 8, 7 "
          "and 6 residue planes at 8192^3 and 16384^3 (what one modulus fewer saves), H200",
          ("int8-plane-count-h200-2026-11-29.json",),
          "OUT=dir python bench/probes/int8_plane_count.py 8192 16384", ("docs/notes/int8x.md",)),
    Claim("int8-norm-scaling-model", "CPU model of the integer engine's error with rows scaled "
          "by their largest entry (as shipped) or by a bound on their 2-norm, 8 and 7 moduli, "
          "N(0,1), U(0,1) and wide data, K 64-16384, and whether the scaling check passes",
          ("int8-norm-scaling-model-cpu-2026-11-29.log",),
          "python bench/probes/int8_norm_scaling_model.py", ("docs/notes/int8x.md",)),
    Claim("int8-ncu-h200", "ncu on the integer engine in 16384^3 int8x calls, H200, before "
          "the residue kernels took constant moduli: the conversion and Garner kernels' "
          "sections (SpeedOfLight, workloads, occupancy, warp states) at ncu's clocks",
          ("int8-ncu-h200-2026-11-29.log",),
          "ncu --kernel-name regex:'garner|convert|residue|exponent' --launch-count 8 --section "
          "SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis "
          "--section LaunchStats --section Occupancy --section WarpStateStats python "
          "bench/probes/int8_steps.py",
          ("docs/notes/int8x.md",)),
    Claim("int8-fp32-cost-model", "precision='fp32' on the integer engine (7 moduli) against "
          "tf32x3 through sgemm.gemm on an H200, the engine forced on every shape, errors "
          "against fp64 beside cuBLAS FP32's: squares 2048-4096 and ten rectangles (the fit of "
          "sgemm/int8x/cost.py, with the sizes file), then ten other shapes (its check: the "
          "rule picks the faster path on 9)",
          ("int8-crossover-moduli-h200-2026-11-29.json", "int8-fp32-shapes-h200-2026-11-29.json",
           "int8-fp32-validate-h200-2026-11-29.json"),
          "CROSSOVER=1 (the first two, at 48e585e) or ALWAYS=1 (the third) OUT=dir python "
          "bench/probes/int8_fp32_moduli.py SHAPES...",
          ("sgemm/int8x/cost.py", "sgemm/int8x/route.py", "docs/notes/int8x.md")),
    Claim("int8-fp32-alone", "precision='fp32' against 'int8x' at 8192^3, one call at a time "
          "on a fresh stream, and cProfile of five calls each, H200",
          ("int8-fp32-alone-h200-2026-11-29.log",),
          "S=8192 python bench/probes/int8_fp32_alone.py", ("docs/notes/int8x.md",)),
    Claim("narrow-report", "That sweep by layout and narrow side (narrow against the fastest "
          "other candidate), and the judge-distribution problems whose pick narrow takes (CPU)",
          ("narrow-report-cpu-2026-11-28.log",),
          "python bench/probes/narrow_batch_sweep.py report SWEEP narrow; python "
          "bench/probes/narrow_moved.py 3000 6262 moved.json; python "
          "bench/probes/model_top.py ROWS",
          ("docs/notes/dispatch.md", "sgemm/kernels/cuda/43_narrow.cu")),
    Claim("narrow-ab", "The tree with narrow against the tree before (33667d9) on the 20 "
          "problems of 3000 judge draws whose pick it takes, the model's plans, two "
          "alternating rounds", ("narrow-ab-h100-2026-11-28.json",),
          "PROBS=\"$(cat moved.json)\" OUT=dir python bench/probes/tree_ab.py .base . narrow 0 0 2",
          ("docs/notes/dispatch.md", "sgemm/kernels/cuda/43_narrow.cu")),
    Claim("batched-gemv-ab", "gemv rates of their own for blocks that hold a batch's whole "
          "product, against the tree before (11fc86b): the problems of 1500 batched judge "
          "draws (own seed 7171) whose prediction moved, two alternating rounds; the first "
          "split (every batch > 1) the same way; both split by moved pick (CPU)",
          ("batched-gemv-ab-h100-2026-11-28.json", "batched-gemv-split1-ab-h100-2026-11-28.json",
           "batched-gemv-ab-cpu-2026-11-28.log"),
          "MOVED=moved.json python bench/probes/model_ab.py .base . batched 1500 7171; "
          "PROBS=\"$(cat moved.json)\" OUT=dir python bench/probes/tree_ab.py .base . batched 0 "
          "0 2; python bench/probes/tree_ab_moved.py FILE .base TREE",
          ("docs/notes/dispatch.md", "sgemm/cost.py")),
    Claim("gemv-batch-fit", "The cost model's measured / predicted time of gemv and gemv_wide "
          "on the committed H100 sweeps, batched and single products apart, before and after "
          "the batched gemv rates (CPU)", ("gemv-batch-fit-cpu-2026-11-28.log",),
          "SGEMM_ROOT=TREE python bench/probes/gemv_batch_fit.py SWEEP.json ...",
          ("docs/notes/dispatch.md",)),
    _judge_set("judge-h100-final", "Three fresh judges of the thirteenth session's final tree "
               "on an H100 (the README's scorecard until narrow's k-groups)",
               "judge-h100-2026-11-28", "rst", ("docs/notes/dispatch.md",
                                                "docs/notes/first-call.md")),
    Claim("judge-untuned-h100-final", "The cost model alone (`SGEMM_TUNED=0`) on that tree, "
          "H100", ("judge-untuned-final-h100-2026-11-28.json",),
          "SGEMM_TUNED=0 python judge.py --precisions ieee", ("docs/notes/dispatch.md",)),
    Claim("narrow-groups-sweep", "Every FFMA candidate, 43_narrow.cu's 46 configs (8-deep "
          "chunks and two or four k-groups among them) included, timed on batched problems "
          "with a side of at most 32 and 8 MiB or more: 70 (own seed 326067) and 70 (169663); "
          "50 with a side of at most 8 (558746), H200; narrow's shipped rates are fitted "
          "from the three", ("narrow-groups-sweep-h200-2026-11-29.json",
                             "narrow-groups-sweep-h200-2026-11-29-2.json",
                             "narrow-side8-sweep-h200-2026-11-29.json"),
          "OUT=dir python bench/probes/narrow_batch_sweep.py sweep 70 326067 200 8; the same "
          "with 70 169663 200 8 and 50 558746 200 8 8; python -m sgemm.calibrate --sweep "
          "THE_THREE --device h200 --out FIT; python bench/probes/merge_rates.py FIT narrow: "
          "SOURCE", ("docs/notes/dispatch.md", "sgemm/data", "sgemm/kernels/cuda/43_narrow.cu")),
    Claim("narrow-groups-report", "The first of those sweeps: the new configs (8-deep chunks "
          "or k-groups) against every other candidate, by narrow side and layout (CPU)",
          ("narrow-groups-report-cpu-2026-11-29.log",),
          "python bench/probes/narrow_batch_sweep.py report SWEEP new; ... k8; ... groups",
          ("docs/notes/dispatch.md", "sgemm/kernels/cuda/43_narrow.cu")),
    Claim("narrow-groups-fit", "The model's picks on the three sweeps under the calibration "
          "before and after narrow's refit (regret: the pick's time over the fastest "
          "measured), and out of sample: rates fitted without the second sweep, checked on "
          "it (CPU)", ("narrow-groups-fit-cpu-2026-11-29.log",),
          "bash bench/probes/narrow_groups_fit.sh", ("docs/notes/dispatch.md",)),
    Claim("narrow-single-sweep", "Every FFMA candidate, 43_narrow.cu's K-split plans among "
          "them (the planner let weigh narrow for single products), timed on single products "
          "with a side of at most 32 and 8 MiB or more: 80 (own seed 373808) and 60 (456155), "
          "H200", ("narrow-single-sweep-h200-2026-11-29.json",
                   "narrow-single-sweep-h200-2026-11-29-2.json"),
          "OUT=dir python bench/probes/narrow_single_sweep.py sweep 80 373808 240 8; the same "
          "with 60 456155 100 8", ("docs/notes/dispatch.md", "sgemm/kernels/schemes.py")),
    Claim("narrow-single-fit", "The model's picks on those two sweeps with narrow weighed for "
          "batches only and for single products too (the shipped calibration), and each "
          "sweep's report (CPU)", ("narrow-single-fit-cpu-2026-11-29.log",),
          "bash bench/probes/narrow_single_fit.sh", ("docs/notes/dispatch.md",)),
    _san_claim("sanitizer-narrow-split", "compute-sanitizer on narrow's K split on single "
               "products (two configs forced with 3 and 4 slices on the deep GEMV-like cases) "
               "and its own choice", "sanitizer-narrow-split-h200-2026-11-29.json",
               "docs/notes/dispatch.md"),
    Claim("gpu-tests-h200-partial", "Most of the GPU suite on the final tree (narrow on single "
          "products), H200, in two runs cut off by the session's device time: rung 9's edges, "
          "gemm, unaligned stores, bundle, determinism, fuzz, schemes and large files to 95 % "
          "(1659 passed, 2 skipped, none failed); epilogue, torch, entry cache, measure, "
          "packing, peeling, hostile, launcher, concurrency and PDL files to 86 % (1409 "
          "passed, 24 skipped, none failed); int8x not run",
          ("gpu-tests-h200-2026-11-29-partial-1.log", "gpu-tests-h200-2026-11-29-partial-2.log"),
          "timeout 210 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/FILES (after "
          "the prebuild); timeout 150 for the second", ("docs/notes/dispatch.md",)),
    Claim("planner-slices", "The planner deciding which candidates are accurate enough "
          "(their accumulation chains) before predicting them: every candidate list of 300 "
          "judge-distribution problems, both precisions and device models, the same before "
          "and after; what the planner costs a first call before and after (CPU)",
          ("planner-slices-cpu-2026-11-29.log",),
          "SGEMM_ROOT=TREE python bench/probes/planner_same.py OUT.json 300 4242; python "
          "bench/probes/planner_same.py --diff OLD NEW; SGEMM_ROOT=TREE python "
          "bench/probes/planner_cost_cpu.py", ("docs/notes/first-call.md", "sgemm/planner.py")),
    _san_claim("sanitizer-narrow-h200", "compute-sanitizer on narrow, its own choice and eight "
               "named configs (8-deep chunks and k-groups among them) forced on every edge "
               "case", "sanitizer-narrow-h200-2026-11-29.json", "docs/notes/dispatch.md"),
    Claim("gpu-tests-narrow-h200", "GPU tests that force narrow, every one of its 46 configs "
          "on all four layouts and seven K splits of single products among them (H200)", ("gpu-tests-narrow-h200-2026-11-29.log",),
          "PYTEST_ARGS=\"tests/gpu/test_schemes_gpu.py -k narrow\" bash scripts/gpu_session.sh "
          "tests", ("docs/notes/dispatch.md",)),
    _san_claim("sanitizer-narrow", "compute-sanitizer on narrow, its own choice and four named "
               "configs forced on every edge case", "sanitizer-narrow-h100-2026-11-28.json",
               "docs/notes/dispatch.md"),
    Claim("chain-error", "The error of the model's plans against their longest accumulation "
          "chain on the judges before and after the 2560 FFMA limit (CPU replay), and what "
          "the limit does to the model's picks (CPU)",
          ("chain-error-cpu-2026-11-28.log", "acc-limit-model-cpu-2026-11-28.log"),
          "python bench/probes/chain_error.py [--acc 4096] JUDGE.json ...; python "
          "bench/probes/acc_limit_model.py 4096 2560 [tf32x3]", ("docs/notes/dispatch.md",)),
    Claim("alignment-classes", "The ieee ratios of 18 judges by which of A, B and C allow "
          "16-byte access (CPU)", ("alignment-classes-cpu-2026-11-27.log",),
          "python bench/probes/alignment_classes.py bench/results/judge-h100-2026-11-27-"
          "{ak..bb}.json", ("docs/notes/dispatch.md", "docs/notes/ffma-fast.md")),
    Claim("first-call-no-bytecode", "A process's first call on a fresh editable copy "
          "without bytecode, four problems, with four and with six candidates measured, and "
          "its cProfile", ("first-call-no-bytecode-h100-2026-11-27.log",),
          "NOPROF_ONLY=1 python bench/probes/judge_first_call.py M,N,K,TA,TB,PREC ...; then "
          "python bench/probes/judge_first_call.py 77,50257,1024,0,1,ieee 3072,768,32,1,0,ieee",
          ("docs/notes/first-call.md",), note="no python -m compileall before it"),
    Claim("first-call-measured", "First calls of long plans in fresh processes on that "
          "variant: what the measured choice timed and kept",
          ("first-call-measured-h100-2026-11-27.log",),
          "python bench/probes/first_call_measured.py", ("docs/notes/dispatch.md",)),
    Claim("import-bundle-h100", "On the H100 machine with the bundle built: the build's "
          "summary, `import sgemm` three times, the GPU bundle tests (bundled and NVRTC "
          "cubins give bit-identical results)", ("import-bundle-h100-2026-11-27.log",),
          "python -m sgemm.build --arch sm_90a; python -c 'import sgemm'; python -m pytest -m "
          "gpu tests/gpu/test_bundle_gpu.py", ("docs/notes/first-call.md",)),
    Claim("suite-geomean", "Public suite (the fixed shapes of `bench/shapes/public.txt`): "
          "cuBLAS time ÷ sgemm time, geometric mean", (SUITE, "suite-h200-2026-11-29-ratio.png"),
          _SUITE_CMD, ("README.md",), _suite(("geomean_ratio",), "{:.2f}×")),
    Claim("suite-min", "Public suite: worst shape", (SUITE,), _SUITE_CMD, ("README.md",),
          _suite(("min_ratio",), "{:.2f}×")),
    Claim("suite-graphs", "Squares 128³–512³ under CUDA graphs: cuBLAS time ÷ sgemm time, "
          "geometric mean", (SUITE,), _SUITE_CMD, ("README.md",),
          _suite(("graph_geomean_small_squares",), "{:.2f}×")),
    Claim("host-sgemm", "Host time per call, `sgemm.gemm(a, b, c)`", (SUITE,), _SUITE_CMD,
          ("README.md",), _suite(("host_us", "sgemm.gemm(a, b, c)"), "{:.1f} µs")),
    Claim("host-cupy", "Host time per call, `cupy.matmul(a, b, out=c)`, for comparison",
          (SUITE,), _SUITE_CMD, ("README.md",), _suite(("host_us", "cupy.matmul(a, b, out=c)"),
                                                       "{:.1f} µs")),
    Claim("judge-baseline", "The judge on the planner before the cost model: the error "
          "against K-slice length behind the planner's accuracy constraint",
          ("judge-baseline-h100-2026-11-25.json",), "bash scripts/gpu_session.sh judge",
          ("docs/dispatch.md",), note="run on the commit before the cost-model planner"),
    Claim("gemv-configs", "gemv block configs forced on skinny problems, beside the planner's "
          "pick and cuBLAS: the data behind the gemv block rule",
          ("gemv-configs-probe-h100-2026-11-25.json",),
          "OUT=dir python bench/probes/gemv_configs.py 7", ("docs/notes/dispatch.md",)),
    Claim("launch-cost", "One prepared launch and one plan.execute(), the ctypes driver layer "
          "against the cuda.bindings one, in alternating processes; the host-overhead probe's "
          "logs and profiles; the ctypes call forms timed on the CPU machine; the stand-in "
          "driver's first call",
          ("launch-cost-h100-2026-11-26.json", "launch-cost-run1-h100-2026-11-26.json",
           "host-overhead-h100-2026-11-26.log", "ctypes-call-cpu-2026-11-26.log",
           "first-call-standin-cpu-2026-11-26.log"),
          "python bench/probes/launch_cost.py; bash scripts/host_overhead_probe.sh",
          ("docs/notes/first-call.md", "docs/first-call.md", "sgemm/runtime/cu.py")),
    Claim("suite-h100", "The public suite on an H100 on the tree of 2026-11-28 (before "
          "narrow's 8-deep chunks and k-groups): geomean, worst shape, graphs, host costs",
          ("suite-h100-2026-11-28.json", "suite-h100-2026-11-28-ratio.png"), _SUITE_CMD,
          ("docs/notes/dispatch.md",)),
    Claim("first-call-import", "A process's first sgemm.gemm in a fresh process per problem "
          "(the judge's slowest first-call problems), before and after the API's first-use "
          "import counted in the measured choice's budget; a judge run in one process with "
          "every uncached call traced (host time of the call, the measuring, each candidate, "
          "each garbage collection)",
          ("first-call-probe-h200-2026-11-29.log", "first-call-trace-h200-2026-11-29.json"),
          "python bench/probes/judge_first_call.py 2336,939,1191,0,0,ieee ...; "
          "SGEMM_CACHE_DIR=empty python bench/probes/judge_trace.py TRACE.json --out J.json "
          "--no-eager", ("docs/notes/first-call.md", "docs/first-call.md")),
    Claim("narrow-chain-moved", "The planner's first picks before and after narrow's k-groups "
          "entered the accuracy rule (400 judge-distribution problems, both precisions, H100 "
          "and H200 models; CPU)", ("narrow-chain-moved-cpu-2026-11-29.log",),
          "SGEMM_ROOT=TREE python bench/probes/planner_same.py OUT.json 400 4242; python "
          "bench/probes/planner_same.py --diff OLD.json NEW.json", ("docs/notes/dispatch.md",)),
    Claim("gpu-tests-h200-changed", "The GPU tests of what this session changed (the measured "
          "choice, the bundle, the entry cache, narrow's schemes) on an H200: three of the "
          "measured choice's fail on a fresh machine; the same test after it builds its plan "
          "once unmeasured first; the debug run between them",
          ("gpu-tests-h200-2026-11-29-changed.log", "gpu-tests-measure-h200-2026-11-29.log",
           "gpu-tests-measure-cold-h200-2026-11-29.log"),
          "python -m pytest -q -m gpu tests/gpu/test_measure_gpu.py tests/gpu/test_bundle_gpu.py "
          "tests/gpu/test_entry_cache_gpu.py tests/gpu/test_schemes_gpu.py -k 'measure or "
          "bundle or narrow or entry or cache'", ("docs/notes/first-call.md",)),
    Claim("gpu-tests-h200-entry", "The entry points' GPU tests on the tree of 839723e "
          "(every call takes its clock through sgemm._call_began): torch, hostile inputs, "
          "peeling, packing, launcher, concurrency and PDL files, then the gemm file; H200",
          ("gpu-tests-h200-2026-11-29-entry.log",),
          "python -m pytest -q -m gpu tests/gpu/test_torch_gpu.py tests/gpu/test_hostile_gpu.py "
          "... tests/gpu/test_pdl_gpu.py; python -m pytest -q -m gpu tests/gpu/test_gemm_gpu.py",
          ("docs/notes/first-call.md",)),
    Claim("int8-gpu-tests-h200", "The INT8 engine's GPU tests (the scaling check's and the "
          "engine's files) and its 16384^3 test of tests/gpu/test_large.py on an H200, with "
          "norm scaling and 7 or 8 moduli (238 and 2 passed)",
          ("gpu-tests-int8x-h200-2026-11-29.log",),
          "bash scripts/int8_gpu_run.sh (its tests); python -m pytest -q -m gpu "
          "tests/gpu/test_large.py -k int8x", ("docs/notes/int8x.md",)),
    Claim("int8-gpu-tests-h200-review", "The INT8 engine's GPU tests (the scaling check's and "
          "the engine's files) re-run on the tree whose fallback to 8 moduli computes each "
          "count's budget once (238 passed)", ("gpu-tests-int8x-h200-2026-11-29-review.log",),
          "python -m pytest -q -m gpu tests/int8x/test_wide_gpu.py tests/gpu/test_int8x_gpu.py",
          ("docs/notes/int8x.md",)),
    Claim("int8-residue-constants", "The residue kernels dividing by the moduli as constants: "
          "each kernel's duration and instructions before and after (ncu at the GPU's own "
          "clocks), the public path at 8192^3 and 16384^3 before (two runs) and after (two "
          "runs whose JSON did not come back, then the README's two), and compute-sanitizer's "
          "four tools on the changed kernels, H200",
          ("int8-steps-h200-2026-11-29.log", "int8-steps-const-h200-2026-11-29.log",
           "int8-api-cost-h200-2026-11-29-1.json", "int8-api-cost-h200-2026-11-29-2.json",
           *INT8X_API,
           "int8-api-cost-const-h200-2026-11-29-1.log", "int8-api-cost-const-h200-2026-11-29-2.log",
           "sanitizer-int8-const-h200-2026-11-29.log"),
          "S=16384|8192 ORDER=F|C ncu --clock-control none --metrics ... python "
          "bench/probes/int8_steps.py (both trees); OUT=dir python bench/probes/int8_api_cost.py "
          "8192 16384; bash scripts/int8_gpu_run.sh (its sanitizer step)",
          ("docs/notes/int8x.md",)),
    Claim("gpu-tests-h200-rest", "The GPU suite's files not run on 839723e, on 249b089 (the "
          "same package code but the first-call stand-in and tests): schemes, determinism, fuzz and epilogue; then the entry cache, bundle, "
          "unaligned stores and rung 9's edges; H200",
          ("gpu-tests-h200-2026-11-29-schemes.log", "gpu-tests-h200-2026-11-29-edges.log"),
          "python -m pytest -q -m gpu tests/gpu/test_schemes_gpu.py tests/gpu/test_determinism.py "
          "tests/gpu/test_fuzz_gpu.py tests/gpu/test_epilogue_gpu.py; python -m pytest -q -m gpu "
          "tests/gpu/test_entry_cache_gpu.py tests/gpu/test_bundle_gpu.py "
          "tests/gpu/test_unaligned_store_gpu.py tests/gpu/test_rung9_edges.py",
          ("docs/notes/dispatch.md",)),
    Claim("bundle-build-h200", "The sm_90a bundle of the tree with narrow's 8-deep chunks and "
          "k-groups: kernels, size, build time (H200 machine)",
          ("bundle-build-h200-2026-11-29.log",), "python3 -m sgemm.build --arch sm_90a -q",
          ("docs/first-call.md",)),
    Claim("wheel", "The wheel with its kernel bundle: size, kernels per arch, build time",
          ("wheel-cpu-2026-11-29.log",), "pip wheel --no-deps --no-build-isolation .",
          ("docs/first-call.md",)),
    Claim("eager-probe", "Host cost of each entry point and of the cached path's pieces at "
          "64³: the judge's list beside cupy.matmul and torch.matmul in one process, main and "
          "the cached-path changes A/B (2026-11-26), and the ctypes-launch experiment "
          "(2026-11-25)", ("eager-probe-h100-2026-11-26.log", "eager-probe-h100-2026-11-25.log"),
          "bash scripts/eager_gpu_run.sh (python bench/probes/eager_costs.py --judge)",
          ("docs/notes/dispatch.md",),
          note="2026-11-25 runs 2 and 3 with the ctypes launch in the tree and "
          "SGEMM_LAUNCH=bindings"),
    Claim("hit-path-stand-in", "The cached path's host cost per entry point on the CPU machine "
          "with the stand-in driver, before and after (call_blas, call_torch2): a prediction "
          "of the GPU host's, not a measurement of it", ("hit-path-stand-in-cpu-2026-11-26.log",),
          "python bench/probes/hit_path_cpu.py", ("docs/notes/dispatch.md",)),
    Claim("first-call-imports", "A first call's imports and bundle lookup on the CPU machine "
          "with the stand-in driver, before and after the slotted records and the index's "
          "header-only read: each module's own import time, the first call with the stand-in's "
          "and a shipped-size bundle index, a profile: a prediction of the GPU host's, not a "
          "measurement of it", ("first-call-imports-standin-cpu-2026-11-26.log",),
          "python bench/probes/first_call.py --stand-in --modules [--index-entries 2393]",
          ("docs/notes/first-call.md",)),
    Claim("skinny-probe", "Problems with one small side (decode-sized layers, skinny, deep K): "
          "every candidate plan and FFMA tiles along a small n forced, beside the planner's "
          "pick and cuBLAS: the data behind rung 9's \"tall\" tiles",
          ("skinny-probe-h100-2026-11-25.json",),
          "OUT=dir python bench/probes/skinny_plans.py 31",
          ("docs/notes/dispatch.md", "sgemm/kernels/ladder.py")),
    Claim("small-output-deepk", "Deep K with outputs of at most 128x128, and matrix-vector "
          "products: the plan launch by launch, the model's best candidates, gemv forced "
          "through the K split at 1-16 slices (the data behind gemv's K split and "
          "`Machine.sm_stream`)", ("small-output-deepk-h100-2026-11-26.json",),
          "SGEMM_AUTOTUNE=0 OUT=dir python bench/probes/small_output_deepk.py 5151",
          ("docs/notes/dispatch.md", "sgemm/cost.py")),
    Claim("judge-replay", "The worst problems of the committed judges (ratio < 0.75) replayed "
          "as the judge runs them, with the plan, its source and its launches timed alone "
          "(a diagnosis; not a score), and the two judges they came from",
          ("judge-replay-h100-2026-11-26.json", "judge-h100-2026-11-26-g.json",
           "judge-h100-2026-11-26-h.json"),
          "OUT=dir python bench/probes/judge_replay.py 0.72 bench/results/judge-h100-2026-11-26-"
          "{g,h}.json", ("docs/notes/dispatch.md",)),
    Claim("ragged-split-ab", "Rung 9's split-K with the shorter last slice as the last z "
          "entry of the full slices' launch (k_last) against the tree before (aa50f70), 28 "
          "deep-K problems of the judge's distribution (own seed), the model's plans, two "
          "alternating rounds", ("ragged-split-ab-h100-2026-11-27.json",),
          "OUT=dir python bench/probes/tree_ab.py .base . deep-k 28 5153 2 (.base: git archive "
          "aa50f70 sgemm pyproject.toml)", ("docs/notes/dispatch.md",)),
    Claim("small-k-sweep", "small_k against the planner's three best plans on 48 problems with "
          "K <= 16 (own seed), calibrate's timing; the sweep its shipped rates are fitted from",
          ("small-k-sweep-h100-2026-11-27.json",),
          "OUT=dir python bench/probes/small_k_sweep.py 48 3901 110; python -m sgemm.calibrate "
          "--sweep SWEEP --device h100", ("docs/notes/dispatch.md", "sgemm/data")),
    _san_claim("sanitizer-small-k", "compute-sanitizer on small_k, the short-K kernel, forced "
               "on every edge case", "sanitizer-small-k-h100-2026-11-27.json",
               "docs/notes/dispatch.md"),
    Claim("kmajor-ab", "Rung 13 (kmajor) against rung 9 tile for tile (rect, rect_t, small, "
          "medium) at split 1 and the planner's split, on 14 named rows and 6 drawn from "
          "calibrate's distribution, beside cuBLAS and the plan picked before rung 13 "
          "(medium's twin, k128x128, since dropped)", ("kmajor-ab-h100-2026-11-27.json",),
          "OUT=dir python bench/probes/kmajor_ab.py 6 5", ("docs/notes/ffma-fast.md",
                                                          "sgemm/kernels/cuda/13_kmajor.cu")),
    Claim("kmajor-sweep", "Calibration sweep with every menu cut to rung 13's tiles: 400 "
          "problems of calibrate's distribution, 2,919 timings; the sweep its shipped rates "
          "are fitted from", ("kmajor-sweep-h100-2026-11-27.json",),
          "OUT=dir python bench/probes/kmajor_sweep.py 400 8128 180; python -m sgemm.calibrate "
          "--sweep SWEEP --device h100", ("docs/notes/ffma-fast.md", "sgemm/data")),
    Claim("kmajor-tree-ab", "Rung 13 in the planner against the tree before (a51ef9e) on the "
          "33 of 300 problems of the judge's distribution (own seed 7171) where a kmajor tile "
          "is the model's pick or on the measured choice's shortlist; measured choice on, "
          "two alternating rounds", ("kmajor-tree-ab-h200-2026-11-27.json",),
          "PROBS=\"$(python bench/probes/kmajor_affected.py 300 7171)\" SGEMM_AUTOTUNE=1 "
          "OUT=dir python bench/probes/tree_ab.py .base . mixed 0 0 2 (.base: git archive "
          "a51ef9e, both trees' bundles built)", ("docs/notes/ffma-fast.md",)),
    _san_claim("sanitizer-kmajor", "compute-sanitizer on rung 13 (kmajor), every config and "
               "its K split on every edge case", "sanitizer-kmajor-h200-2026-11-27.json",
               "docs/notes/ffma-fast.md"),
    Claim("parked-store-ab", "Unaligned stores through shared memory against the scalar "
          "stores before, same plans (measured choice off): 28 store-heavy problems of the "
          "judge's distribution (own seed 7373) on an H100 (write-back rolled) and an H200 "
          "(rolled, unrolled, the committed form), and 48 random affected problems (own seed "
          "6161, H200)", ("parked-store-ab-h100-2026-11-27.json",
                          "parked-store-ab-h200-2026-11-27.json"),
          "PROBS=\"$(cat SET.json)\" OUT=dir python bench/probes/tree_ab.py .base . heavy 0 0 2 "
          "(.base: git archive 5065f5d; variants as .@SG_PARK=0 on the experiment's tree)",
          ("docs/notes/ffma-fast.md", "sgemm/kernels/cuda/common.cuh")),
    Claim("occupancy-curve-oos", "An occupancy curve (F at 1-4 blocks an SM and a slower "
          "first wave) against the cost model's knee, each fitted on half of the committed "
          "sweeps' problems and judged on the other half: mean absolute log error and the "
          "regret of the predicted-fastest candidate (CPU, no GPU)",
          ("occupancy-curve-cpu-2026-11-27.log",),
          "python bench/probes/occupancy_curve.py", ("docs/notes/dispatch.md",)),
    _san_claim("sanitizer-pack-inplace", "compute-sanitizer on `auto`'s edge cases and the "
               "global cases, the pack scheme's two new in-place cases (A and B aligned, m and "
               "n odd, C's pitch odd) among them", "sanitizer-pack-inplace-h100-2026-11-27.json",
               "docs/notes/dispatch.md"),
    _san_claim("sanitizer-db-ragged", "compute-sanitizer on rung 9's split-K with the shorter "
               "last slice in the full slices' launch, four configs, K off the slice unit",
               "sanitizer-db-ragged-h100-2026-11-27.json",
               "docs/notes/dispatch.md"),
    _judge_set("judge-ragged-model1", "Three fresh judges with the ragged split-K and its "
               "first model (the short slice's blocks counted at full depth): the scores, and "
               "2408x4928x4353 NT taken from rung 9 to the tile kernel by that model",
               "judge-ragged-model1-h100-2026-11-27", "abc", ("docs/notes/dispatch.md",)),
    Claim("cublas-kernels", "The kernels cuBLAS runs (ncu: name, grid, block, registers, "
          "shared memory, time) on 13 rows of the classes the judges find slow, beside "
          "sgemm's plan and time", ("cublas-kernels-h100-2026-11-27.json",),
          "OUT=dir python bench/probes/cublas_kernels.py", ("docs/notes/dispatch.md",
                                                              "sgemm/planner.py")),
    Claim("forced-configs", "Every rung-9 tile and a dense list of K splits forced on 10 of "
          "those rows, with the model's prediction for each (out of sample for the model)",
          ("forced-configs-h100-2026-11-27.json",),
          "OUT=dir python bench/probes/forced_configs.py", ("docs/notes/dispatch.md",)),
    Claim("occupancy-ab", "The cost model's occupancy from compiled registers against the "
          "tree before (8fcbdfa), on the problems whose pick it moves: 31 of 300 drawn from "
          "the judge's distribution (own seed; the first tree read the registers of every "
          "kernel), and the 27 moved rows of three judges on that first tree; the model's "
          "plans, alternating rounds", ("occupancy-ab-h100-2026-11-27-draw.json",
                                        "occupancy-ab-h100-2026-11-27-judge.json"),
          "PROBS=<moved problems> OUT=dir python bench/probes/tree_ab.py .base . mixed 0 0 "
          "{2,3} (.base: git archive 8fcbdfa sgemm pyproject.toml)",
          ("docs/notes/dispatch.md", "sgemm/cost.py")),
    Claim("judge-occupancy-full", "Three fresh judges with every kernel's occupancy from "
          "compiled registers (gemv and small_k included): the rows whose plans moved",
          tuple(f"judge-occupancy-full-h100-2026-11-27-{s}.json" for s in "abc"),
          "bash scripts/gpu_session.sh prebuild judge judge judge", ("docs/notes/dispatch.md",)),
    Claim("occupancy-refit-ab", "Compiled-register occupancy with the calibration refitted "
          "to it from the committed sweeps, against the tree before (8fcbdfa), on 76 moved "
          "problems: not adopted", ("occupancy-refit-ab-h100-2026-11-27.json",),
          "python -m sgemm.calibrate --sweep <the three committed sweeps> --device h100; "
          "PROBS=<moved> OUT=dir python bench/probes/tree_ab.py .base .wt-refit mixed 0 0 2",
          ("docs/notes/dispatch.md",)),
    Claim("dense-splits-ab", "A denser list of K splits (every count to 12, steps of a sixth "
          "above) against the list kept, on the 38 of 300 problems whose pick it moves: "
          "not adopted", ("dense-splits-ab-h100-2026-11-27.json",),
          "PROBS=<moved> OUT=dir python bench/probes/tree_ab.py .wt-table . mixed 0 0 2",
          ("docs/notes/dispatch.md", "sgemm/planner.py")),
    Claim("judge-watch", "The judge's steps with every row under 0.8 timed again at once: "
          "the judge's five batches, two more timings, the plan", (
              "judge-watch-h100-2026-11-27.json",),
          "OUT=dir python bench/probes/judge_watch.py 120 0.8", ("docs/notes/dispatch.md",)),
    Claim("idle-ramp", "Back-to-back 64^3 calls of sgemm.gemm and cupy.matmul after a busy "
          "GPU and an idle sleep, and after a first call: GPU and host time a call per batch",
          ("idle-ramp-h100-2026-11-27.json",), "OUT=dir python bench/probes/idle_ramp.py",
          ("docs/notes/dispatch.md",)),
    Claim("edge-unroll-ab", "Rung 9's guarded blocks with the FFMA loop fully unrolled (roomy "
          "configs, BK <= 16) against the tree before (d3850da), 28 deep-K problems of the "
          "judge's distribution (own seed), the model's plans, two alternating rounds",
          ("edge-unroll-ab-h100-2026-11-26.json",),
          "OUT=dir python bench/probes/tree_ab.py .base . deep-k 28 5151 2 (.base: git archive "
          "d3850da sgemm pyproject.toml, its bundle built)", ("docs/notes/dispatch.md",)),
    Claim("edge-unroll-probe", "Rung 9 forced on deep-K outputs narrower than its tile (every "
          "block guarded) and on whole tiles, aligned and not, the guarded loop unrolled by 2 "
          "and by 16", ("edge-unroll-probe-h100-2026-11-26.json",),
          "OUT=dir python bench/probes/unaligned_rate.py edges (twice: as is, and with "
          "SGEMM_DEFINES=SGEMM_DB_EDGE_UNROLL=16, a macro of that call's tree)",
          ("docs/notes/dispatch.md",)),
    Claim("unaligned-rate", "Rung 9's tiles with one operand's pitch made odd (A, B or C) "
          "and all three, against all pitches a multiple of 4, plan recipes forced",
          ("unaligned-rate-h100-2026-11-26.json",),
          "OUT=dir python bench/probes/unaligned_rate.py", ("docs/notes/dispatch.md",)),
    Claim("rect-minblocks-ab", "The 128x64 / 64x128 tiles at four blocks an SM (a 128-register "
          "cap) against three, 28 deep-K problems (refuted: not adopted)",
          ("rect-minblocks-ab-h100-2026-11-26.json",),
          "OUT=dir python bench/probes/tree_ab.py . .@SGEMM_DB_MINB128=4 deep-k 28 5152 2 "
          "(an experiment macro of that call's tree)", ("docs/notes/dispatch.md",)),
    Claim("first-call-planner-ab", "A fresh process's first call of five judge-like problems, "
          "with the planner's faster candidates (this tree) and before (d3850da), two "
          "alternating rounds, plain wall time", ("first-call-planner-ab-h100-2026-11-26.log",),
          "NOPROF_ONLY=1 python bench/probes/judge_first_call.py M,N,K,TA,TB,PREC ... per tree "
          "(PYTHONPATH, working directory outside both)", ("docs/notes/first-call.md",)),
    Claim("gemv-wider", "gemv forced on outputs whose small side is 17-64, at S = 8, 16 and "
          "1-16 K slices, beside the plan and cuBLAS (refuted: not adopted)",
          ("gemv-wider-h100-2026-11-26.json",),
          "SGEMM_AUTOTUNE=0 OUT=dir python bench/probes/gemv_wider.py 777",
          ("docs/notes/dispatch.md",)),
    Claim("calibration-bn64", "A calibration sweep on the H100 fitted (29 configs, 9534 "
          "timings): the rates of tf32x3_wgmma_rs's BN=64 configs, merged into the shipped "
          "calibration scaled by their BN=128 sibling's shipped / fitted rate",
          ("calibration-fit-h100-2026-11-26.json",),
          "sgemm tune --calibrate --seconds 140 --n 200 --out cost.json",
          ("sgemm/data/cost-nvidia-h100-80gb-hbm3-sm132-sm_90a.json", "docs/notes/dispatch.md")),
    Claim("torch-gpu-checks", "The torch helper's device run: the changed epilogue kernels under "
          "four sanitizer tools (196 boundary cases) and the torch and epilogue GPU tests",
          ("torch-gpu-h100-2026-11-26.log",), "OUT=$OUT BASE=.. T=110 bash "
          "scripts/torch_gpu_run.sh cases tests", ("docs/notes/torch.md",)),
    Claim("deepk-probe", "Deep-K plans timed launch by launch (GEMM, last slice, reduction) "
          "and the model's best candidates measured, before and after the split-K changes",
          ("deepk-probe-h100-2026-11-25-before.json", "deepk-probe-h100-2026-11-25-after.json"),
          "OUT=dir python bench/probes/deepk_plans.py 11", ("docs/notes/dispatch.md",)),
    Claim("torch-step", "PyTorch MLP training step (4 x 4096 layers, batch 4096), "
          "`sgemm.torch.convert(model, precision=\"tf32x3\")` against PyTorch FP32: speedup",
          TORCH_BENCH, "python -m sgemm.torch.bench", ("README.md", "docs/torch.md"),
          _torch_step(TORCH_BENCH)),
    Claim("torch-eager", "`sgemm.torch.mm` at 64³, FP32: host cost on an idle GPU ÷ "
          "`torch.matmul`'s (other sizes, precisions and `linear` in the same file)", (EAGER,),
          "python bench/probes/eager_costs.py --out FILE", ("README.md", "docs/torch.md"),
          _eager("sgemm.torch.mm(a, b)", "torch.matmul(a, b)")),
    Claim("torch-eager-op", "… the operator `torch.ops.sgemm.mm`, the same run", (EAGER,),
          "python bench/probes/eager_costs.py --out FILE", ("README.md", "docs/torch.md"),
          _eager("torch.ops.sgemm.mm(a, b)", "torch.matmul(a, b)")),
    Claim("torch-eager-grad", "… `sgemm.torch.mm` with requires_grad ÷ `torch.matmul` with "
          "it, the same run", (EAGER,), "python bench/probes/eager_costs.py --out FILE",
          ("README.md", "docs/torch.md"),
          _eager("sgemm.torch.mm(a, b), requires_grad", "torch.matmul(a, b), requires_grad")),
    Claim("torch-linear-host", "sgemm.torch.linear's host time at 8x4096x4096 (bias or not, "
          "tf32x3 and ieee) beside sgemm.torch.mm and F.linear, calls alone on an idle H200, with "
          "the plan cache's counts and cProfile",
          ("torch-linear-host-h200-2026-11-29.log",),
          "python bench/probes/torch_linear_host.py", ("docs/notes/torch.md",)),
    Claim("torch-eager-h100-idle", "The same eager costs on an H100 with the idle-GPU timing "
          "(2026-11-27), the README's figures until 2026-11-29", (EAGER_H100,),
          "python bench/probes/eager_costs.py --out FILE", ("docs/notes/torch.md",)),
    Claim("autograd-apply-cpu", "The operators' autograd entry as it is against a Function "
          "with the spec bound, CPU machine", ("autograd-apply-cpu-2026-11-27.log",),
          "python bench/probes/autograd_apply_cpu.py", ("docs/notes/torch.md",)),
    Claim("torch-node-eager-ab", "The eager costs with each operator's own autograd node "
          "against the tree before it (HEAD 30221ef), alternating runs on two H100 machines",
          ("torch-node-eager-ab-h100-2026-11-27.json",),
          "python bench/probes/eager_costs.py --out FILE (in each tree, alternating)",
          ("docs/notes/torch.md",)),
    Claim("torch-node-standin", "The same two trees on the CPU stand-in (made-up launches, "
          "Python only), two alternating runs each on one core",
          ("torch-node-standin-cpu-2026-11-27.log",),
          "python bench/probes/eager_costs.py --stand-in --precisions ieee (in each tree)",
          ("docs/notes/torch.md",)),
    Claim("torch-eager-h200", "The eager costs on an H200 with linear's bias through the "
          "written-out path, before the probe timed calls on an idle GPU as well",
          ("eager-costs-h200-2026-11-27.json",), "python bench/probes/eager_costs.py --out FILE",
          ("docs/notes/torch.md",)),
    Claim("torch-eager-h100", "The same eager costs on an H100 before linear's bias took the "
          "written-out path (e1d3aab), with the tree before it beside", (
              "eager-costs-h100-2026-11-26.json",), "bash scripts/host_overhead_probe.sh",
          ("docs/notes/torch.md",)),
    Claim("int8-raster-group", "The INT8 wgmma GEMM (8 planes) at 8192^3 and 16384^3 with "
          "each raster group width, the SM clock and power sampled beside it",
          ("int8-raster-group-h100-2026-11-27.json",),
          "OUT=dir python bench/probes/int8_raster_group.py 8192 16384 (nvidia-smi "
          "--query-gpu=clocks.sm,power.draw,temperature.gpu -lms 250 beside it)",
          ("docs/notes/int8x.md",)),
    Claim("int8-sanitizer", "compute-sanitizer memcheck, racecheck, synccheck and initcheck on "
          "the INT8 engine's kernels (both conversion routes, byte-plane GEMMs, Garner, the "
          "public int8x path) at tile-edge shapes", ("sanitizer-int8-h100-2026-11-26.log",),
          "bash scripts/int8_gpu_run.sh", ("docs/notes/int8x.md",)),
    Claim("int8-pipeline", "The INT8 engine on the final tree: INT8 GEMM TOPS, the pipeline's "
          "steps and TFLOPS, the public path and tf32x3, against cuBLAS FP32",
          ("int8-pipeline-h100-2026-11-26.json",),
          "PROBE_SIZES=\"8192 16384\" bash scripts/int8_gpu_run.sh (its probe step: "
          "bench/probes/int8_gemm.py)", ("docs/notes/int8x.md",)),
    Claim("int8-api-cost", "The INT8 engine through sgemm.gemm against its pipeline and the "
          "previous step sequence, batched and alone, and convert B by route and layout",
          (INT8X_API_H100,), "OUT=dir python bench/probes/int8_api_cost.py 8192 16384",
          ("docs/notes/int8x.md",)),
    Claim("fp32-tflops-16384", '`precision="fp32"` at 16384³ (the Ozaki-II INT8 engine, 7 '
          "moduli, where its scaling check passes) through `sgemm.gemm`, calls back to back: "
          "TFLOPS", (INT8X_MODULI,), _MODULI_CMD,
          ("README.md", "docs/notes/int8x.md"), _int8x_api(16384, "tflops")),
    Claim("fp32-speedup-16384", '`precision="fp32"` through `sgemm.gemm` at 16384³: '
          "× cuBLAS FP32", (INT8X_MODULI,), _MODULI_CMD,
          ("README.md", "docs/notes/int8x.md"), _int8x_api(16384, "ratio")),
    Claim("fp32-tflops-8192", '`precision="fp32"` through `sgemm.gemm` at 8192³, calls back '
          "to back: TFLOPS", (INT8X_MODULI,), _MODULI_CMD,
          ("README.md", "docs/notes/int8x.md"), _int8x_api(8192, "tflops")),
    Claim("int8x-tflops-16384", '`precision="int8x"` (the same engine with 8 moduli, its '
          "most accurate) at 16384³, calls back to back: TFLOPS",
          (INT8X_MODULI,), _MODULI_CMD, ("README.md", "docs/notes/int8x.md"),
          _int8x_api(16384, "tflops", "int8x")),
    Claim("int8-norm-scaling", "The integer engine with norm scaling and 7 or 8 moduli: "
          "compute-sanitizer's four tools on both moduli counts' kernels; precision='int8x' "
          "(8 moduli) at 8192^3 and 16384^3 on the tree before norm scaling and on this one, "
          "alternating, two processes each, one H200",
          ("sanitizer-int8-norm-h200-2026-11-29.log", "int8x-norm-ab-h200-2026-11-29.log"),
          "bash scripts/int8_gpu_run.sh (its sanitizer step); a script timing sgemm.gemm("
          "precision='int8x') batched (median of five batches), PYTHONPATH=old tree | this "
          "tree, twice", ("docs/notes/int8x.md",)),
    Claim("int8-wide-sanitizer", "compute-sanitizer on the INT8 engine's kernels with the "
          "scaling check (both routes' statistics, int8x_row_stats, precision='fp32' falling "
          "back on wide-range data) and the CRT reconstruction",
          ("sanitizer-int8-crt-h100-2026-11-26.log",),
          "PROBE_SIZES=\"8192 16384\" PROBE_S=200 bash scripts/int8_gpu_run.sh",
          ("docs/notes/int8x.md",)),
    Claim("int8-garner-crt", "The INT8 engine's reconstruction, Garner's digits against the "
          "64-bit CRT sum: pipeline steps and TFLOPS of both trees, alternating in one call",
          ("int8-garner-crt-h100-2026-11-26.json",),
          "OUT=dir PYTHONPATH=TREE python bench/probes/int8_gemm.py 8192 16384, for the "
          "starting tree and this one, twice", ("docs/notes/int8x.md",)),
    Claim("int8-check-cost", "The INT8 engine's scaling check: conversions and pipeline with "
          "and without it, one process (and the first version's probe beside the base "
          "commit's, at 8192^3)", ("int8-check-cost-h100-2026-11-26.json",
                                   "int8-gemm-probe-h100-2026-11-26-check-v1.json",
                                   "int8-gemm-probe-h100-2026-11-26-check-base.json"),
          "OUT=dir python bench/probes/int8_check_cost.py 8192 16384; the probes: OUT=dir "
          "python bench/probes/int8_gemm.py 8192 on each tree",
          ("docs/notes/int8x.md", "docs/accuracy.md")),
    Claim("calibration", "Every candidate plan timed beside cuBLAS on problems drawn like "
          "the judge's: the timings the shipped H100 cost calibration is fitted to (the 8x8 "
          "rectangles' rates from the second sweep, every other config's from the first)",
          ("calibration-sweep-h100-2026-11-25.json", "calibration-sweep-h100-2026-11-26.json"),
          "SWEEP_S=170 SWEEP_N=400 bash scripts/gpu_session.sh sweep",
          ("docs/dispatch.md", "sgemm/data/"),
          note="the step is sgemm tune --calibrate, which also fits the calibration; the second "
          "sweep: SWEEP_S=170 SWEEP_N=400, its fit's two rect rates merged into the first"),
    # The ladder and the tensor-core kernels.
    Claim("ladder", "The kernel ladder against cuBLAS, Triton and NumPy (README and "
          "per-rung tables)", (LADDER, "ladder-h200-2026-11-22-tflops.png"),
          "bash scripts/gpu_session.sh bench", ("README.md", "docs/kernels.md", "docs/bench.md"),
          note="tables redrawn by sgemm plot bench/results/ladder-h200-2026-11-22.json "
          "--readme README.md --out sgemm-results (the plots go there)"),
    Claim("ladder-rung9", "Ladder rung 9 (`double_buffer`, the fastest FFMA rung) at 8192³: "
          "% of cuBLAS", (LADDER,), "bash scripts/gpu_session.sh bench",
          ("README.md", "docs/kernels.md"), _ladder_pct(9, 8192)),
    Claim("ladder-seeds", "Every rung on the seeds' shapes and odd sizes",
          ("ladder-seeds-h200-2026-11-22.json",), "bash scripts/gpu_session.sh seeds",
          ("docs/ladder-seeds.md",), note="table redrawn by sgemm plot "
          "bench/results/ladder-seeds-h200-2026-11-22.json --readme docs/ladder-seeds.md "
          "--no-docs --out sgemm-results"),
    Claim("profile-2048", "Nsight Compute metrics of every rung at 2048³",
          ("profile-ladder-2048-h200-2026-11-22.log",), "bash scripts/gpu_session.sh profile",
          ("docs/kernels.md",)),
    Claim("profile-rung9-4096", "Nsight Compute metrics of rung 9's large tile at 4096³",
          ("profile-rung9-4096-h200-2026-11-22.log",),
          "PROFILE_RUNS=9:4096 bash scripts/gpu_session.sh profile", ("docs/kernels.md",)),
    Claim("tf32x3-speed", f"{_TC} at 8192³, 3-second back-to-back loop: × cuBLAS FP32",
          (TF32X3,), _TC_CMD, ("README.md", "docs/accuracy.md"), _tf32x3_sustained(8192)),
    Claim("tf32x3-accuracy", f"{_TC}: relative error ÷ cuBLAS FP32's at 1024×1024×4096",
          (TF32X3,), _TC_CMD, ("README.md", "docs/accuracy.md"), _tf32x3_error(4096)),
    # Several GPUs.
    Claim("summa-tflops", "SUMMA on 4 GPUs, N = 32768, our FP32 kernel, one process: TFLOPS",
          (DIST, "distributed-scaling-h200x4-2026-11-22.png"), _DIST_CMD,
          ("README.md", "docs/distributed.md"), _summa(4, 32768, "tflops", "{:.1f}")),
    Claim("summa-efficiency", "SUMMA on 4 GPUs, N = 32768: strong-scaling efficiency",
          (DIST,), _DIST_CMD, ("README.md", "docs/distributed.md"),
          _summa(4, 32768, "efficiency_1gpu", "{:.1f} %", 100)),
    Claim("summa-mpi", "SUMMA under MPI (one rank per GPU) with fewer NCCL channels",
          ("distributed-mpi-channels-h200x4-2026-11-22.json",),
          "MPI_SWEEP=\"default 8 4 2\" SIZES=32768 bash scripts/gpu_distributed.sh",
          ("docs/distributed.md",)),
    # Reliability.
    Claim("first-call-ab", "A fresh process's first sgemm.gemm at 4096³ (context excluded, "
          "bundle built), this tree against the session's starting tree, alternating",
          ("first-call-ab-h100-2026-11-26.json",),
          "SGEMM_ROOT=<tree> python3 bench/probes/first_call.py --array cupy --runs 5",
          ("docs/notes/first-call.md",)),
    Claim("gpu-tests-full", "The whole GPU suite, in two runs (rung 9's edges, gemm, "
          "unaligned stores, bundle, determinism, fuzz, schemes and large files; then every "
          "other file with tests/int8x): passed", GPU_TESTS_FULL,
          "python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/FILES",
          ("README.md", "docs/reliability.md"), _suites(GPU_TESTS_FULL),
          "after the prebuild; the first run on the tree before a measured batch held at "
          "least three runs (sgemm/measure.py, host code its files do not test), the second "
          "on the final tree"),
    Claim("gpu-tests-unaligned", "The whole GPU suite on the tree with the refitted "
          "unaligned-load factors, in two runs: passed", GPU_TESTS_UNALIGNED,
          "python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/FILES",
          ("docs/reliability.md",), note="after the prebuild"),
    Claim("gpu-tests-h200-parked", "The whole GPU suite on the tree that brought the unaligned "
          "stores through shared memory (H200, two runs split by file): passed", GPU_TESTS_H200,
          "python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/FILES",
          ("docs/reliability.md", "docs/notes/ffma-fast.md"),
          note="after the prebuild; the first run on 349afcf, the second on 414e5b5"),
    Claim("sanitizer-tall", "compute-sanitizer on rung 9's tiles along a small n (128x32, "
          "256x64), forced on every edge case", ("sanitizer-tall-tiles-h100-2026-11-25.json",),
          _SAN_CMD, ("docs/reliability.md", "docs/notes/dispatch.md"),
          note="SANITIZE_ARGS=\"--only double_buffer@tall,double_buffer@tall64\""),
    Claim("sanitizer-rect", "compute-sanitizer on rung 9's 8x8 rectangles (128x64, 64x128), "
          "forced on every edge case", ("sanitizer-rect-tiles-h100-2026-11-26.json",),
          _SAN_CMD, ("docs/reliability.md", "docs/notes/dispatch.md"),
          note="SANITIZE_ARGS=\"--only double_buffer@rect,double_buffer@rect_t\""),
    Claim("int8-gemm", "The INT8 GEMM of the Ozaki-II engine (wgmma s8 on sm_90a; mma.sync "
          "s8): TOPS, the "
          "pipeline's steps and TFLOPS against cuBLAS FP32, errors against fp64",
          ("int8-gemm-probe-h100-2026-11-26.json", "int8-gemm-probe-h100-2026-11-26-run1.json",
           "int8-gemm-probe-h100-2026-11-26-run2.json"),
          "OUT=dir python bench/probes/int8_gemm.py 4096 6144 8192 16384",
          ("docs/notes/int8x.md", "docs/accuracy.md")),
    Claim("epilogue", "Linear + bias + GELU fused against sgemm's linear then PyTorch's bias "
          "and GELU, and against PyTorch, both precisions", ("epilogue-h100-2026-11-26.json",),
          "OUT=$OUT BASE=<old tree> T=150 bash scripts/torch_gpu_run.sh epi",
          ("docs/notes/torch.md", "docs/torch.md")),
    Claim("epilogue-regs-sanitizer", "compute-sanitizer (memcheck, racecheck, synccheck, "
          "initcheck) on the wgmma kernels' in-register epilogue, forced on boundary cases "
          "(every activation, both bias axes, beta 0 on NaN-filled C)",
          ("sanitizer-epilogue-regs-h100-2026-11-26.log",),
          "TOOLS=\"memcheck racecheck synccheck initcheck\" CASES_K=tf32x3_wgmma,tf32_wgmma,"
          "tf32x3_wgmma_rs bash scripts/torch_gpu_run.sh cases", ("docs/notes/torch.md",)),
    Claim("sanitizer-latest", "compute-sanitizer, latest run (memcheck, racecheck, synccheck, "
          "initcheck; rung 9's pipelined loop: eight of its configs forced on every edge case "
          "and on outputs over 256 a side): errors",
          (SANITIZER_LATEST, SANITIZER_LATEST.replace(".json", ".log")),
          _SAN_CMD, ("README.md", "docs/reliability.md", "docs/notes/ffma-fast.md"),
          _sanitizer(SANITIZER_LATEST), _SAN_ONLY),
    _san_claim("sanitizer-parked", "compute-sanitizer on the unaligned stores through shared "
               "memory: tile, small, both split-K forms of 30_tile.cu, rung 9's configs and "
               "`auto`, on every edge case", "sanitizer-parked-h200-2026-11-27.json",
               "docs/notes/ffma-fast.md"),
    _san_claim("sanitizer-db-edge-unroll", "compute-sanitizer on rung 9's configs and the "
               "cluster kernel on every edge case (the guarded loop fully unrolled), and `auto`",
               "sanitizer-db-edge-unroll-h100-2026-11-26.json",
               "docs/notes/dispatch.md"),
    _san_claim("sanitizer-bn64", "compute-sanitizer on tf32x3_wgmma_rs's BN=64 configs, gemv's "
               "K split and `auto` for FP32 and tf32x3",
               "sanitizer-bn64-gemv-split-h100-2026-11-26.json",
               "docs/notes/dispatch.md"),
    Claim("sanitizer-splitk-reduce", "compute-sanitizer on the split-K reduction rewrite, "
          "gemv's blocks and `auto`", ("sanitizer-splitk-reduce-h100-2026-11-25.json",),
          _SAN_CMD, ("docs/reliability.md",), note=_SAN_ONLY),
    Claim("sanitizer-gemv", "compute-sanitizer on gemv's new blocks, gemv_wide (small sides "
          "2 and 8 added), split-K and `auto`, before the reduction rewrite",
          ("sanitizer-gemv-h100-2026-11-25.json",), _SAN_CMD, ("docs/reliability.md",),
          note=_SAN_ONLY),
    Claim("sanitizer-db-cluster", "compute-sanitizer on db_cluster and `auto`",
          ("sanitizer-db-cluster-h200-2026-11-22.json",), _SAN_CMD, ("docs/reliability.md",),
          note=_SAN_ONLY),
    Claim("sanitizer-all", "compute-sanitizer over every kernel registered on 2026-11-21, "
          "326 cases per tool", ("sanitizer-final-h200-2026-11-21.json",), _SAN_CMD,
          ("docs/reliability.md",)),
    Claim("sanitizer-schemes", "compute-sanitizer on gemv_wide, splitk_fused and the changed "
          "wgmma kernels", ("sanitizer-gemv-wide-splitk-fused-h200-2026-11-22.json",),
          _SAN_CMD, ("docs/reliability.md",), note=_SAN_ONLY),
    Claim("sanitizer-edges", "compute-sanitizer on double_buffer's shifted edge tiles, "
          "splitk_cluster and tf32x3_wgmma_rs (the race it found is fixed)",
          ("sanitizer-double-buffer-edges-h200-2026-11-22.json",), _SAN_CMD,
          ("docs/reliability.md",), note=_SAN_ONLY + " (and --quick)"),
    Claim("sanitizer-tf32x3-rs", "compute-sanitizer on tf32x3_wgmma_rs after its fixes",
          ("sanitizer-rs-aligned-h200-2026-11-22.json",), _SAN_CMD,
          ("docs/reliability.md",), note=_SAN_ONLY),
    Claim("sanitizer-splitk-cluster", "compute-sanitizer on splitk_cluster, db_cluster's k2 "
          "tile and `auto`", ("sanitizer-splitk-cluster-h200-2026-11-22.json",),
          _SAN_CMD, ("docs/reliability.md",), note=_SAN_ONLY),
    # gemv's 64-row strip for S = 8 along k (2026-11-29)
    Claim("dot-decode", "gemv's k-contiguous blocks at six strip/warp/chunk shapes and K "
          "splits 1-8, forced on ten products whose operands both lie along k beside a side "
          "of 5-16 (x @ W.T of 5-16 tokens; 3046x7x9009 NT), with the planner's four best "
          "candidates, its plan and cuBLAS, H200", ("dot-decode-h200-2026-11-29.json",),
          "OUT=dir python bench/probes/dot_decode.py",
          ("docs/notes/dispatch.md", "docs/dispatch.md", "sgemm/kernels/schemes.py",
           "sgemm/cost.py")),
    Claim("gemv-strip-sweep", "Every FFMA candidate timed on single products with a side of "
          "5-8 beside a big operand along k: 36 of 8 MiB or more (own seed 4242) and 24 of "
          "100 MiB or more (5353), H200; gemv:ka's rate fitted on both",
          ("gemv-strip-sweep-h200-2026-11-29.json", "gemv-strip-sweep-h200-2026-11-29-big.json"),
          "OUT=dir python bench/probes/gemv_strip_sweep.py 36 4242 120; the same with "
          "24 5353 120 100; then python -m sgemm.calibrate --sweep BOTH --device h200 --out "
          "FIT.json and bench/probes/merge_rates.py FIT.json gemv:ka",
          ("docs/notes/dispatch.md", "sgemm/cost.py", "sgemm/kernels/schemes.py")),
    Claim("gemv-strip-fit", "gemv:ka fitted with the per-wave cost held to 5 us and to 20 "
          "us (CPU)", ("gemv-strip-fit-cpu-2026-11-29.log",),
          "python bench/probes/gemv_strip_fit.py OUT.json 5; the same with 20",
          ("docs/notes/dispatch.md",)),
    _san_claim("sanitizer-gemv-strip", "compute-sanitizer on gemv's named blocks, the 64-row "
               "strip's among them (unsplit and in 3 slices), and gemv's own choice, with two "
               "cases on 16-byte rows", "sanitizer-gemv-strip-h200-2026-11-29.json",
               "docs/notes/dispatch.md"),
    Claim("gpu-tests-gemv-strip", "The GPU scheme tests that name gemv (the 64-row strip's "
          "forced test among them), H200: 106 passed",
          ("gpu-tests-h200-2026-11-29-gemv-strip.log",),
          "python3 -m pytest -q tests/gpu/test_schemes_gpu.py -k gemv -p no:cacheprovider",
          ("docs/notes/dispatch.md",),
          note="on the tree where the 64-row strip replaced the 32-row one (the planner "
               "weighed one gemv block); the tests force their blocks"),
    Claim("gemv-strip-ab", "A/B, 7171e98's tree against the 64-row strip in place of the "
          "32-row one, 20 products with a side of 5-8 beside a big operand along k: cuBLAS "
          "over sgemm, best of three rounds", ("gemv-strip-ab-h200-2026-11-29.json",),
          "PROBS=(python bench/probes/gemv_strip_sweep.py --list 18 7373, and 8x7680x2560 "
          "and 8x4096x1024 NT) OUT=dir python bench/probes/tree_ab.py .base . x 0 0 3",
          ("docs/notes/dispatch.md", "sgemm/kernels/schemes.py")),
    Claim("gemv-strip-moved", "Problems whose model pick differs between 7171e98's tree and "
          "this one (both strips weighed, gemv:ka's rate): 600 judge draws (own seed 9191), "
          "gemv-strip-ab's 20 and the public suite (CPU)", ("gemv-strip-moved-cpu-2026-11-29.log",),
          "python bench/probes/picks_moved.py .base . 600 9191; the same with "
          "bench/results/gemv-strip-ab-h200-2026-11-29.json, then bench/shapes/public.txt",
          ("docs/notes/dispatch.md",)),
    Claim("narrow-single-rates", "43_narrow.cu's measured over predicted time by orientation "
          "and alignment on the committed H200 sweeps, and rates of its own for single "
          "products fitted on one half of the single-product sweeps, judged on the other (CPU)",
          ("narrow-single-rates-cpu-2026-11-29.log",),
          "python bench/probes/narrow_single_rates.py --check; ... --holdout",
          ("docs/notes/dispatch.md",)),
    Claim("narrow-single-ab", "A/B, 7171e98's tree against narrow's single-product rates with "
          "gemv's two strips: the 66 of 600 judge draws (own seed 9191) whose pick they moved, "
          "cuBLAS over sgemm, best of two rounds", ("narrow-single-ab-h200-2026-11-29.json",),
          "PROBS=(the moved problems of python bench/probes/picks_moved.py .base . 600 9191 on "
          "that tree) OUT=dir python bench/probes/tree_ab.py .base . x 0 0 2",
          ("docs/notes/dispatch.md",)),
    Claim("reliability-fuzz", "GPU property-based fuzzing of every kernel",
          ("reliability-h200-2026-11-21-fuzz.log",),
          "SGEMM_FUZZ_EXAMPLES=40 pytest -m gpu tests/gpu/test_fuzz_gpu.py",
          ("docs/reliability.md",)),
    Claim("reliability-large", "Problems past 32-bit indexing, every kernel",
          ("reliability-h200-2026-11-21-large.json",), "pytest -m gpu tests/gpu/test_large.py",
          ("docs/reliability.md",)),
)

SANITIZER_RUNS = tuple(c for c in CLAIMS if c.key.startswith("sanitizer-"))


def by_key(key: str) -> Claim:
    return next(c for c in CLAIMS if c.key == key)


# -- rendering -------------------------------------------------------------------------------
def gpu_of(name: str) -> str:
    m = re.search(r"-(h100|h200)(?:x(\d+))?-", name)
    if not m:
        return "CPU" if "-cpu-" in name else "-"
    gpu = m.group(1).upper()
    return f"{m.group(2)} × {gpu}" if m.group(2) else gpu


def compress(names) -> str:
    """judge-x-a.json, judge-x-b.json -> judge-x-{a,b}.json"""
    names = list(names)
    if len(names) == 1:
        return names[0]
    pre = names[0]
    for n in names[1:]:
        while not n.startswith(pre):
            pre = pre[:-1]
    rest = [n[len(pre):] for n in names]
    suf = rest[0]
    for r in rest[1:]:
        while not r.endswith(suf):
            suf = suf[1:]
    mid = [r[:len(r) - len(suf)] for r in rest]
    return f"{pre}{{{','.join(mid)}}}{suf}"


def _data_files(c: Claim) -> list[str]:
    """The claim's files without its plots (they come from the data files)."""
    return [f for f in c.files if not f.endswith(".png")] or list(c.files)


def _evidence_cell(c: Claim) -> str:
    data = _data_files(c)
    if len(data) == 1:
        return f"[`{data[0]}`]({RESULTS.as_posix()}/{data[0]})"
    return f"[`{compress(data)}`]({INDEX.as_posix()}#{c.key})"


def readme_table(ev: Evidence) -> str:
    rows = ["| claim | value | GPU | evidence |", "|---|---|---|---|"]
    for c in CLAIMS:
        if c.in_readme:
            rows.append(f"| {c.text} | **{c.value(ev)}** | {gpu_of(_data_files(c)[0])} | "
                        f"{_evidence_cell(c)} |")
    n = ev.json(JUDGE[0])["summary"]["ieee"]["all"]["n"]
    rows.append("")
    rows.append("_Generated by `sgemm results` from the files named (index: "
                "[bench/results/README.md](bench/results/README.md)). Random-problem rows: "
                f"the median over {len(JUDGE)} seeds of {n} fresh problems each. Ratios are cuBLAS "
                "time ÷ sgemm time, measured in the same process on the same operands "
                "(cuBLAS FP32, TF32 off): above 1 means sgemm is faster._")
    return "\n".join(rows)


def accuracy_table(ev: Evidence) -> str:
    doc = ev.json(TF32X3)
    cols = [("cublas_fp32", "cuBLAS FP32"), ("cublas_tf32", "cuBLAS TF32"),
            ("sgemm_ieee_auto", "sgemm `ieee`"), ("tf32x3_wgmma_rs", "sgemm `tf32x3`")]
    out = []
    for metric, title in (("fro", "Relative Frobenius error ‖C − C₆₄‖_F / ‖C₆₄‖_F"),
                          ("max", "Largest elementwise error |C − C₆₄| / (|A|·|B|)")):
        out += [f"**{title}**", "", "| inputs | K | " + " | ".join(t for _, t in cols) + " |",
                "|---|---:|" + "---:|" * len(cols)]
        for r in doc["accuracy"]["table"]:
            out.append(f"| {r['dist']} | {r['K']} | "
                       + " | ".join(f"{r[k][metric]:.2e}" for k, _ in cols) + " |")
        out.append("")
    out.append(f"_M = N = {doc['accuracy']['M']}, {doc['env']['device']}, "
               f"{doc['env']['date'][:10]}; `{TF32X3}`, made by `{_TC_CMD}`. "
               "Regenerate the table with `sgemm results`._")
    return "\n".join(out)


def sanitizer_table(ev: Evidence) -> str:
    tools = ("memcheck", "racecheck", "synccheck", "initcheck")
    rows = ["| run | date | kernels run | cases per tool | " + " | ".join(tools) + " |",
            "|---|---|---|---:|" + "---:|" * len(tools)]
    for c in SANITIZER_RUNS:
        name = c.files[0]
        d = ev.json(name)
        drv = next((t["driver"] for t in d["tools"].values() if t.get("driver")), {}) or {}
        used = drv.get("kernels_used") or {}
        kernels = ", ".join(sorted(used)) if used and len(used) < len(d["kernels"]) \
            else f"all {len(d['kernels'])}"
        cells = [("-" if t not in d["tools"] else str(d["tools"][t]["errors"])) for t in tools]
        rows.append(f"| [`{name}`](../bench/results/{name}) | {d['date']} | {kernels} | "
                    f"{d['cases_per_run']} | " + " | ".join(cells) + " |")
    rows.append("")
    rows.append("_Errors per tool (`-`: tool not run). Generated by `sgemm results`._")
    return "\n".join(rows)


_ACC_COLS = (("cublas_fp32", "cuBLAS FP32"), ("cublas_tf32", "cuBLAS TF32"),
             ("ieee", "`ieee`"), ("tf32x3", "`tf32x3`"), ("int8x", "`int8x`"),
             ("int8x_7", "7 moduli, unchecked"), ("fp32", "`fp32`"),
             ("fp32_int8x", "`fp32` on the engine"))


def engines_accuracy_table(ev: Evidence) -> str:
    doc = ev.json(ACCURACY)
    cols = [(k, t) for k, t in _ACC_COLS if k in doc["engines"]]
    names = {"normal": "N(0,1)", "uniform": "U(0,1)"}
    out = []
    for metric, title in (("median_rel", "Median elementwise relative error |C − C₆₄| / |C₆₄|"),
                          ("max_comp", "Largest componentwise error |C − C₆₄| / (|A|·|B|)")):
        out += [f"**{title}**", "", "| inputs | K | " + " | ".join(t for _, t in cols) + " |",
                "|---|---:|" + "---:|" * len(cols)]
        for r in doc["rows"]:
            cls = names.get(r["class"], r["class"].replace("wide", "wide, s = "))
            cells = [f"{r[k][metric]:.1e}" if metric in r.get(k, {}) else "—" for k, _ in cols]
            out.append(f"| {cls} | {r['K']} | " + " | ".join(cells) + " |")
        out.append("")
    sizes = sorted({r["M"] for r in doc["rows"]}, reverse=True)
    out.append(f"_M = N = {' or '.join(map(str, sizes))} ({sizes[-1]} for the deepest K), "
               f"{doc['device']}, {doc['date']}; `{ACCURACY}`, made by `{_ACC_CMD}`. "
               "Regenerate the table with `sgemm results`._")
    return "\n".join(out)


def int8x_sizes_table(ev: Evidence) -> str:
    """The integer engine at square and deep sizes (INT8X_MODULI): error and
    speed of "fp32" (its moduli count), "int8x", tf32x3 and cuBLAS FP32."""
    doc = ev.json(INT8X_MODULI)
    names = (("fp32", '`"fp32"`'), ("int8x", '`"int8x"` (8 moduli)'), ("tf32x3", "`tf32x3`"),
             ("cublas", "cuBLAS FP32"))
    out = ["| m × n × k | `fp32`'s moduli | " + " | ".join(t for _, t in names) + " |",
           "|---|---:|" + "---|" * len(names)]
    for r in doc["records"]:
        cells = [f"{r['errors_median_max'][k][0]:.1e} / {r['errors_median_max'][k][1]:.1e} / "
                 f"{r[k]['tflops']:.1f}" for k, _ in names]
        out.append(f"| {r['m']} × {r['n']} × {r['k']} | {r['fp32_moduli']} | "
                   + " | ".join(cells) + " |")
    out += ["", "_Each cell: median relative error / largest componentwise error against "
            "an fp64 product / TFLOPS, calls back to back (the median of three rounds). "
            f"A and B column-major N(0,1), {doc['device']}, {doc['date']}; `{INT8X_MODULI}`, "
            f"made by `{_MODULI_CMD}`. Regenerate the table with `sgemm results`._"]
    return "\n".join(out)


def judge_categories_table(ev: Evidence) -> str:
    """The scorecard's judges by category (geometric mean per seed, both
    precisions), then the ten slowest FP32 problems over the seeds."""
    seeds = [ev.json(f) for f in JUDGE]
    cats = sorted(k for k, v in seeds[0]["summary"]["ieee"].items()
                  if isinstance(v, dict) and k != "all")
    out = ["| category | " + " | ".join(f"`ieee` seed {d['seed']}" for d in seeds) + " | "
           + " | ".join(f"`tf32x3` seed {d['seed']}" for d in seeds)
           + " | `ieee` under 0.9, all seeds |", "|---|" + "---:|" * (2 * len(seeds) + 1)]
    for c in cats + ["all"]:
        cells = [f"{d['summary'][p][c]['geomean']:.2f}" for p in ("ieee", "tf32x3") for d in seeds]
        mine = [r for d in seeds for r in d["rows"] if c in ("all", r["cat"])]
        under = sum(r["ieee"]["ratio"] < 0.9 for r in mine)
        out.append(f"| {c} | " + " | ".join(cells) + f" | {under} of {len(mine)} |")
    rows = sorted(((r["ieee"]["ratio"], r) for d in seeds for r in d["rows"]),
                  key=lambda t: t[0])[:10]
    out += ["", "| slowest `ieee` problems | as called | cuBLAS TFLOP/s | cuBLAS ÷ sgemm |",
            "|---|---|---:|---:|"]
    for ratio, r in rows:
        shape = (f"{r['batch']} × " if r["batch"] > 1 else "") + f"{r['m']}×{r['n']}×{r['k']}"
        out.append(f"| {r['cat']} | {shape} {'T' if r['ta'] else 'N'}{'T' if r['tb'] else 'N'} | "
                   f"{r['cublas_tflops']:.1f} | {ratio:.2f} |")
    out += ["", f"_Geometric means of cuBLAS time ÷ sgemm time per category, "
            f"{seeds[0]['device']}, files {', '.join(f'`{f}`' for f in JUDGE)}; layouts as "
            "the caller passes row-major operands (NT: `a @ b.T`). Regenerate with "
            "`sgemm results`._"]
    return "\n".join(out)


DOC_TABLES: dict[str, Callable[[Evidence], str]] = {
    "int8x-sizes": int8x_sizes_table,
    "claims": readme_table,
    "accuracy-tf32x3": accuracy_table,
    "accuracy-engines": engines_accuracy_table,
    "sanitizers": sanitizer_table,
    "judge-categories": judge_categories_table,
}

# Files rewritten by `sgemm results` (each holds some of the markers above).
TARGETS = ("README.md", "docs/accuracy.md", "docs/reliability.md", "docs/dispatch.md")


def index(ev: Evidence) -> str:
    listed: dict[str, list[str]] = {}
    for c in CLAIMS:
        for f in c.files:
            listed.setdefault(f, []).append(c.key)
    lines = [
        "# Results behind the README and the docs",
        "",
        "Generated by `sgemm results` from the claim list in `sgemm/bench/claims.py`; "
        "do not edit by hand. Each claim the README or the reference docs make, the "
        "file(s) here that hold its evidence, and the command that made them "
        "(run on a GPU machine; see CONTRIBUTING.md). Files that backed older claims "
        "were removed from the tree: `git log --diff-filter=D --name-only -- bench/results` "
        "lists them, `git show COMMIT^:bench/results/NAME` brings one back.",
        "",
        "| claim | value | files | command | made in |",
        "|---|---|---|---|---|",
    ]
    for c in CLAIMS:
        val = c.value(ev) if c.in_readme else ""
        files = "<br>".join(f"[`{f}`]({f})" for f in c.files)
        cmd = f"`{c.command}`" + (f"; {c.note}" if c.note else "")
        lines.append(f"| <a id=\"{c.key}\"></a>{c.text} | {val} | {files} | {cmd} | "
                     f"{', '.join(c.cited_in)} |")
    present = sorted(p.name for p in ev.dir.iterdir() if p.is_file() and p.name != "README.md") \
        if ev.dir.is_dir() else []
    stray = [f for f in present if f not in listed]
    lines += ["", "## Files", "", "| file | GPU | claims |", "|---|---|---|"]
    for f in sorted(listed):
        lines.append(f"| [`{f}`]({f}) | {gpu_of(f)} | "
                     + ", ".join(f"[{k}](#{k})" for k in listed[f]) + " |")
    if stray:
        lines += ["", "Not backing any claim (remove them, or add a claim in "
                  "`sgemm/bench/claims.py`):", ""] + [f"* `{f}`" for f in stray]
    return "\n".join(lines) + "\n"


def missing_files(root: str | Path = ".") -> list[str]:
    d = Path(root) / RESULTS
    return sorted({f for c in CLAIMS for f in c.files if not (d / f).exists()})


def stray_files(root: str | Path = ".") -> list[str]:
    d = Path(root) / RESULTS
    listed = {f for c in CLAIMS for f in c.files}
    return sorted(p.name for p in d.iterdir()
                  if p.is_file() and p.name != "README.md" and p.name not in listed)


def render(name: str, ev: Evidence) -> str | None:
    fn = DOC_TABLES.get(name)
    return fn(ev) if fn else None


def update(root: str | Path = ".", check: bool = False) -> list[str]:
    """Rewrite the generated tables and the index under ``root``.  Returns the
    paths that changed (or, with ``check``, that would change)."""
    from .readme import rewrite
    root = Path(root)
    ev = Evidence(root)
    changed = []
    for rel in TARGETS:
        p = root / rel
        if not p.exists():
            continue
        text = p.read_text()
        new, _, _ = rewrite(text, lambda n: render(n, ev))
        if new != text:
            changed.append(rel)
            if not check:
                p.write_text(new)
    p = root / INDEX
    new = index(ev)
    if not p.exists() or p.read_text() != new:
        changed.append(str(INDEX))
        if not check:
            p.write_text(new)
    return changed
