#!/usr/bin/env python3
"""Device check for the tensor-core kernels: correctness, accuracy, speed.

    python scripts/tc_check.py                 # everything; JSON to $OUT
    python scripts/tc_check.py --part correct:tf32x3_wgmma   # one part (internal)

Parts run in subprocesses with a timeout each, so a kernel that hangs costs
its own part and nothing else; later parts skip kernels that failed.

  compile   every instantiation of the tensor-core specs, in parallel (warms
            the NVRTC disk cache), plus `cuobjdump -sass` HGMMA/HMMA counts.
  correct:* every config x transpose x {aligned, unaligned} on odd shapes,
            NaN-poisoned C with beta = 0, random C with beta != 0, a batch of
            3, padding rows of C checked untouched; Inf/NaN/huge inputs
            compared with cuBLAS FP32 (same NaN/Inf pattern, finite values
            close).
  accuracy  relative Frobenius error and max |C - ref| / (|A||B|) against an
            FP64 reference, K in {64, 256, 1024, 4096, 16384}, M = N = 1024,
            standard-normal and wide-range (x 2^u, u in [-16, 16]) inputs, for
            ours (tf32x3, tf32), cuBLAS FP32, cuBLAS TF32 and sgemm's "ieee"
            auto kernel.
  timing    CUDA events, warm-up, median of repeats, square 1024..8192, NN
            (canonical column-major, what torch.mm hands cuBLAS) and TN for
            every wgmma kernel (all four transposes at 4096), NN for the mma
            ones; cuBLAS FP32 and TF32 (torch) in the same process.
  sustain   cuBLAS FP32 and each tf32x3 wgmma kernel's large config (NN)
            launched back to back for TC_SUSTAIN_S seconds (default 3) per
            size (TC_SUSTAIN_SIZES, default 4096,8192): the clock/power
            question of docs/notes/tensorcore.md.  With --smi, nvidia-smi logs clocks, power,
            temperature and throttle reasons every 100 ms into
            $OUT/smi.csv, and every timed window (timing and sustain) gets
            the median SM clock / power of the samples inside it.
EXPERIMENTS (unregistered variants) go through the correctness and timing
parts too.  Quick runs: TC_KERNELS=tf32x3_wgmma (only these kernels),
TC_SIZES=4096,8192 (timing sizes), --only compile,correct,timing.
The short table is printed last.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = Path(os.environ.get("OUT", "/tmp/tc-out"))
PARTS_DIR = Path("/tmp/tc-parts")      # per-part JSON; merged into $OUT/tc_check.json
TC_NAMES = ["tf32x3_wgmma", "tf32x3_wgmma_rs", "tf32_wgmma", "tf32x3_mma", "tf32_mma"]
KERNELS_ENV = "TC_KERNELS"     # comma list: restrict every part to these kernels
SIZES_ENV = "TC_SIZES"         # comma list of square sizes for the timing part
TOL = {"tf32x3": 3e-5, "tf32": 6e-3}   # max |err| / (|A||B| + |beta C|), K <= 1000


def log(*a):
    print(*a, flush=True)


# ---------------------------------------------------------------------------
# helpers (device side)
# ---------------------------------------------------------------------------
def _env():
    import torch
    from sgemm.runtime import device as sdev
    torch.cuda.init()
    dev = sdev.info(0)
    return torch, dev


def specs():
    from sgemm.kernels.registry import KERNELS
    want = [n for n in os.environ.get(KERNELS_ENV, "").split(",") if n] or TC_NAMES
    return {n: KERNELS[n] for n in TC_NAMES if n in KERNELS and n in want}


def operand(torch, rows, cols, ld, off, batch=1, stride=None, gen=None, fill=None):
    """Column-major rows x cols matrix (per batch entry) inside a flat buffer:
    element (i, j) of entry z at off + z*stride + i + j*ld.  Returns (buf,
    views, pointer, stride)."""
    stride = stride if stride is not None else ld * cols
    n = off + (batch - 1) * stride + ld * cols
    if fill is not None:
        buf = torch.full((n,), fill, dtype=torch.float32, device="cuda")
    else:
        buf = torch.randn(n, dtype=torch.float32, device="cuda", generator=gen)
    views = [torch.as_strided(buf, (rows, cols), (1, ld), off + z * stride) for z in range(batch)]
    return buf, views, buf.data_ptr() + 4 * off, stride


def launch(spec, p, prob, stream):
    from sgemm.runtime import device as sdev
    from sgemm.runtime import launcher
    launcher.run(spec, p, prob, sdev.info(0), stream)


# ---------------------------------------------------------------------------
# parts
# ---------------------------------------------------------------------------
def part_compile(_args):
    from concurrent.futures import ProcessPoolExecutor
    jobs = []
    for s in specs().values():
        for cname, p, ta, tb, al in s.instantiations():
            jobs.append((s.name, cname, s.source, s.name_expression(p, ta, tb, al)))
        for xname, xp in EXPERIMENTS:
            if xname == s.name and not s.can_implement(xp):
                for ta in (False, True):
                    for tb in (False, True):
                        for al in (False, True):
                            jobs.append((s.name, exp_key(xp), s.source,
                                         s.name_expression(xp, ta, tb, al)))
    t0 = time.time()
    res = {}
    with ProcessPoolExecutor(max_workers=min(16, os.cpu_count() or 4)) as ex:
        for (name, cname, src, expr), r in zip(jobs, ex.map(_compile_one, jobs)):
            res[f"{name}/{cname}/{expr}"] = r
    bad = {k: v for k, v in res.items() if v.get("error") or v.get("spill_stores") or v.get("stack")}
    log(f"compiled {len(jobs)} instantiations in {time.time() - t0:.1f}s; problems: {len(bad)}")
    for k, v in list(bad.items())[:5]:
        log("  ", k, str(v)[:300])
    # SASS census for one instantiation per spec
    sass = {}
    from sgemm.runtime.compiler import compile_kernel, dump_sass
    arch = "sm_90a"
    for s in specs().values():
        for cname, p in s.configs.items():
            c = compile_kernel(s.source, s.name_expression(p, True, False, True), arch)
            txt = dump_sass(c)
            key = f"{s.name}/{cname}"
            sass[key] = {k: txt.count(k) for k in ("HGMMA", "HMMA", "FFMA", "LDL", "STL")}
            sass[key]["registers"] = c.resources()["registers"]
    log("SASS:", json.dumps(sass))
    return {"instantiations": len(jobs), "problems": bad, "sass": sass, "arch": arch}


def _compile_one(job):
    name, cname, src, expr = job
    try:
        sys.path.insert(0, str(ROOT))
        from sgemm.runtime.compiler import compile_kernel
        c = compile_kernel(src, expr, "sm_90a")   # the device (H100/H200) arch
        return c.resources()
    except Exception as e:  # noqa: BLE001
        return {"error": str(e)[:2000]}


CASES = [
    # (M, N, K, lda_pad, ldb_pad, ldc_pad, ptr_off, alpha, beta, batch)
    (256, 512, 128, 0, 0, 0, 0, 1.0, 0.0, 1),      # aligned, full tiles
    (129, 257, 67, 0, 0, 0, 0, 1.5, 0.0, 1),       # odd everything -> unaligned
    (200, 300, 100, 4, 8, 12, 0, -0.5, 0.75, 1),   # aligned with pitch, beta != 0
    (77, 130, 45, 3, 1, 5, 1, 2.0, -1.25, 1),      # misaligned pointers and pitches
    (64, 64, 1, 0, 0, 0, 0, 1.0, 0.0, 1),          # K = 1
    (96, 200, 260, 4, 4, 4, 0, 1.0, 0.5, 3),       # batch of 3, aligned
    (1, 1, 300, 0, 0, 0, 0, 1.0, 0.0, 1),          # single element
    (300, 5, 33, 1, 0, 2, 1, 1.0, 0.0, 2),          # thin, batch, unaligned
]


def run_case(torch, spec, p, case, ta, tb, gen, stream):
    from sgemm.problem import Problem
    M, N, K, pa, pb, pc, off, alpha, beta, batch = case
    ar, ac = (K, M) if ta else (M, K)
    br, bc = (N, K) if tb else (K, N)
    lda, ldb, ldc = ar + pa, br + pb, M + pc
    sa = lda * ac + (4 if batch > 1 else 0)
    sb = ldb * bc + (4 if batch > 1 else 0)
    sc = ldc * N + (4 if batch > 1 else 0)
    _, Av, pA, _ = operand(torch, ar, ac, lda, off, batch, sa, gen)
    _, Bv, pB, _ = operand(torch, br, bc, ldb, off, batch, sb, gen)
    if beta == 0.0:
        Cbuf, Cv, pC, _ = operand(torch, M, N, ldc, off, batch, sc, fill=float("nan"))
    else:
        Cbuf, Cv, pC, _ = operand(torch, M, N, ldc, off, batch, sc, gen)
    C0 = [c.double().clone() for c in Cv]
    before = Cbuf.clone()
    prob = Problem(m=M, n=N, k=K, ta=ta, tb=tb, a=pA, lda=lda, b=pB, ldb=ldb, c=pC, ldc=ldc,
                   alpha=alpha, beta=beta, batch=batch, stride_a=sa, stride_b=sb, stride_c=sc)
    torch.cuda.synchronize()
    launch(spec, p, prob, stream)
    torch.cuda.synchronize()
    worst = 0.0
    for z in range(batch):
        opA = Av[z].double().t() if ta else Av[z].double()
        opB = Bv[z].double().t() if tb else Bv[z].double()
        ref = alpha * (opA @ opB)
        scale = abs(alpha) * (opA.abs() @ opB.abs())
        if beta != 0.0:
            ref = ref + beta * C0[z]
            scale = scale + abs(beta) * C0[z].abs()
        got = Cv[z].double()
        if not torch.isfinite(got).all():
            return float("inf"), "non-finite output"
        err = ((got - ref).abs() / scale.clamp_min(1e-30)).max().item()
        worst = max(worst, err)
    # everything outside the m x n blocks must be untouched
    mask = torch.ones_like(Cbuf, dtype=torch.bool)
    for z in range(batch):
        base = off + z * sc
        idx = (torch.arange(M, device="cuda")[:, None] + ldc * torch.arange(N, device="cuda")[None, :]
               + base).reshape(-1)
        mask[idx] = False
    same = (Cbuf[mask] == before[mask]) | (torch.isnan(Cbuf[mask]) & torch.isnan(before[mask]))
    if not same.all():
        return worst, "wrote outside C"
    return worst, ""


def special_case(torch, spec, p, ta, tb, gen, stream):
    """Inf, NaN and huge inputs: same NaN/Inf pattern as cuBLAS FP32."""
    from sgemm.problem import Problem
    M, N, K = 150, 270, 90
    ar, ac = (K, M) if ta else (M, K)
    br, bc = (N, K) if tb else (K, N)
    _, Av, pA, _ = operand(torch, ar, ac, ar, 0, 1, None, gen)
    _, Bv, pB, _ = operand(torch, br, bc, br, 0, 1, None, gen)
    opA = Av[0].t() if ta else Av[0]
    opB = Bv[0].t() if tb else Bv[0]
    with torch.no_grad():
        opA[3, 5] = float("inf")
        opA[140, 7] = -float("inf")
        opA[20, 80] = float("nan")
        opB[9, 200] = float("inf")
        opB[11, 200] = float("inf")      # inf + inf in one column: stays inf
        opA[60, 1] = 3.4028e38           # rounds to Inf in TF32; x0.5 stays finite,
        opB[1, :] = 0.5                  # x2 overflows
        opB[1, :40] = 2.0
        opA[61, :] = 0.0
        opB[:, 100] = 0.0
        opA[61, 5] = float("inf")        # inf * 0 column -> NaN in (61,100)
    Cbuf, Cv, pC, _ = operand(torch, M, N, M, 0, 1, None, fill=float("nan"))
    prob = Problem(m=M, n=N, k=K, ta=ta, tb=tb, a=pA, lda=ar, b=pB, ldb=br, c=pC, ldc=M)
    torch.cuda.synchronize()
    launch(spec, p, prob, stream)
    torch.cuda.synchronize()
    torch.backends.cuda.matmul.allow_tf32 = False
    ref = (opA @ opB).float()
    got = Cv[0]
    same_nan = torch.equal(torch.isnan(got), torch.isnan(ref))
    same_inf = torch.equal(torch.isinf(got), torch.isinf(ref)) and torch.equal(
        torch.sign(got[torch.isinf(got)]), torch.sign(ref[torch.isinf(ref)])) if same_nan else False
    fin = torch.isfinite(ref) & torch.isfinite(got)
    close = ((got[fin] - ref[fin]).abs() <= 1e-3 * (ref[fin].abs() + 1)).all().item()
    return bool(same_nan and same_inf and close), {
        "nan_ours": int(torch.isnan(got).sum()), "nan_ref": int(torch.isnan(ref).sum()),
        "inf_ours": int(torch.isinf(got).sum()), "inf_ref": int(torch.isinf(ref).sum())}


def part_correct(args):
    torch, dev = _env()
    name = args.part.split(":", 1)[1]
    spec = specs()[name]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    stream = torch.cuda.current_stream()
    tol = TOL[spec.precision]
    rows, fails = [], 0
    configs = dict(spec.configs)
    for xname, xp in EXPERIMENTS:      # unregistered variants must be right too
        if xname == name and not spec.can_implement(xp):
            configs[exp_key(xp)] = xp
    for cname, p in configs.items():
        for ta in (False, True):
            for tb in (False, True):
                for case in CASES:
                    try:
                        err, why = run_case(torch, spec, p, case, ta, tb, gen, stream)
                    except Exception as e:  # noqa: BLE001
                        err, why = float("inf"), f"{type(e).__name__}: {str(e)[:300]}"
                    ok = (not why) and err <= tol
                    fails += not ok
                    rows.append({"config": cname, "ta": ta, "tb": tb, "case": case,
                                 "err": err, "why": why, "ok": ok})
                    if not ok:
                        log(f"  FAIL {name} {cname} ta={ta} tb={tb} {case}: err={err:.3g} {why}")
                if spec.precision == "tf32x3":
                    try:
                        ok, info = special_case(torch, spec, p, ta, tb, gen, stream)
                    except Exception as e:  # noqa: BLE001
                        ok, info = False, f"{type(e).__name__}: {str(e)[:300]}"
                    fails += not ok
                    rows.append({"config": cname, "ta": ta, "tb": tb, "case": "inf/nan/huge",
                                 "ok": ok, "info": info})
                    if not ok:
                        log(f"  FAIL {name} {cname} ta={ta} tb={tb} special: {info}")
    worst = max((r.get("err", 0) for r in rows if r.get("err") is not None), default=0)
    log(f"correct {name}: {len(rows) - fails}/{len(rows)} passed, worst err {worst:.3g} (tol {tol})")
    return {"kernel": name, "passed": len(rows) - fails, "total": len(rows), "worst": worst,
            "rows": rows}


def _wide(torch, shape, gen):
    x = torch.randn(shape, dtype=torch.float32, device="cuda", generator=gen)
    u = torch.randint(-16, 17, shape, device="cuda", generator=gen).float()
    return x * torch.exp2(u)


def part_accuracy(args):
    torch, dev = _env()
    from sgemm.problem import Problem
    ok_specs = [s for n, s in specs().items() if n not in args.skip]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(7)
    stream = torch.cuda.current_stream()
    M = N = 1024
    table = []
    for dist in ("normal", "wide"):
        for K in (64, 256, 1024, 4096, 16384):
            # canonical column-major NN: A m x k (lda = M), B k x n (ldb = K)
            if dist == "normal":
                A = torch.randn(K, M, device="cuda", generator=gen)   # A^T row-major = A col-major
                B = torch.randn(N, K, device="cuda", generator=gen)
            else:
                A = _wide(torch, (K, M), gen)
                B = _wide(torch, (N, K), gen)
            opA, opB = A.t(), B.t()                                   # logical m x k, k x n
            ref = opA.double() @ opB.double()
            scale = opA.double().abs() @ opB.double().abs()
            refn = ref.norm().item()

            def metrics(C):
                d = C.double() - ref
                return {"fro": (d.norm().item() / refn),
                        "max": (d.abs() / scale.clamp_min(1e-300)).max().item()}

            row = {"dist": dist, "K": K}
            for allow, key in ((False, "cublas_fp32"), (True, "cublas_tf32")):
                torch.backends.cuda.matmul.allow_tf32 = allow
                row[key] = metrics(opA @ opB)
            torch.backends.cuda.matmul.allow_tf32 = False
            try:
                import sgemm
                row["sgemm_ieee_auto"] = metrics(sgemm.gemm(opA, opB))
            except Exception as e:  # noqa: BLE001
                row["sgemm_ieee_auto"] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
            for s in ok_specs:
                C = torch.empty(N, M, device="cuda").t()              # column-major m x n
                prob = Problem(m=M, n=N, k=K, ta=False, tb=False, a=A.data_ptr(), lda=M,
                               b=B.data_ptr(), ldb=K, c=C.data_ptr(), ldc=M)
                launch(s, s.choose(prob, dev.sm_count), prob, stream)
                torch.cuda.synchronize()
                row[s.name] = metrics(C)
                if s.precision == "tf32x3":
                    C.fill_(float("nan"))
                    launch(s, s.configs["large"], prob, stream)
                    torch.cuda.synchronize()
                    row[s.name + "/large"] = metrics(C)
            table.append(row)
            log(f"accuracy {dist:6s} K={K:5d} " + " ".join(
                f"{k}={v['fro']:.2e}/{v['max']:.2e}" for k, v in row.items()
                if isinstance(v, dict) and "fro" in v))
    return {"M": M, "N": N, "table": table}


def _time(torch, fn, reps, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(reps)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    ts = sorted(a.elapsed_time(b) for a, b in ev)
    return ts[len(ts) // 2], ts[0], ts[-1]


def _timed(torch, fn, reps):
    """_time plus the wall-clock window it ran in (for the nvidia-smi log)."""
    t0 = time.time()
    med, lo, hi = _time(torch, fn, reps)
    return {"ms": med, "min": lo, "max": hi, "t0": t0, "t1": time.time()}


def part_timing(args):
    torch, dev = _env()
    from sgemm.problem import Problem
    ok_specs = [s for n, s in specs().items() if n not in args.skip]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(11)
    stream = torch.cuda.current_stream()
    rows = []
    sizes = [int(x) for x in os.environ.get(SIZES_ENV, "1024,2048,4096,8192").split(",") if x]
    for n in sizes:
        reps = 30 if n <= 2048 else (15 if n == 4096 else 7)
        flops = 2.0 * n ** 3
        A = torch.randn(n, n, device="cuda", generator=gen)
        B = torch.randn(n, n, device="cuda", generator=gen)
        C = torch.empty(n, n, device="cuda")
        row = {"n": n}
        for allow, key in ((False, "cublas_fp32"), (True, "cublas_tf32")):
            torch.backends.cuda.matmul.allow_tf32 = allow
            r = _timed(torch, lambda: torch.mm(A, B, out=C), reps)
            row[key] = dict(r, tflops=flops / r["ms"] / 1e9)
        torch.backends.cuda.matmul.allow_tf32 = False
        layouts = [(False, False), (True, False)]       # NN (torch.mm) and TN
        if n == 4096:
            layouts = [(False, False), (True, False), (False, True), (True, True)]
        for s in ok_specs:
            for ta, tb in layouts:
                if (ta, tb) != (False, False) and "wgmma" not in s.name:
                    continue
                prob = Problem(m=n, n=n, k=n, ta=ta, tb=tb, a=A.data_ptr(), lda=n,
                               b=B.data_ptr(), ldb=n, c=C.data_ptr(), ldc=n)
                for cname, p in s.configs.items():
                    try:
                        r = _timed(torch, lambda: launch(s, p, prob, stream), reps)
                    except Exception as e:  # noqa: BLE001
                        row[f"{s.name}/{cname}/{'NT'[ta]}{'NT'[tb]}"] = {"error": str(e)[:200]}
                        continue
                    row[f"{s.name}/{cname}/{'NT'[ta]}{'NT'[tb]}"] = dict(
                        r, tflops=flops / r["ms"] / 1e9)
        if True:
            # tile/stage variants that are not registered configs (learning only)
            for name, p in EXPERIMENTS:
                s = specs().get(name)
                if s is None or name in args.skip or s.can_implement(p):
                    continue
                for ta, tb in ((False, False), (True, False)):
                    prob = Problem(m=n, n=n, k=n, ta=ta, tb=tb, a=A.data_ptr(), lda=n,
                                   b=B.data_ptr(), ldb=n, c=C.data_ptr(), ldc=n)
                    key = f"{name}/{exp_key(p)}/{'NT'[ta]}{'NT'[tb]}"
                    try:
                        r = _timed(torch, lambda: launch(s, p, prob, stream), reps)
                        row[key] = dict(r, tflops=flops / r["ms"] / 1e9)
                    except Exception as e:  # noqa: BLE001
                        row[key] = {"error": str(e)[:200]}
        rows.append(row)
        log(f"timing n={n}: " + " ".join(f"{k}={v['tflops']:.1f}" for k, v in row.items()
                                         if isinstance(v, dict) and "tflops" in v))
        del A, B, C
        torch.cuda.empty_cache()
    return {"rows": rows}


SUSTAIN_ENV = "TC_SUSTAIN_S"    # seconds of back-to-back launches per kernel and size


def part_sustain(args):
    """Back-to-back launches for a few seconds each (cuBLAS FP32, every tf32x3
    wgmma spec's large config and its EXPERIMENTS, cuBLAS FP32 again; NN), in
    batches of 5 timed with events: per-batch TFLOPS and the wall-clock
    window, to line up with nvidia-smi."""
    torch, dev = _env()
    from sgemm.problem import Problem
    secs = float(os.environ.get(SUSTAIN_ENV, "3"))
    sizes = [int(x) for x in os.environ.get("TC_SUSTAIN_SIZES", "4096,8192").split(",") if x]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(13)
    stream = torch.cuda.current_stream()
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for n in sizes:
        flops = 2.0 * n ** 3
        A = torch.randn(n, n, device="cuda", generator=gen)
        B = torch.randn(n, n, device="cuda", generator=gen)
        C = torch.empty(n, n, device="cuda")
        prob = Problem(m=n, n=n, k=n, ta=False, tb=False, a=A.data_ptr(), lda=n,
                       b=B.data_ptr(), ldb=n, c=C.data_ptr(), ldc=n)
        cublas = lambda: torch.mm(A, B, out=C)  # noqa: E731
        fns = [("cublas_fp32", cublas)]
        for name, s in specs().items():
            if s.precision == "tf32x3" and "wgmma" in name and name not in args.skip:
                p = s.configs["large"]
                fns.append((f"{name}/large/NN", lambda s=s, p=p: launch(s, p, prob, stream)))
                for xname, xp in EXPERIMENTS:
                    if xname == name and not s.can_implement(xp):
                        fns.append((f"{name}/{exp_key(xp)}/NN",
                                    lambda s=s, p=xp: launch(s, p, prob, stream)))
        fns.append(("cublas_fp32_after", cublas))     # drift over the sequence
        row = {"n": n}
        for key, fn in fns:
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            t0 = time.time()
            batches = []
            while time.time() - t0 < secs:
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                for _ in range(5):
                    fn()
                b.record()
                b.synchronize()
                batches.append(a.elapsed_time(b) / 5)
            t1 = time.time()
            ms = sorted(batches)[len(batches) // 2]
            row[key] = {"ms": ms, "tflops": flops / ms / 1e9, "t0": t0, "t1": t1,
                        "first_tflops": flops / batches[0] / 1e9,
                        "last_tflops": flops / batches[-1] / 1e9, "batches": len(batches)}
            log(f"sustain n={n} {key}: {row[key]['tflops']:.1f} TFLOPS median over "
                f"{len(batches)} batches (first {row[key]['first_tflops']:.1f}, last "
                f"{row[key]['last_tflops']:.1f})")
        rows.append(row)
        del A, B, C
        torch.cuda.empty_cache()
    return {"rows": rows, "seconds_each": secs}


# ---- nvidia-smi log ----------------------------------------------------------------
SMI_FIELDS = ["timestamp", "clocks.sm", "clocks.mem", "power.draw", "temperature.gpu"]
SMI_REASONS = ["clocks_throttle_reasons.active", "clocks_event_reasons.active"]


def smi_start(path):
    """nvidia-smi every 100 ms into `path` (CSV); the reasons field has two
    names across driver versions, so take the first one this one accepts."""
    for reason in SMI_REASONS + [None]:
        q = ",".join(SMI_FIELDS + ([reason] if reason else []))
        # one sample, read-only (no other option: -c would be --compute-mode)
        ok = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv"],
                            capture_output=True, text=True)
        if ok.returncode == 0:
            f = open(path, "w")
            return subprocess.Popen(["nvidia-smi", f"--query-gpu={q}", "--format=csv,nounits",
                                     "-lms", "100"], stdout=f, stderr=subprocess.DEVNULL)
    return None


def smi_samples(path):
    """[(unix time, sm MHz, mem MHz, watts, deg C, reasons)] from smi_start's CSV."""
    import datetime
    out = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return out
    for ln in lines[1:]:
        parts = [x.strip() for x in ln.split(",")]
        try:
            ts = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            out.append((ts, float(parts[1]), float(parts[2]), float(parts[3]), float(parts[4]),
                        parts[5] if len(parts) > 5 else ""))
        except (ValueError, IndexError):
            continue
    return out


def smi_window(samples, t0, t1):
    """Median SM clock, power, temperature and the throttle-reason masks seen
    in [t0, t1]; None without samples (a window shorter than the 100 ms
    sampling often has none)."""
    inside = [x for x in samples if t0 <= x[0] <= t1]
    if not inside:
        return None
    med = lambda i: sorted(x[i] for x in inside)[len(inside) // 2]  # noqa: E731
    return {"samples": len(inside), "sm_mhz": med(1), "sm_mhz_min": min(x[1] for x in inside),
            "mem_mhz": med(2), "watts": med(3), "watts_max": max(x[3] for x in inside),
            "temp_c": med(4), "reasons": sorted({x[5] for x in inside})}


def attach_smi(res, path):
    samples = smi_samples(path)
    res["smi_samples"] = len(samples)
    for part in ("timing", "sustain"):
        for row in res.get(part, {}).get("rows", []):
            for v in row.values():
                if isinstance(v, dict) and "t0" in v:
                    w = smi_window(samples, v["t0"], v["t1"])
                    if w:
                        v["smi"] = w


def exp_key(p):
    return f"x:{p.BM}x{p.BN}s{p.stages}p{p.TM}q{p.TN}t{p.threads}w{p.swizzle}"


def _exp():
    # Variants of tf32x3_wgmma's registered "large" (128x128 s3, two producer
    # warpgroups, threads=512, raster groups of 8 m-tiles): the raster group
    # size and the pipeline depth, each alone (docs/notes/tensorcore.md).
    from sgemm.kernels.params import TileParams as T
    big = T(BM=128, BN=128, BK=32, threads=512, stages=3, TM=1)
    return [("tf32x3_wgmma", big),                                   # plain raster
            ("tf32x3_wgmma", big.replace(swizzle=4)),
            ("tf32x3_wgmma", big.replace(swizzle=16)),
            ("tf32x3_wgmma", big.replace(swizzle=32)),
            ("tf32x3_wgmma", big.replace(swizzle=8, stages=2))]     # does depth matter?


def _exp_rs():
    # Variants of tf32x3_wgmma_rs's registered "large" (128x128, 4 stages,
    # raster groups of 8, consumer schedule PIPE 2 in the TN field): the other
    # schedules, which sustained within 1-2 % of it (docs/notes/tensorcore.md).
    from sgemm.kernels.registry import KERNELS
    big = KERNELS["tf32x3_wgmma_rs"].configs["large"]
    return [("tf32x3_wgmma_rs", big.replace(TN=1)),
            ("tf32x3_wgmma_rs", big.replace(TN=3))]


# The variants timed beside the registered configs (_exp(): the SS kernel's).
EXPERIMENTS: list = _exp_rs()

PARTS = {"compile": part_compile, "correct": part_correct, "accuracy": part_accuracy,
         "timing": part_timing, "sustain": part_sustain}


# ---------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------
def run_part(part, skip, timeout):
    PARTS_DIR.mkdir(parents=True, exist_ok=True)
    out = PARTS_DIR / f"part-{part.replace(':', '-')}.json"
    cmd = [sys.executable, __file__, "--part", part, "--result", str(out)]
    if skip:
        cmd += ["--skip", ",".join(skip)]
    t0 = time.time()
    try:
        r = subprocess.run(cmd, timeout=timeout)
        rc = r.returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    dt = time.time() - t0
    if rc == 0 and out.exists():
        res = json.loads(out.read_text())
    else:
        res = {"error": f"part {part} ended with {rc} after {dt:.0f}s"}
        log(res["error"])
    res["seconds"] = dt
    return res


def summary(res):
    lines = []
    env = res.get("env", {})
    lines.append(f"device: {env.get('device')}  cc={env.get('cc')}  "
                 f"torch={env.get('torch')}")
    comp = res.get("compile", {})
    lines.append(f"compile: {comp.get('instantiations')} inst., problems={len(comp.get('problems', {}))}"
                 f"  SASS={json.dumps(comp.get('sass', {}))}")
    for n in TC_NAMES:
        c = res.get(f"correct:{n}", {})
        lines.append(f"correct {n:13s}: {c.get('passed')}/{c.get('total')} worst={c.get('worst')}"
                     + (f" ERROR {c['error']}" if "error" in c else ""))
    acc = res.get("accuracy", {}).get("table", [])
    if acc:
        keys = [k for k in acc[0] if isinstance(acc[0][k], dict) and "fro" in acc[0][k]]
        lines.append("accuracy (rel. Frobenius / max err/(|A||B|)), M=N=1024, NN:")
        lines.append("  dist   K      " + " ".join(f"{k:>22s}" for k in keys))
        for r in acc:
            lines.append(f"  {r['dist']:6s} {r['K']:5d}  " + " ".join(
                f"{r[k]['fro']:10.2e}/{r[k]['max']:9.2e}" if "fro" in r.get(k, {}) else f"{'-':>22s}"
                for k in keys))
    tim = res.get("timing", {}).get("rows", [])
    if tim:
        lines.append("timing TFLOPS (median), ratio to cuBLAS FP32 / TF32:")
        for r in tim:
            f32, t32 = r["cublas_fp32"]["tflops"], r["cublas_tf32"]["tflops"]
            lines.append(f"  n={r['n']}: cuBLAS fp32 {f32:.1f}  tf32 {t32:.1f}")
            for k, v in r.items():
                if k.startswith("cublas") or not isinstance(v, dict) or "tflops" not in v:
                    continue
                lines.append(f"    {k:44s} {v['tflops']:7.1f}  x{v['tflops'] / f32:5.2f} fp32"
                             f"  x{v['tflops'] / t32:5.2f} tf32")
    sus = res.get("sustain", {}).get("rows", [])
    if sus:
        lines.append(f"sustained ({res['sustain'].get('seconds_each')} s back to back each, NN; "
                     f"nvidia-smi medians over the window; {res.get('smi_samples', 0)} samples):")
        for r in sus:
            f32 = r["cublas_fp32"]["tflops"]
            for k, v in r.items():
                if not isinstance(v, dict) or "tflops" not in v:
                    continue
                w = v.get("smi") or {}
                lines.append(
                    f"  n={r['n']} {k:44s} {v['tflops']:6.1f} x{v['tflops'] / f32:5.2f}"
                    f" (first {v['first_tflops']:.1f} last {v['last_tflops']:.1f})"
                    f"  sm {w.get('sm_mhz', '-')} MHz (min {w.get('sm_mhz_min', '-')})"
                    f"  {w.get('watts', '-')} W (max {w.get('watts_max', '-')})"
                    f"  {w.get('temp_c', '-')} C  reasons {w.get('reasons', '-')}")
    return "\n".join(lines)


PROBE_ITERS = 256


def probe():
    """Launch tc21_store_probe (21_tf32x3_wgmma.cu) once per operand shape and
    layout, for ncu to count its shared-store wavefronts and bank conflicts:
    the producers' store pattern with no other client of the data banks
    running (docs/notes/tensorcore.md).  Run it as
    ncu -k regex:tc21_store_probe --metrics ... python scripts/tc_check.py --probe"""
    import torch
    from sgemm.runtime import device as sdev
    from sgemm.runtime.compiler import compile_kernel
    from sgemm.runtime.launcher import _allow_dynamic_smem, launch as klaunch
    from cuda.core import ObjectCode
    torch.cuda.init()
    dev = sdev.info(0)
    sdev.make_current(dev.id)
    out = torch.zeros(1024, device="cuda")
    stream = torch.cuda.current_stream()
    for r in (128, 64):
        for kc in ("true", "false"):
            expr = f"tc21_store_probe<{r}, {kc}>"
            c = compile_kernel("21_tf32x3_wgmma.cu", expr, "sm_90a")
            k = ObjectCode.from_cubin(c.cubin, symbol_mapping=c.symbol_mapping).get_kernel(expr)
            smem = 2 * r * 128 + 1024
            _allow_dynamic_smem(k, smem, 0)
            klaunch(k, (132, 1, 1), 128, smem, stream, (out.data_ptr(), PROBE_ITERS))
            torch.cuda.synchronize()
            sts = 132 * 4 * PROBE_ITERS * (r // 16) * 2
            log(f"probe {expr}: {sts} STS.128 warp instructions, ideal {4 * sts} wavefronts")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part")
    ap.add_argument("--result")
    ap.add_argument("--skip", default="")
    ap.add_argument("--only", default="", help="comma list of parts for the driver")
    ap.add_argument("--smi", action="store_true",
                    help="log nvidia-smi clocks/power every 100 ms into $OUT/smi.csv")
    ap.add_argument("--probe", action="store_true",
                    help="launch the store-pattern probe kernels (for ncu) and exit")
    args = ap.parse_args()
    if args.probe:
        probe()
        return
    args.skip = [s for s in args.skip.split(",") if s]
    OUT.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("SGEMM_CACHE_DIR", "/tmp/sgemm-cache")
    if args.part:
        fn = PARTS[args.part.split(":")[0]]
        try:
            res = fn(args)
        except Exception:
            traceback.print_exc()
            sys.exit(3)
        Path(args.result).write_text(json.dumps(res, default=str))
        return

    import torch
    res = {"env": {"device": torch.cuda.get_device_name(0),
                   "cc": list(torch.cuda.get_device_capability(0)),
                   "torch": torch.__version__,
                   "date": time.strftime("%Y-%m-%d %H:%M:%S")}}
    try:
        res["env"]["smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.max.sm,power.limit",
             "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    except Exception:  # noqa: BLE001
        pass
    smi = smi_start(OUT / "smi.csv") if args.smi else None
    only = [p for p in args.only.split(",") if p]
    want = lambda p: not only or p in only or p.split(":")[0] in only  # noqa: E731
    if want("compile"):
        res["compile"] = run_part("compile", [], 120)
    skip = []
    for n in specs():
        if want(f"correct:{n}"):
            r = run_part(f"correct:{n}", [], 90)
            res[f"correct:{n}"] = r
            if "error" in r or r.get("passed") != r.get("total"):
                skip.append(n)
    if want("accuracy"):
        res["accuracy"] = run_part("accuracy", skip, 90)
    if want("timing"):
        res["timing"] = run_part("timing", skip, 150)
    if want("sustain"):
        res["sustain"] = run_part("sustain", skip, 150)
    res["skipped"] = skip
    if smi is not None:
        time.sleep(0.3)
        smi.terminate()
        smi.wait()
        attach_smi(res, OUT / "smi.csv")
    (OUT / "tc_check.json").write_text(json.dumps(res, indent=1, default=str))
    log("=" * 100)
    log(summary(res))


if __name__ == "__main__":
    main()
