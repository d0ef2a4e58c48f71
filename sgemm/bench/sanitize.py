"""Run every registered kernel under compute-sanitizer (memcheck, racecheck,
synccheck, initcheck) on a boundary-heavy case set; write a log and a JSON
summary; print a table.

    python -m sgemm.bench.sanitize                            # all four tools, ./sgemm-results
    python -m sgemm.bench.sanitize --tools memcheck --quick   # one tool, fewer cases
    python -m sgemm.bench.sanitize --list                     # print the case set
    bash scripts/gpu_session.sh sanitize                      # the same, on a GPU machine
    SGEMM_SANITIZE_DIGESTS=FILE python -m sgemm.bench.sanitize --driver --only K,...
        # no sanitizer: each case's output digest into FILE, to compare two
        # builds (e.g. an SGEMM_DEFINES switch on and off) bit for bit

One process per tool: the script re-launches itself under the sanitizer in
``--driver`` mode, which runs the whole case set (every kernel of
``sgemm.KERNELS``, each precision, plus kernel="auto" for each precision,
which reaches the dispatch schemes: direct, small, split-K, gemv; and the
beta-only scale path) and checks each result against an fp64 reference.

Case set (per kernel): the extents 1, 2, 15, 17, 63, 65, 127, 129 arranged as
a Latin square over (M, N, K) -- every value occurs in every dimension --
crossed with all four transposes (each twice) and C-/F-order operands; plus
storage offsets that break 16-byte alignment (a[1:]-style views), padded
leading dimensions, a strided batch with a broadcast operand, and a deep-K
case where split-K takes several slices.  Operand buffers are exact-size
cudaMalloc allocations (CuPy's pool off), so one element past a view is
outside the allocation for memcheck; padding and, where beta == 0, C itself
are left uninitialized, so initcheck sees any read of memory the kernel must
not read.

Sanitizer errors are counted from "ERROR SUMMARY: N errors" (racecheck:
its "RACECHECK SUMMARY ... (E errors, W warnings)") and attributed to the case
that was running (the driver prints a CASE line before each).  A kernel fault
kills the CUDA context; the driver then exits and is restarted under the same
tool at the next case, so one faulting kernel does not hide the rest (the
JSON lists the restarts).  Results are also checked against fp64: wrong
answers are reported as mismatches even where the sanitizer is silent.  Kernels are compiled before the sanitized
runs (``--precompile``, in parallel; NVRTC needs no GPU) so that the sanitized
processes spend their time in kernels.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

# The checkout this module lives in (for the commit id recorded in the JSON).
_CHECKOUT = Path(__file__).resolve().parents[2]

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
EDGES = (1, 2, 15, 17, 63, 65, 127, 129)
AUTO = ("auto", "auto:tf32x3", "auto:tf32")
# Named configs whose code path the kernel's own choice does not reach
# (KERNEL@CONFIG: that config, at the cluster size db_cluster_split gives):
# four k-groups adding in parallel (k4), the 16x8 thread tiles, and k2 (two
# k-groups on the pipelined loop); gemv's blocks for small sides 2, 4 and 8
# (the edge extents reach only S = 1, 2 and 16), each run on every case's
# layout, so both the k- and the row-contiguous loops of each, and S = 8's
# 64-row strip for the aligned k-contiguous loop (n8ka, m8ka); rung 9's tiles
# along a small n and its 8x8 rectangles (the planner's, not the kernel's own choice);
# rung 9's configs on outputs over 256 a side as well (DB_BIG); 43_narrow's
# 64-wide blocks, narrow sides under the case's (several blocks across it) and
# 8-deep chunks (k8) and two or four k-groups (g2, g4); narrow's K split on
# single products (the GEMV-deep cases).
NAMED = ("db_cluster@k4", "db_cluster@k2", "db_cluster@wide", "db_cluster@tall",
         "db_cluster@big", "gemv@m2r", "gemv@n4k", "gemv@m4r", "gemv@n8k", "gemv@m8r",
         "gemv@n8ka", "gemv@m8ka", "gemv@n16k", "gemv@n8ka/s3",
         "double_buffer@tall", "double_buffer@tall64", "double_buffer@rect",
         "double_buffer@rect_t", "tf32x3_wgmma_rs@n64", "tf32x3_wgmma_rs@small_n64", "gemv@n1k/s3", "gemv@m2r/s2", "gemv@n4r/s4", "gemv@m1k/s2",
         "double_buffer@small/s3", "double_buffer@medium/s3", "double_buffer@large/s3",
         "double_buffer@rect/s5", "kmajor@k64x128", "kmajor@k64x64", "kmajor@k128x64/s3",
         "double_buffer@large", "double_buffer@wide", "double_buffer@small",
         "narrow@n8w64", "narrow@m32w64", "narrow@n16w128", "narrow@m8w128",
         "narrow@n32w128k8", "narrow@m16w64k8", "narrow@n32w128g4",
         "narrow@m16w64k8g2", "narrow@n16w128/s3", "narrow@m32w64k8g2/s4")
# Rung 9's and 13's K split (double_buffer@CONFIG/sS, kmajor@...): the shorter last slice is the
# last z entry of the full slices' launch (k_last); K of these is not a
# multiple of the slice unit, so that slice also ends inside a k-tile.
DB_SPLIT = [
    dict(tag="db-split", m=65, n=63, k=2049, ta=False, tb=False, orders="CCC", pad=0, off=1,
         alpha=1.0, beta=0.25),
    dict(tag="db-split-TT", m=129, n=17, k=1601, ta=True, tb=True, orders="FCF", pad=1, off=0,
         alpha=-1.0, beta=0.0),
    dict(tag="db-split-aligned", m=128, n=132, k=2052, ta=False, tb=False, orders="CCC",
         pad=0, off=0, alpha=1.0, beta=0.0),
]
# Rung 9's tiles with a 256 side (large, tall64, wide) and small, on
# outputs over 256 a side: their unguarded blocks (the pipelined loop on
# aligned operands, shifted tiles) are reached only there; K not a multiple
# of BK (a short last k-tile), and a K under one k-tile.
DB_BIG = [
    dict(tag="db-big", m=300, n=264, k=44, ta=False, tb=False, orders="CCC", pad=0, off=0,
         alpha=1.0, beta=0.5),
    dict(tag="db-big-TT", m=264, n=300, k=37, ta=True, tb=True, orders="FFF", pad=0, off=0,
         alpha=-1.0, beta=0.0),
    dict(tag="db-big-NT", m=516, n=260, k=7, ta=False, tb=True, orders="CFC", pad=4, off=0,
         alpha=1.0, beta=0.0),
    dict(tag="db-big-unaligned", m=301, n=258, k=41, ta=True, tb=False, orders="CCC", pad=0,
         off=1, alpha=1.0, beta=0.25),
]
# gemv's K split (KERNEL@CONFIG/sS: the two-launch split-K path, S slices of
# its 1024-deep Y chunks): deep enough for several slices and a remainder.
GEMV_DEEP = [
    dict(tag="gemv-deep-n", m=65, n=1, k=3100, ta=False, tb=False, orders="CCC", pad=0, off=1,
         alpha=1.0, beta=0.5),
    dict(tag="gemv-deep-nT", m=129, n=3, k=2500, ta=True, tb=True, orders="FCF", pad=1, off=0,
         alpha=-1.0, beta=0.0),
    dict(tag="gemv-deep-m", m=2, n=63, k=2049, ta=False, tb=True, orders="CFC", pad=0, off=2,
         alpha=1.0, beta=0.25),
    dict(tag="gemv-deep-mT", m=1, n=17, k=4097, ta=True, tb=False, orders="FFF", pad=1, off=1,
         alpha=2.0, beta=0.0),
]
# ... and on 16-byte rows (every leading dimension a multiple of 4): gemv's
# float4 loop, with a small side of 6 in an 8-wide block, a strip and a K
# (a float4 sweep of 128) that end part-way, small n and small m
GEMV_ALIGNED = [
    dict(tag="gemv-aligned-n", m=131, n=6, k=1035, ta=False, tb=True, orders="CCF", pad=1,
         off=0, alpha=1.0, beta=0.5),
    dict(tag="gemv-aligned-m", m=6, n=197, k=1030, ta=False, tb=True, orders="CCF", pad=2,
         off=0, alpha=-1.0, beta=0.0),
]


# -- the case set -------------------------------------------------------------------------
def base_cases() -> list[dict]:
    """Latin square over (M, N, K) on EDGES, all transposes, mixed orders."""
    out = []
    n_e = len(EDGES)
    for i in range(n_e):
        m, n, k = EDGES[i], EDGES[(i + 3) % n_e], EDGES[(i + 6) % n_e]
        ta, tb = bool(i & 1), bool(i & 2)
        orders = ("CCC", "FFF", "CFC", "FCF", "CCF", "FFC", "CFF", "FCC")[i]
        out.append(dict(tag=f"edge{i}", m=m, n=n, k=k, ta=ta, tb=tb, orders=orders, pad=0,
                        off=0, alpha=1.0 if i % 3 else -1.5, beta=0.0 if i % 2 == 0 else 0.5))
    return out


EXTRA = [
    dict(tag="unaligned", m=65, n=127, k=63, ta=False, tb=False, orders="CCC", pad=0, off=1,
         alpha=1.0, beta=1.0),
    dict(tag="unaligned-T", m=129, n=17, k=129, ta=True, tb=True, orders="FCF", pad=0, off=3,
         alpha=0.5, beta=0.0),
    dict(tag="padded", m=127, n=65, k=129, ta=False, tb=True, orders="CCC", pad=3, off=0,
         alpha=1.0, beta=-1.0),
    dict(tag="padded-F", m=17, n=129, k=65, ta=True, tb=False, orders="FFF", pad=5, off=2,
         alpha=2.0, beta=0.0),
    dict(tag="batched", m=17, n=65, k=33, ta=False, tb=True, orders="CCC", pad=0, off=0,
         alpha=1.0, beta=0.5, batch=3),
    dict(tag="batched-bcast", m=63, n=15, k=17, ta=True, tb=False, orders="CCC", pad=0, off=0,
         alpha=1.0, beta=0.0, batch=3, bcast="a"),
]
DEEP_K = dict(tag="deep-k", m=65, n=63, k=2049, ta=False, tb=False, orders="CCC", pad=0, off=1,
              alpha=1.0, beta=0.25)
GLOBAL = [
    dict(tag="alpha0-scale", m=129, n=65, k=17, ta=False, tb=False, orders="FFF", pad=1, off=1,
         alpha=0.0, beta=-2.0, kernel="auto"),
    dict(tag="k0-scale", m=65, n=17, k=0, ta=False, tb=False, orders="CCC", pad=0, off=0,
         alpha=1.0, beta=0.0, kernel="auto"),
    # the pack scheme (37_pack.cu + the ALIGNED kernel + the epilogue), forced
    # at sizes it would skip: unaligned bases, odd leading dimensions, all four
    # transposes between the two cases' operands, C read (beta) and not
    dict(tag="pack", m=129, n=127, k=65, ta=False, tb=False, orders="CCC", pad=1, off=1,
         alpha=1.0, beta=0.5, kernel="auto", env={"SGEMM_PACK": "always"}),
    dict(tag="pack-T", m=65, n=130, k=127, ta=True, tb=True, orders="FCF", pad=3, off=2,
         alpha=-1.5, beta=0.0, kernel="auto", env={"SGEMM_PACK": "always"}),
    # ... and with K of a few (output-bound products: the copies are small)
    dict(tag="pack-k3", m=128, n=68, k=3, ta=False, tb=False, orders="FFF", pad=0, off=1,
         alpha=1.0, beta=0.5, kernel="auto", env={"SGEMM_PACK": "always"}),
    dict(tag="pack-k5T", m=64, n=132, k=5, ta=True, tb=True, orders="CCF", pad=1, off=0,
         alpha=1.0, beta=0.0, kernel="auto", env={"SGEMM_PACK": "always"}),
    # ... and with A and B aligned in place though m and n are odd, only C's
    # pitch odd (a vocabulary head's y = x @ W^T): no copies, the GEMM into C'
    dict(tag="pack-inplace", m=129, n=127, k=64, ta=False, tb=True, orders="CCC", pad=0,
         off=0, alpha=1.0, beta=0.5, kernel="auto", env={"SGEMM_PACK": "always"}),
    dict(tag="pack-inplace-T", m=130, n=67, k=32, ta=True, tb=False, orders="FFC", pad=0,
         off=0, alpha=-1.0, beta=0.0, kernel="auto", env={"SGEMM_PACK": "always"}),
]


def kernel_names() -> list[str]:
    from sgemm.kernels.registry import KERNELS
    return list(KERNELS) + list(AUTO) + list(NAMED)


def _force_named(p, name):
    """Re-point plan p at the named config of KERNEL@CONFIG (db_cluster: with
    the cluster size its split rule gives these extents, at least 1)."""
    from sgemm.kernels import registry, schemes
    from sgemm.plan import direct_launches
    kernel, cfg = name.split("@")
    cfg, _, split = cfg.partition("/s")
    spec = registry.get(kernel)
    q = spec.configs[cfg].replace(split_k=int(split or 1))
    if kernel == "db_cluster":
        q = q.replace(split_k=max(1, schemes.db_cluster_split(p.problems[0], q,
                                                              p.device.sm_count)))
    why = spec.can_implement(q, p.device.smem_optin)
    if why:
        raise ValueError(f"{name}: {why}")
    if q.split_k > 1:
        from sgemm.tune import launches_for
        p.params, p.launches = q, launches_for(spec, q, p.problems, p.device)
        return
    p.params, p.launches = q, direct_launches(p.problems, spec, q, p.device)


def all_cases(quick: bool = False) -> list[dict]:
    cases = []
    for name in kernel_names():
        mine = base_cases() + EXTRA
        if name in ("splitk", "auto", "auto:tf32x3"):    # tf32x3's deep K: 3xTF32 split-K
            mine = mine + [DEEP_K]
        if "/s" in name:
            mine = DB_SPLIT if name.startswith(("double_buffer", "kmajor")) else GEMV_DEEP
        elif name in ("auto", "auto:tf32x3"):
            mine = mine + GEMV_DEEP + GEMV_ALIGNED
        elif name in ("double_buffer@large", "double_buffer@tall64", "double_buffer@wide",
                      "double_buffer@small", "double_buffer@rect", "double_buffer@rect_t"):
            mine = mine + DB_BIG
        if name.startswith("gemv"):
            mine = mine + GEMV_ALIGNED
        if quick:
            mine = mine[::3]
        for c in mine:
            cases.append(dict(c, kernel=name))
    return cases + [dict(c) for c in GLOBAL]


# -- driver (runs under the sanitizer) ----------------------------------------------------
def _driver(args) -> int:
    import numpy as np
    import cupy as cp
    import sgemm

    cp.cuda.set_allocator(None)           # exact-size cudaMalloc per array: memcheck sees
    cp.cuda.set_pinned_memory_allocator(None)  # one element past a view
    cases = all_cases(args.quick)
    if args.only:
        cases = [c for c in cases if c["kernel"] in args.only.split(",")]
    U = 2.0 ** -24
    delta = {"ieee": 0.0, "tf32x3": 2.0 ** -19, "tf32": 2.0 ** -10}
    summary = {"cases": 0, "launches": 0, "mismatches": [], "exceptions": [],
               "schemes": {}, "kernels_used": {}}
    # $SGEMM_SANITIZE_DIGESTS: a file that gets each case's output digest, so
    # that runs of two builds (e.g. an SGEMM_DEFINES switch) can be compared
    # bit for bit; the driver alone, without a sanitizer, writes it quickly.
    path = os.environ.get("SGEMM_SANITIZE_DIGESTS")
    digests = open(path, "a") if path else None

    def operand(rows, cols, order, pad, off, batch, rng, init=True):
        inner, outer = (cols, rows) if order == "C" else (rows, cols)
        ld = inner + pad
        per = (outer - 1) * ld + inner if rows and cols else 0
        bstride = per + (pad and 2)
        size = off + (batch - 1) * bstride + per if per else off + 1
        flat = cp.empty(max(size, 1), cp.float32)          # uninitialized
        st = (ld * 4, 4) if order == "C" else (4, ld * 4)
        v = cp.lib.stride_tricks.as_strided(flat[off:], (batch, rows, cols),
                                            (bstride * 4, *st))
        host = rng.standard_normal((batch, rows, cols)).astype(np.float32)
        if init and host.size:
            v[...] = cp.asarray(host)
        return v, host

    def context_alive() -> bool:
        try:
            cp.cuda.Device().synchronize()
            cp.empty(4, cp.float32).fill(0)
            cp.cuda.Device().synchronize()
            return True
        except Exception:
            return False

    t_start = time.time()
    for idx, c in enumerate(cases):
        if idx < args.start:
            continue
        name = c["kernel"]
        kernel, precision = (name.split(":") + [None])[:2] if name.startswith("auto") \
            else (name.split("@")[0], None)
        batch = c.get("batch", 1)
        m, n, k, ta, tb = c["m"], c["n"], c["k"], c["ta"], c["tb"]
        desc = (f"{m}x{n}x{k} {'T' if ta else 'N'}{'T' if tb else 'N'} {c['orders']} "
                f"pad={c['pad']} off={c['off']} batch={batch} alpha={c['alpha']} "
                f"beta={c['beta']}")
        print(f"CASE {idx} {name} {c['tag']} {desc}", flush=True)
        rng = np.random.default_rng(idx)
        saved = {v: os.environ.get(v) for v in c.get("env", {})}
        os.environ.update(c.get("env", {}))
        try:
            ab = 1 if c.get("bcast") == "a" else batch
            a, ha = operand(*((k, m) if ta else (m, k)), c["orders"][0], c["pad"], c["off"], ab,
                            rng)
            b, hb = operand(*((n, k) if tb else (k, n)), c["orders"][1], c["pad"], c["off"],
                            batch, rng)
            cc, hc = operand(m, n, c["orders"][2], c["pad"], c["off"], batch, rng,
                             init=c["beta"] != 0.0)
            kw = dict(alpha=c["alpha"], beta=c["beta"], trans_a=ta, trans_b=tb, kernel=kernel,
                      precision=precision)
            if batch == 1:
                p = sgemm.plan(a[0], b[0], cc[0], **kw)
            else:
                p = sgemm.plan(a, b, cc, _ndims=(3,), _what="gemm_batched", **kw)
            if "@" in name:
                _force_named(p, name)
            p.execute()
            cp.cuda.Device().synchronize()
            summary["cases"] += 1
            summary["launches"] += len(p.launches)
            spec_name = p.kernel.name if p.kernel is not None else "-"
            summary["schemes"].setdefault(name, [])
            if p.scheme not in summary["schemes"][name]:
                summary["schemes"][name].append(p.scheme)
            summary["kernels_used"].setdefault(name, [])
            if spec_name not in summary["kernels_used"][name]:
                summary["kernels_used"][name].append(spec_name)
            got = cp.asnumpy(cc).astype(np.float64)
            if digests:     # two builds compared bitwise (a kernel macro on and off)
                digests.write(f"{idx} {name} {hashlib.sha256(got.tobytes()).hexdigest()}\n")
                digests.flush()
            A = ha.astype(np.float64)
            B = hb.astype(np.float64)
            A = np.swapaxes(A, 1, 2) if ta else A
            B = np.swapaxes(B, 1, 2) if tb else B
            ref = c["alpha"] * (A @ B)
            mag = abs(c["alpha"]) * (np.abs(A) @ np.abs(B))
            if c["beta"] != 0.0:
                ref = ref + c["beta"] * hc
                mag = mag + abs(c["beta"]) * np.abs(hc)
            prec = p.kernel.precision if p.kernel is not None else "ieee"
            bound = 2 * ((delta[prec] + (k + 2) * U) * mag) + 1e-30
            bad = int((~(np.abs(got - ref) <= bound)).sum())
            if bad:
                summary["mismatches"].append(f"{idx} {name} {c['tag']}: {bad} elements")
                print(f"  MISMATCH {bad} elements (kernel {spec_name}, scheme {p.scheme})",
                      flush=True)
        except Exception as e:  # keep going: later cases still get sanitized
            msg = f"{type(e).__name__}: {str(e)[:300]}"
            summary["exceptions"].append(f"{idx} {name} {c['tag']}: {msg}")
            print(f"  EXCEPTION {msg}", flush=True)
        finally:
            for v, old in saved.items():
                if old is None:
                    os.environ.pop(v, None)
                else:
                    os.environ[v] = old
            if not context_alive():
                # A kernel fault kills the CUDA context: report and leave; the
                # orchestrator restarts the driver at the next case.
                summary["seconds"] = round(time.time() - t_start, 1)
                print(f"STICKY {idx}", flush=True)
                print("DRIVER_SUMMARY " + json.dumps(summary), flush=True)
                sys.stdout.flush()
                os._exit(3)
    summary["seconds"] = round(time.time() - t_start, 1)
    print("DRIVER_SUMMARY " + json.dumps(summary), flush=True)
    return 0


# -- precompile ---------------------------------------------------------------------------
def _compile_one(job):
    src, expr, arch = job
    from sgemm.runtime.compiler import compile_kernel
    t = time.time()
    try:
        compile_kernel(src, expr, arch)
        return expr, time.time() - t, ""
    except Exception as e:
        return expr, time.time() - t, f"{type(e).__name__}: {str(e)[:200]}"


def all_specs():
    from sgemm.kernels.registry import KERNELS
    from sgemm.kernels.spec import KernelSpec
    from sgemm.kernels import utility
    specs = list(KERNELS.values()) + list(utility.UTILITY)
    try:
        from sgemm.kernels import schemes
        specs += [v for v in vars(schemes).values() if isinstance(v, KernelSpec)]
    except ImportError:
        pass
    seen, out = set(), []
    for s in specs:
        if (s.source, s.function, s.name) not in seen:
            seen.add((s.source, s.function, s.name))
            out.append(s)
    return out


def precompile(arch: str, workers: int) -> dict:
    jobs = set()
    for s in all_specs():
        if arch not in s.archs and not (arch.startswith("sm_90") and "sm_90a" in s.archs):
            continue
        for _, p, ta, tb, al in s.instantiations():
            jobs.add((s.source, s.name_expression(p, ta, tb, al), arch))
    t0 = time.time()
    failures = []
    with ProcessPoolExecutor(max_workers=workers) as ex:
        for expr, dt, err in ex.map(_compile_one, sorted(jobs)):
            if err:
                failures.append(f"{expr}: {err}")
    return {"instantiations": len(jobs), "seconds": round(time.time() - t0, 1),
            "failures": failures}


# -- orchestration ------------------------------------------------------------------------
def find_sanitizer() -> str | None:
    exe = shutil.which("compute-sanitizer")
    if exe:
        return exe
    for base in ("/usr/local/cuda/bin", "/usr/local/cuda/compute-sanitizer",
                 "/opt/nvidia/compute-sanitizer"):
        p = Path(base) / "compute-sanitizer"
        if p.exists():
            return str(p)
    return None


RE_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
RE_RACE = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, "
                     r"(\d+) warnings?\)")
RE_CASE = re.compile(r"^CASE (\d+) (\S+) (\S+)")
RE_REPORT = re.compile(r"^========= (?! )(?!ERROR SUMMARY|RACECHECK SUMMARY|COMPUTE-SANITIZER|"
                       r"Target application|Program hit cudaErrorLaunchFailure|Saved host "
                       r"backtrace|Host Frame|Warning: Error buffer overflow|\d+ errors were "
                       r"skipped|\s)(\S.*)$")
RE_SKIPPED = re.compile(r"^========= (\d+) errors were skipped", re.M)


def parse(text: str) -> dict:
    """Counts from one tool's output, and reports attributed to kernels."""
    m = RE_SUMMARY.findall(text)
    errors = int(m[-1]) if m else None
    r = RE_RACE.findall(text)
    hazards = [int(x) for x in r[-1]] if r else None
    by_kernel: dict[str, int] = {}
    first_reports: list[str] = []
    current = "(before any case)"
    for line in text.splitlines():
        mc = RE_CASE.match(line)
        if mc:
            current = f"{mc.group(2)} {mc.group(3)}"
            continue
        mr = RE_REPORT.match(line)
        if mr and not line.startswith("=========     "):
            by_kernel[current] = by_kernel.get(current, 0) + 1
            if len(first_reports) < 20:
                first_reports.append(f"[{current}] {mr.group(1)[:200]}")
    drv = None
    for line in text.splitlines():
        if line.startswith("DRIVER_SUMMARY "):
            drv = json.loads(line[len("DRIVER_SUMMARY "):])
    sticky = [int(x) for x in re.findall(r"^STICKY (\d+)$", text, re.M)]
    skipped = sum(int(x) for x in RE_SKIPPED.findall(text))
    return {"errors": errors, "racecheck_hazards_errors_warnings": hazards,
            "reports_by_case": by_kernel, "first_reports": first_reports, "driver": drv,
            "sticky": sticky[-1] if sticky else None, "unprinted": skipped}


def merge(parts: list[dict]) -> dict:
    """One tool's result from its (restarted) runs."""
    out = {"errors": 0, "racecheck_hazards_errors_warnings": None, "reports_by_case": {},
           "first_reports": [], "driver": None, "restarted_after_cases": [],
           "unprinted_reports": 0}
    for r in parts:
        out["unprinted_reports"] += r.get("unprinted", 0)
        e = r["errors"]
        h = r["racecheck_hazards_errors_warnings"]
        if e is None and h is not None:
            e = h[1]                  # racecheck prints no ERROR SUMMARY line
        out["errors"] = None if (e is None or out["errors"] is None) else out["errors"] + e
        if h is not None:
            prev = out["racecheck_hazards_errors_warnings"] or [0, 0, 0]
            out["racecheck_hazards_errors_warnings"] = [a + b for a, b in zip(prev, h)]
        for k, v in r["reports_by_case"].items():
            out["reports_by_case"][k] = out["reports_by_case"].get(k, 0) + v
        out["first_reports"] += r["first_reports"][:40 - len(out["first_reports"])]
        d = r["driver"]
        if d:
            if out["driver"] is None:
                out["driver"] = {"cases": 0, "launches": 0, "mismatches": [], "exceptions": [],
                                 "schemes": {}, "kernels_used": {}, "seconds": 0.0}
            o = out["driver"]
            for key in ("cases", "launches", "seconds"):
                o[key] = round(o[key] + d.get(key, 0), 1)
            o["mismatches"] += d.get("mismatches", [])
            o["exceptions"] += d.get("exceptions", [])
            for key in ("schemes", "kernels_used"):
                for name, vals in d.get(key, {}).items():
                    cur = o[key].setdefault(name, [])
                    cur += [v for v in vals if v not in cur]
        if r["sticky"] is not None:
            out["restarted_after_cases"].append(r["sticky"])
    return out


def run_tool(tool: str, sanitizer: str, args, env) -> tuple[dict, str]:
    base = [sanitizer, "--tool", tool, "--print-limit", "2000", "--show-backtrace", "no",
            "--report-api-errors", "no"]
    if tool == "memcheck":
        base += ["--check-device-heap", "yes"]
    t0 = time.time()
    start, parts, logs, timed_out, rc = 0, [], [], False, None
    while True:
        cmd = base + [sys.executable, "-m", "sgemm.bench.sanitize", "--driver",
                      "--start", str(start)]
        if args.quick:
            cmd.append("--quick")
        if args.only:
            cmd += ["--only", args.only]
        left = args.timeout - (time.time() - t0)
        if left <= 5:
            timed_out = True
            break
        # Own process group: on timeout the sanitizer *and* the driver under it go.
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=env, start_new_session=True)
        try:
            out, _ = p.communicate(timeout=left)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            rc, timed_out = None, True
        logs.append(f"#### run from case {start} (exit {rc})\n" + out)
        part = parse(out)
        parts.append(part)
        if timed_out or part["sticky"] is None:
            break
        start = part["sticky"] + 1
    res = merge(parts)
    res.update(tool=tool, returncode=rc, timed_out=timed_out, runs=len(parts),
               seconds=round(time.time() - t0, 1), command=" ".join(base[1:]) + " python ...")
    drv = res["driver"] or {}
    res["completed"] = bool(parts) and parts[-1]["driver"] is not None and not timed_out \
        and parts[-1]["sticky"] is None
    res["clean"] = (res["completed"] and res["errors"] == 0 and not drv.get("mismatches")
                    and not drv.get("exceptions"))
    return res, "\n".join(logs)


def gpu_name() -> str:
    try:
        from sgemm.runtime import device
        return device.info(0).name
    except Exception as e:
        return f"unknown ({type(e).__name__})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    from .bench import default_out
    ap.add_argument("--out", default=str(default_out()),
                    help="results directory (default ./sgemm-results)")
    ap.add_argument("--name", default=None,
                    help="file base name (default sanitizer-<gpu>-<date>)")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--timeout", type=float, default=900, help="seconds per tool")
    ap.add_argument("--parallel", action="store_true", help="run the tools concurrently")
    ap.add_argument("--quick", action="store_true", help="a third of the cases")
    ap.add_argument("--only", default="", help="comma-separated kernel names")
    ap.add_argument("--no-precompile", action="store_true")
    ap.add_argument("--precompile-only", action="store_true")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.driver:
        return _driver(args)
    if args.list:
        for i, c in enumerate(all_cases(args.quick)):
            print(i, c)
        return 0

    from sgemm.runtime import device
    arch = device.info(0).arch if device.has_gpu() else "sm_90a"
    pre = None
    if not args.no_precompile:
        pre = precompile(arch, args.workers)
        print(f"precompiled {pre['instantiations']} instantiations for {arch} in "
              f"{pre['seconds']} s ({len(pre['failures'])} failures)", flush=True)
        for f in pre["failures"][:10]:
            print("  compile failure:", f)
    if args.precompile_only:
        return 1 if pre and pre["failures"] else 0

    sanitizer = find_sanitizer()
    if sanitizer is None:
        print("compute-sanitizer not found (PATH, /usr/local/cuda/bin)", file=sys.stderr)
        return 2
    gpu = gpu_name()
    date = _dt.date.today().isoformat()
    short = re.sub(r"[^a-z0-9]+", "", gpu.lower().replace("nvidia", "").split()[0]) \
        if gpu and not gpu.startswith("unknown") else "gpu"
    name = args.name or f"sanitizer-{short}-{date}"
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    tools = [t for t in args.tools.split(",") if t]
    results, logs = {}, {}
    if args.parallel:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(len(tools)) as ex:
            futs = {t: ex.submit(run_tool, t, sanitizer, args, env) for t in tools}
            for t in tools:
                results[t], logs[t] = futs[t].result()
    else:
        for t in tools:
            results[t], logs[t] = run_tool(t, sanitizer, args, env)
            print(f"{t}: errors={results[t]['errors']} {results[t]['seconds']} s", flush=True)

    try:
        ver = subprocess.run([sanitizer, "--version"], capture_output=True, text=True).stdout
        ver = ver.strip().splitlines()[-1] if ver.strip() else ""
    except Exception:
        ver = ""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=_CHECKOUT, capture_output=True,
                                text=True).stdout.strip()
    except Exception:
        commit = ""
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        commit = ""                   # not a git checkout (e.g. a copied tree)
    cases = all_cases(args.quick)
    if args.only:
        cases = [c for c in cases if c["kernel"] in args.only.split(",")]
    summary = {
        "gpu": gpu, "arch": arch, "date": date, "commit": commit, "sanitizer": ver,
        "kernels": kernel_names(), "edges": list(EDGES), "cases_per_run": len(cases),
        "precompile": pre, "tools": results,
        "all_clean": all(r["clean"] for r in results.values()),
    }
    (out_dir / f"{name}.json").write_text(json.dumps(summary, indent=1) + "\n")
    with open(out_dir / f"{name}.log", "w") as f:
        for t in tools:
            f.write(f"\n######## compute-sanitizer --tool {t} ########\n")
            f.write(logs[t])
    # Table.
    print(f"\n{gpu} ({arch}), {len(cases)} cases per tool, {len(kernel_names())} kernel "
          f"choices")
    print(f"{'tool':<10} {'errors':>7} {'cases':>6} {'launches':>8} {'mismatch':>8} "
          f"{'exc':>4} {'runs':>4} {'secs':>7}  status")
    for t in tools:
        r = results[t]
        d = r["driver"] or {}
        status = "clean" if r["clean"] else ("TIMEOUT" if r["timed_out"] else "FAIL")
        print(f"{t:<10} {str(r['errors']):>7} {d.get('cases', 0):>6} {d.get('launches', 0):>8} "
              f"{len(d.get('mismatches', [])):>8} {len(d.get('exceptions', [])):>4} "
              f"{r['runs']:>4} {r['seconds']:>7}  {status}")
        for rep in r["first_reports"][:5]:
            print("    ", rep)
    print(f"wrote {out_dir / (name + '.json')} and .log")
    return 0 if summary["all_clean"] else 1


if __name__ == "__main__":
    sys.exit(main())
