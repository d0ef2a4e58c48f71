#!/usr/bin/env python3
"""Multi-GPU SGEMM on one host: SUMMA (sgemm.distributed) against the seed-002
scheme and cuBLAS on one GPU.  Square N x N x N, FP32, data resident on the GPUs.

Single process, every GPU driven from one thread (sgemm.multi_gpu's path), all
schemes and GPU counts in one run:

    NCCL_NVLS_ENABLE=0 python bench/distributed_bench.py --gpus 1 2 4 \\
        --sizes 16384 32768 --out results.json

One process per GPU under MPI (SUMMA only, one GPU count per launch):

    mpirun -n 4 -x NCCL_NVLS_ENABLE=0 python bench/distributed_bench.py \\
        --launcher mpi --sizes 16384 32768 --out mpi4.json        # Open MPI
    mpirun -n 4 -genv NCCL_NVLS_ENABLE 0 python bench/...         # MPICH

Rectangular problems (the cost model picks algorithm, grid and panel width;
--algorithm summa|ksplit forces one), each against sgemm on one GPU:

    python bench/distributed_bench.py --gpus 1 2 4 8 --sizes --shapes 262144x2048x8192 \
        2048x262144x8192 1024x1024x4194304 --out shapes.json

The model's choices without running anything (no GPU needed):

    python bench/distributed_bench.py --explain --gpus 2 4 8 --sizes 32768 \
        --shapes 262144x2048x8192 1024x1024x4194304

Combine and print:  python bench/distributed_bench.py --merge a.json b.json --out all.json

What is measured (medians over --reps after one warm-up):
  summa      time of one distributed GEMM (host wall clock around the call,
             which synchronises every GPU), TFLOPS = 2N^3 / time;
             compute = sum of local GEMM times, comm = sum of panel copy +
             NCCL broadcast times, exposed = time - compute (the part of the
             run no GEMM covers), from CUDA events, worst rank;
             eff_local = (our single-GPU kernel on the same local shape
             m_loc x n_loc x N, one call) / time: what distribution costs;
             eff_1gpu = time(1 GPU, N^3) / (P * time): strong scaling.
  seed002    row split of A per GPU, A rows and all of B copied from the host,
             C rows copied back and placed into host C (the seed's multi-GPU
             section): end-to-end time and kernel-only time.
  cublas     cupy.matmul on one GPU.
  sgemm_1gpu sgemm.gemm on one GPU.
  nccl_bcast NCCL broadcast bandwidth (bytes / time) over the P GPUs (256 MiB).
  dist_shape SUMMA or the K split on an M x N x K problem (--shapes); its
             baseline sgemm_1gpu_shape is sgemm.gemm on one GPU.
Every distributed record also holds the plan the cost model chose and its
predicted compute, communication and exposed communication ("plan",
"predicted_*_s") beside the measured ones.
Each distributed result is checked on 16 random entries per rank against a
float64 recomputation (the matrices are defined element by element).
"""
from __future__ import annotations

import os

os.environ["NCCL_NVLS_ENABLE"] = "0"          # before anything can load NCCL
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import argparse
import datetime
import json
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SEED_A, SEED_B = 11, 22
TOL = {None: 1e-4, "ieee": 1e-4, "tf32x3": 1e-4, "tf32": 2e-2}


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------
class Budget:
    def __init__(self, seconds):
        self.deadline = time.monotonic() + seconds if seconds else None

    def left(self) -> float:
        return float("inf") if self.deadline is None else self.deadline - time.monotonic()

    def ok(self, need: float = 0.0) -> bool:
        return self.left() > need


def log(*a):
    print(*a, flush=True)


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def tflops(flops, seconds):
    return flops / seconds / 1e12 if seconds and seconds > 0 else float("nan")


def reps_for(first_s: float, args, budget: Budget) -> int:
    """Repetitions after a warm-up that took first_s: --reps, fewer when slow."""
    r = args.reps
    while r > 1 and (first_s * r > args.max_rep_s or not budget.ok(first_s * r + 30)):
        r -= 1
    return r


def free_all(cupy, devices):
    for d in devices:
        with cupy.cuda.Device(d):
            cupy.cuda.Device(d).synchronize()
            cupy.get_default_memory_pool().free_all_blocks()


def gpu_meta(cupy):
    out = []
    for d in range(cupy.cuda.runtime.getDeviceCount()):
        p = cupy.cuda.runtime.getDeviceProperties(d)
        name = p["name"].decode() if isinstance(p["name"], bytes) else p["name"]
        out.append({"id": d, "name": name, "memory_gib": round(p["totalGlobalMem"] / 2**30, 1)})
    return out


def meta(args, cupy):
    m = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
         "host": platform.node(), "python": platform.python_version(),
         "argv": sys.argv, "launcher": args.launcher,
         "env": {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "NCCL_ALGO", "NCCL_PROTO",
                                                "NCCL_MAX_NCHANNELS",
                                                "CUDA_VISIBLE_DEVICES")}}
    try:
        m["cupy"] = cupy.__version__
        m["gpus"] = gpu_meta(cupy)
        from cupy.cuda import nccl
        m["nccl"] = nccl.get_version()
    except Exception as e:  # noqa: BLE001
        m["meta_error"] = repr(e)
    return m


def event_time(cupy, stream, fn) -> float:
    e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
    e0.record(stream)
    fn()
    e1.record(stream)
    e1.synchronize()
    return cupy.cuda.get_elapsed_time(e0, e1) / 1e3


def synth_on(cupy, device, shape, seed):
    from sgemm.distributed import synth
    with cupy.cuda.Device(device):
        out = cupy.empty(shape, dtype=cupy.float32)
        rows = shape[0]
        for s in range(0, rows, 2048):
            out[s:s + 2048] = synth.values(cupy, cupy.arange(s, min(s + 2048, rows)),
                                           cupy.arange(shape[1]), seed)
        return out


def time_single_gemm(cupy, device, m, n, k, args, budget, use="sgemm"):
    """Median seconds of one m x n x k GEMM on ``device`` (sgemm.gemm or cuBLAS)."""
    import sgemm
    with cupy.cuda.Device(device):
        a = synth_on(cupy, device, (m, k), SEED_A)
        b = synth_on(cupy, device, (k, n), SEED_B)
        c = cupy.empty((m, n), dtype=cupy.float32)
        stream = cupy.cuda.Stream(non_blocking=True)
        if use == "sgemm":
            plan = sgemm.plan(a, b, c, precision=args.precision, stream=stream)
            fn = lambda: plan.execute(stream)   # noqa: E731
        else:
            def fn():
                with stream:
                    cupy.matmul(a, b, out=c)
        first = event_time(cupy, stream, fn)
        times = [event_time(cupy, stream, fn) for _ in range(reps_for(first, args, budget))]
        info = {"kernel": getattr(getattr(plan, "kernel", None), "name", None)} if use == "sgemm" else {}
        a = b = c = plan = None      # free before emptying the pool
    free_all(cupy, [device])
    return median(times), times, info


# ---------------------------------------------------------------------------------------
# schemes
# ---------------------------------------------------------------------------------------
def run_summa(dctx, shape, args, budget, local_gemm, label_launcher, square=True):
    """One distributed GEMM (the cost model's plan: SUMMA or the K split) of
    ``shape`` (m, n, k) on the ranks ``dctx`` drives; returns the rank-local record."""
    import cupy

    from sgemm.distributed import synth
    m, n, k = shape
    kw = dict(kb=args.kb, algorithm=args.algorithm, precision=args.precision)
    plan = dctx.plan(m, n, k, **kw)
    lay = dctx.layout(m, n, k, **kw)
    be = dctx.backend_for(lay)
    be.persistent = True          # repeated calls: no per-call buffer / plan setup
    a_l, b_l, c_l = [], [], []
    for ctx in be.ctxs:
        with cupy.cuda.Device(ctx.device):
            a_l.append(synth.fill_local(cupy, lay.a, ctx.rank, SEED_A))
            b_l.append(synth.fill_local(cupy, lay.b, ctx.rank, SEED_B))
            c_l.append(cupy.empty(lay.c.local_shape(ctx.rank), dtype=cupy.float32))
    for ctx in be.ctxs:
        cupy.cuda.Device(ctx.device).synchronize()

    def once():
        dctx.barrier()
        t0 = time.perf_counter()
        arg = (a_l, b_l, c_l) if not be.multi_process else (a_l[0], b_l[0], c_l[0])
        dctx.gemm(*arg, layout=lay, precision=args.precision, profile=True,
                  timeout=args.timeout)
        wall = time.perf_counter() - t0
        if be.multi_process:                  # the job's time: the slowest rank's
            wall = dctx.comm.allreduce(wall, op=_mpi_max())
        return wall, dctx.last_stats

    first, _ = once()
    nrep = reps_for(first, args, budget)
    if be.multi_process:                      # every rank must run the same count
        nrep = dctx.comm.allreduce(nrep, op=_mpi_min())
    walls, stats = [], []
    for _ in range(nrep):
        w, s = once()
        walls.append(w)
        stats.append(s)
    errs = [synth.check_samples(cupy, lay, ctx.rank, c, SEED_A, SEED_B, 1.0, 16)
            for ctx, c in zip(be.ctxs, c_l)]
    i_med = sorted(range(len(walls)), key=lambda i: walls[i])[len(walls) // 2]
    st = stats[i_med]

    def local_gemm_shape(rank):
        if plan.algorithm == "ksplit":
            return [m, n, lay.ks]
        return [*lay.c.local_shape(rank), k]
    scheme = ("summa" if plan.algorithm == "summa" else "ksplit") if square else "dist_shape"
    rec = {"scheme": scheme, "algorithm": plan.algorithm, "launcher": label_launcher,
           "local_gemm": local_gemm, "precision": args.precision, "gpus": lay.grid.size,
           "grid": list(lay.grid.shape), "block": [plan.mb, plan.nb, plan.kb],
           "panel": plan.panel, "steps": lay.nsteps,
           "local_shape": local_gemm_shape(0), "local_shape_mine": local_gemm_shape(
               be.ctxs[0].rank),
           "times_s": walls, "wall_s": walls[i_med],
           "event_total_s": st.total_s, "compute_s": st.compute_s, "comm_s": st.comm_s,
           "exposed_comm_s": st.exposed_comm_s, "measured_with": st.timing,
           "predicted_total_s": plan.total_s, "predicted_compute_s": plan.compute_s,
           "predicted_comm_s": plan.comm_s, "predicted_exposed_comm_s": plan.exposed_comm_s,
           "plan": plan.as_dict(),
           "per_rank": [vars(r) for r in st.ranks], "check_err": max(errs),
           "check_ok": max(errs) <= TOL.get(args.precision, 1e-4)}
    rec.update({"n": n} if square else {"shape": [m, n, k]})
    be.persistent = False
    be.release()                  # drop cached plans (they hold the arrays) and buffers
    a_l = b_l = c_l = None
    free_all(cupy, [ctx.device for ctx in be.ctxs])
    return rec


def _mpi_min():
    from mpi4py import MPI
    return MPI.MIN


def _mpi_max():
    from mpi4py import MPI
    return MPI.MAX


def dims(r) -> tuple[int, int, int]:
    """(m, n, k) of a record: "shape", or the square "n"."""
    return tuple(r["shape"]) if "shape" in r else (r["n"],) * 3


def flops(r) -> int:
    m, n, k = dims(r)
    return 2 * m * n * k


def finish_summa(rec, local_s, local_times):
    rec["time_s"] = rec["wall_s"]
    rec["tflops"] = tflops(flops(rec), rec["time_s"])
    rec["tflops_per_gpu"] = rec["tflops"] / rec["gpus"]
    rec["local_baseline_s"] = local_s
    rec["local_baseline_times_s"] = local_times
    rec["efficiency_local"] = local_s / rec["time_s"] if local_s else None
    # the same against GPU time only (first to last event, worst rank): without
    # the host's share (launch gaps at the start, the final synchronisation)
    ev = rec.get("event_total_s")
    rec["efficiency_local_events"] = local_s / ev if local_s and ev else None
    return rec


def run_seed002(cupy, n, p, host, args, budget):
    """Row split of A over p GPUs, copies through the host, host-side gather."""
    import numpy as np

    import sgemm
    a_h, b_h = host
    c_h = np.empty((n, n), dtype=np.float32)
    rows = [(i * n // p, (i + 1) * n // p) for i in range(p)]

    def once():
        t0 = time.perf_counter()
        a_d, b_d, c_d, streams = [], [], [], []
        for d, (r0, r1) in enumerate(rows):
            with cupy.cuda.Device(d):
                a_d.append(cupy.asarray(a_h[r0:r1]))
                b_d.append(cupy.asarray(b_h))
                c_d.append(cupy.empty((r1 - r0, n), dtype=cupy.float32))
                streams.append(cupy.cuda.Stream(non_blocking=True))
                cupy.cuda.Device(d).synchronize()
        t1 = time.perf_counter()
        evs = []
        for d in range(p):
            with cupy.cuda.Device(d):
                e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
                e0.record(streams[d])
                sgemm.gemm(a_d[d], b_d[d], c_d[d], precision=args.precision, stream=streams[d])
                e1.record(streams[d])
                evs.append((e0, e1))
        for d in range(p):
            evs[d][1].synchronize()
        t2 = time.perf_counter()
        for d, (r0, r1) in enumerate(rows):
            with cupy.cuda.Device(d):
                c_h[r0:r1] = cupy.asnumpy(c_d[d])
        t3 = time.perf_counter()
        kern = max(cupy.cuda.get_elapsed_time(e0, e1) / 1e3 for e0, e1 in evs)
        a_d = b_d = c_d = None
        free_all(cupy, range(p))
        return {"total": t3 - t0, "h2d": t1 - t0, "kernel_wall": t2 - t1, "kernel": kern,
                "d2h_gather": t3 - t2}

    first = once()
    reps = [once() for _ in range(reps_for(first["total"], args, budget))] or [first]
    reps.sort(key=lambda r: r["total"])
    med = reps[len(reps) // 2]
    return {"scheme": "seed002", "launcher": "threads", "gpus": p, "n": n,
            "precision": args.precision, "time_s": med["total"],
            "times_s": [r["total"] for r in reps], "h2d_s": med["h2d"],
            "kernel_s": med["kernel"], "kernel_wall_s": med["kernel_wall"],
            "d2h_gather_s": med["d2h_gather"], "tflops": tflops(2 * n ** 3, med["total"]),
            "tflops_kernel": tflops(2 * n ** 3, med["kernel"])}


def run_nccl_bcast(cupy, p, nbytes=256 << 20, reps=5):
    from cupy.cuda import nccl
    devs = list(range(p))
    comms = nccl.NcclCommunicator.initAll(devs)
    bufs, streams = [], []
    count = nbytes // 4
    for d in devs:
        with cupy.cuda.Device(d):
            bufs.append(cupy.ones(count, dtype=cupy.float32))
            streams.append(cupy.cuda.Stream(non_blocking=True))

    def once():
        t0 = time.perf_counter()
        nccl.groupStart()
        for d in devs:
            with cupy.cuda.Device(d):
                comms[d].broadcast(bufs[d].data.ptr, bufs[d].data.ptr, count,
                                   nccl.NCCL_FLOAT32, 0, streams[d].ptr)
        nccl.groupEnd()
        for s in streams:
            s.synchronize()
        return time.perf_counter() - t0

    once()
    t = median([once() for _ in range(reps)])
    for cm in comms:
        cm.destroy()
    bufs = None
    free_all(cupy, devs)
    return {"scheme": "nccl_bcast", "launcher": "threads", "gpus": p, "bytes": nbytes,
            "time_s": t, "busbw_gbs": nbytes / t / 1e9}


# ---------------------------------------------------------------------------------------
# drivers
# ---------------------------------------------------------------------------------------
def main_threads(args) -> dict:
    import cupy

    from sgemm.distributed import local
    budget = Budget(args.budget_s)
    ndev = cupy.cuda.runtime.getDeviceCount()
    gpus = [p for p in args.gpus if p <= ndev]
    if len(gpus) < len(args.gpus):
        log(f"only {ndev} GPU(s): skipping {sorted(set(args.gpus) - set(gpus))}")
    out = {"meta": meta(args, cupy), "runs": []}
    runs = _SavingList(out, args.out)

    def skip(what, shape=None):
        log(f"  skipped (time budget): {what}")
        size = {"n": what[2]} if shape is None else {"shape": list(shape)}
        runs.append({"scheme": what[0], "gpus": what[1], **size, "skipped": "budget"})

    for p in gpus:
        if p > 1 and args.nccl_bench:
            r = run_nccl_bcast(cupy, p, args.nccl_mib << 20)
            log(f"nccl_bcast P={p}: {r['busbw_gbs']:.0f} GB/s ({args.nccl_mib} MiB)")
            runs.append(r)
    for n in args.sizes:
        log(f"== N = {n}")
        single = {}
        for use in (["cublas"] if args.cublas else []) + ["sgemm"]:
            if not budget.ok(10):
                skip((f"{use}_1gpu", 1, n))
                continue
            t, ts, info = time_single_gemm(cupy, 0, n, n, n, args, budget, use)
            single[use] = t
            runs.append({"scheme": f"{use}_1gpu", "launcher": "single", "gpus": 1, "n": n,
                         "precision": args.precision if use == "sgemm" else None,
                         "time_s": t, "times_s": ts, "tflops": tflops(2 * n ** 3, t), **info})
            log(f"  {use:6s} 1 GPU: {t * 1e3:9.1f} ms  {tflops(2 * n ** 3, t):6.1f} TFLOPS")
        for p in gpus:
            for lg in args.local_gemm:
                if not budget.ok(15):
                    skip(("summa", p, n))
                    continue
                dctx = local("cupy", devices=list(range(p)), local_gemm=lg,
                             timeout=args.timeout, link_gbs=args.link_gbs)
                rec = run_summa(dctx, (n, n, n), args, budget, lg, "threads")
                dctx.close()
                m_loc, n_loc, k_loc = rec["local_shape"]
                if p == 1 and lg == "sgemm" and "sgemm" in single:
                    loc_s, loc_ts = single["sgemm"], []
                elif p == 1 and lg == "cublas" and "cublas" in single:
                    loc_s, loc_ts = single["cublas"], []
                else:
                    loc_s, loc_ts, _ = time_single_gemm(cupy, 0, m_loc, n_loc, k_loc, args,
                                                        budget, lg)
                finish_summa(rec, loc_s, loc_ts)
                runs.append(rec)
                log_dist(rec, lg)
        if args.seed002:
            host = None
            for p in gpus:
                if not budget.ok(30):
                    skip(("seed002", p, n))
                    continue
                if host is None:
                    with cupy.cuda.Device(0):
                        host = (cupy.asnumpy(synth_on(cupy, 0, (n, n), SEED_A)),
                                cupy.asnumpy(synth_on(cupy, 0, (n, n), SEED_B)))
                    free_all(cupy, [0])
                r = run_seed002(cupy, n, p, host, args, budget)
                runs.append(r)
                log(f"  seed002 {p} GPU: {r['time_s'] * 1e3:9.1f} ms end-to-end "
                    f"({r['tflops']:.1f} TFLOPS), kernel {r['kernel_s'] * 1e3:.1f} ms "
                    f"({r['tflops_kernel']:.1f} TFLOPS)")
            del host
    for shape in args.shapes:
        run_shape_threads(cupy, shape, gpus, args, budget, runs, skip)
    return out


def log_dist(rec, lg):
    log(f"  {rec['algorithm']:6s} {rec['gpus']} GPU ({lg}, grid {rec['grid'][0]}x"
        f"{rec['grid'][1]}, panel {rec['panel']}): {rec['time_s'] * 1e3:9.1f} ms "
        f"{rec['tflops']:6.1f} TFLOPS  eff_local {rec['efficiency_local']:.3f}  "
        f"exposed {rec['exposed_comm_s'] * 1e3:.1f} ms (model "
        f"{rec['predicted_exposed_comm_s'] * 1e3:.1f})  err {rec['check_err']:.1e}")


def run_shape_threads(cupy, shape, gpus, args, budget, runs, skip):
    """An M x N x K problem: sgemm on one GPU, then the model's plan on each GPU count."""
    from sgemm.distributed import local
    m, n, k = shape
    log(f"== {m} x {n} x {k}")
    if not budget.ok(10):
        skip(("sgemm_1gpu_shape", 1, None), shape)
        return
    t, ts, info = time_single_gemm(cupy, 0, m, n, k, args, budget, "sgemm")
    runs.append({"scheme": "sgemm_1gpu_shape", "launcher": "single", "gpus": 1,
                 "shape": [m, n, k], "precision": args.precision, "time_s": t, "times_s": ts,
                 "tflops": tflops(2 * m * n * k, t), **info})
    log(f"  sgemm  1 GPU: {t * 1e3:9.1f} ms  {tflops(2 * m * n * k, t):6.1f} TFLOPS")
    for p in gpus:
        if p == 1:
            continue
        if not budget.ok(15):
            skip(("dist_shape", p, None), shape)
            continue
        dctx = local("cupy", devices=list(range(p)), local_gemm="sgemm", timeout=args.timeout,
                     link_gbs=args.link_gbs)
        rec = run_summa(dctx, shape, args, budget, "sgemm", "threads", square=False)
        dctx.close()
        loc_s, loc_ts, _ = time_single_gemm(cupy, 0, *rec["local_shape"], args, budget)
        finish_summa(rec, loc_s, loc_ts)
        runs.append(rec)
        log_dist(rec, "sgemm")


class _SavingList(list):
    """The runs list; rewrites the JSON after every record, so that a run cut
    short (time limit, crash) keeps what it measured."""

    def __init__(self, doc, path):
        super().__init__()
        self.doc, self.path = doc, path
        doc["runs"] = self

    def append(self, rec):
        super().append(rec)
        if self.path:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            Path(self.path).write_text(json.dumps(self.doc, indent=1))


def main_mpi(args) -> dict | None:
    from mpi4py import MPI

    from sgemm import distributed as dist
    comm = MPI.COMM_WORLD
    budget = Budget(args.budget_s)

    def body():
        import cupy
        dctx = dist.init("cupy", comm=comm, local_gemm=args.local_gemm[0], timeout=args.timeout,
                         link_gbs=args.link_gbs)
        out = {"meta": meta(args, cupy), "runs": []} if comm.rank == 0 else None
        if out is not None:
            _SavingList(out, args.out)
        todo = [((n, n, n), lg, True) for n in args.sizes for lg in args.local_gemm]
        todo += [(shape, "sgemm", False) for shape in args.shapes]
        for shape, lg, square in todo:
            dctx.local_gemm = lg
            rec = run_summa(dctx, shape, args, budget, lg, "mpi", square=square)
            mine = rec["local_shape_mine"]
            comm.Barrier()
            t, ts, _ = time_single_gemm(cupy, dctx.device, *mine, args, budget, lg)
            worst = comm.allreduce(t, op=MPI.MAX)
            errs = comm.allreduce(rec["check_err"], op=MPI.MAX)
            per_rank = comm.gather(rec["per_rank"][0], root=0)
            if comm.rank == 0:
                rec["per_rank"] = per_rank
                rec["check_err"] = errs
                rec["check_ok"] = errs <= TOL.get(args.precision, 1e-4)
                for key in ("compute_s", "comm_s", "exposed_comm_s"):
                    rec[key] = max(r[key] for r in per_rank)
                rec["event_total_s"] = max(r["total_s"] for r in per_rank)
                finish_summa(rec, worst, ts)
                out["runs"].append(rec)
                log(f"  {rec['algorithm']}(mpi) {rec['gpus']} GPU ({lg}) "
                    f"{'x'.join(map(str, shape))}: {rec['time_s'] * 1e3:.1f} ms "
                    f"{rec['tflops']:.1f} TFLOPS eff_local {rec['efficiency_local']:.3f} "
                    f"exposed {rec['exposed_comm_s'] * 1e3:.1f} ms (model "
                    f"{rec['predicted_exposed_comm_s'] * 1e3:.1f}) "
                    f"err {rec['check_err']:.1e}")
        dctx.close()
        return out

    return dist.run(body, comm=comm, timeout=args.watchdog)


# ---------------------------------------------------------------------------------------
# reporting
# ---------------------------------------------------------------------------------------
def derive(runs):
    """Fill efficiency_1gpu (strong scaling vs sgemm on one GPU) and vs_cublas."""
    # strong scaling against sgemm on one GPU in the same precision
    one = {(dims(r), prec(r)): r["time_s"] for r in runs
           if r.get("scheme") in ("sgemm_1gpu", "sgemm_1gpu_shape") and "time_s" in r}
    cub = {dims(r): r["time_s"] for r in runs
           if r.get("scheme") == "cublas_1gpu" and "time_s" in r}
    for r in runs:
        if "time_s" not in r or r.get("scheme") in ("nccl_bcast",):
            continue
        d, p = dims(r), r["gpus"]
        key = (d, "ieee" if r.get("local_gemm") == "cublas" else prec(r))
        if key in one:
            r["efficiency_1gpu"] = one[key] / (p * r["time_s"])
        if d in cub:
            r["speedup_vs_cublas_1gpu"] = cub[d] / r["time_s"]
    return runs


def prec(r) -> str:
    return r.get("precision") or "ieee"


def table(data) -> str:
    runs = derive(data["runs"])
    lines = []
    bw = [r for r in runs if r.get("scheme") == "nccl_bcast"]
    for r in bw:
        lines.append(f"NCCL broadcast over {r['gpus']} GPUs: {r['busbw_gbs']:.0f} GB/s")
    hdr = (f"{'scheme':20s} {'launch':7s} {'GPUs':>4s} {'M x N x K':>18s} {'grid':>5s} "
           f"{'ms':>9s} {'TFLOPS':>7s} {'eff_loc':>7s} {'eff_1g':>6s} {'comp ms':>8s} "
           f"{'comm ms':>8s} {'expo ms':>8s} {'model':>8s} {'check':>8s}")
    lines += [hdr, "-" * len(hdr)]
    order = {"cublas_1gpu": 0, "sgemm_1gpu": 1, "summa": 2, "ksplit": 2, "seed002": 3,
             "sgemm_1gpu_shape": 4, "dist_shape": 5}
    for r in sorted((r for r in runs if r.get("scheme") in order),
                    key=lambda r: ("shape" in r, dims(r), order[r["scheme"]],
                                   r.get("launcher", ""), r.get("local_gemm", ""), r["gpus"])):
        name = r["scheme"] + (f"/{r['local_gemm']}" if r.get("local_gemm") == "cublas" else "")
        if r["scheme"] == "dist_shape":
            name = f"{r.get('algorithm', 'dist')}(shape)"
        if prec(r) != "ieee" and r.get("local_gemm") != "cublas":
            name += f"/{r['precision']}"      # tf32x3 rows beside the FP32 FMA ones
        size = "x".join(map(str, dims(r))) if "shape" in r else str(r["n"])
        if r.get("skipped"):
            lines.append(f"{name:20s} {'':7s} {r['gpus']:>4d} {size:>18s}  skipped "
                         f"({r['skipped']})")
            continue
        f = lambda k, s=1e3, fmt="8.1f": (format(r[k] * s, fmt) if r.get(k) is not None else "-".rjust(int(fmt.split('.')[0])))  # noqa: E731
        grid = "x".join(map(str, r["grid"])) if "grid" in r else "-"
        comp = f("compute_s") if "compute_s" in r else f("kernel_s")
        comm = f("comm_s") if "comm_s" in r else f("h2d_s")
        expo = f("exposed_comm_s") if "exposed_comm_s" in r else f("d2h_gather_s")
        chk = (f"{r['check_err']:.1e}" if "check_err" in r else "-")
        model = f("predicted_exposed_comm_s")
        lines.append(f"{name:20s} {r.get('launcher', '-'):7s} {r['gpus']:>4d} {size:>18s} "
                     f"{grid:>5s} {r['time_s'] * 1e3:9.1f} {r['tflops']:7.1f} "
                     f"{f('efficiency_local', 1, '7.3f')} {f('efficiency_1gpu', 1, '6.3f')} "
                     f"{comp} {comm} {expo} {model} {chk:>8s}")
    lines.append("seed002 rows: comp = kernel, comm = host->device copies, expo = device->host + "
                 "host gather; eff_loc = single-GPU kernel on the local shape / time; "
                 "eff_1g = 1-GPU time / (GPUs x time); model = the cost model's predicted "
                 "exposed communication (ms)")
    return "\n".join(lines)


def merge(paths):
    out = {"meta": [], "runs": []}
    for p in paths:
        d = json.loads(Path(p).read_text())
        out["meta"].append(d.get("meta"))
        out["runs"] += d.get("runs", [])
    return out


def _shape(text: str) -> tuple[int, int, int]:
    try:
        m, n, k = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape must be MxNxK, got {text!r}") from None
    return m, n, k


def explain(args) -> str:
    """The cost model's plan for every GPU count and problem (no GPU needed:
    the described H100 where no device can be queried)."""
    from sgemm import multi_gpu
    probs = [(n, n, n) for n in args.sizes] + list(args.shapes)
    out = []
    for shape in probs:
        for p in args.gpus:
            if p < 2:
                continue
            block = None if args.kb is None else (None, None, args.kb)
            out.append(multi_gpu.explain(*shape, devices=list(range(p)), block=block,
                                         precision=args.precision, algorithm=args.algorithm,
                                         link_gbs=args.link_gbs))
            out.append("")
    return "\n".join(out)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launcher", choices=("threads", "mpi"), default="threads")
    ap.add_argument("--gpus", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--sizes", type=int, nargs="*", default=[16384, 32768])
    ap.add_argument("--shapes", type=_shape, nargs="*", default=[],
                    help="M x N x K problems (e.g. 262144x2048x8192), besides --sizes")
    ap.add_argument("--algorithm", choices=("auto", "summa", "ksplit"), default="auto",
                    help="distributed algorithm (default: the cost model's choice)")
    ap.add_argument("--link-gbs", type=float, default=None,
                    help="link bandwidth for the cost model (default in model.py)")
    ap.add_argument("--explain", action="store_true",
                    help="print the cost model's plans for --gpus x (--sizes, --shapes); no run")
    ap.add_argument("--kb", type=int, default=None,
                    help="SUMMA panel width (default: the cost model's)")
    ap.add_argument("--local-gemm", nargs="+", choices=("sgemm", "cublas"), default=["sgemm"])
    ap.add_argument("--precision", default=None, help="sgemm precision (default ieee)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-rep-s", type=float, default=15.0,
                    help="fewer repetitions when they would take longer than this")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="skip what would start after this many seconds")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--watchdog", type=float, default=1800.0)
    ap.add_argument("--no-seed002", dest="seed002", action="store_false")
    ap.add_argument("--no-cublas", dest="cublas", action="store_false")
    ap.add_argument("--no-nccl-bench", dest="nccl_bench", action="store_false")
    ap.add_argument("--nccl-mib", type=int, default=256, help="NCCL broadcast test size")
    ap.add_argument("--out", default=None, help="JSON output path")
    ap.add_argument("--merge", nargs="+", default=None, help="JSON files to combine (no run)")
    ap.add_argument("--table", nargs="+", default=None, help="print the table of JSON files")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.explain:
        print(explain(args))
        return 0
    if args.merge or args.table:
        data = merge(args.merge or args.table)
        derive(data["runs"])
        if args.out:
            Path(args.out).write_text(json.dumps(data, indent=1))
        print(table(data))
        return 0
    data = main_threads(args) if args.launcher == "threads" else main_mpi(args)
    if data is None:            # non-root MPI rank
        return 0
    derive(data["runs"])
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(data, indent=1))
        log(f"wrote {args.out}")
    print(table(data))
    bad = [r for r in data["runs"] if r.get("check_ok") is False]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
