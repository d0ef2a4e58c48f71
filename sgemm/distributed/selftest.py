"""Correctness check of the distributed GEMM against NumPy (float64).

Under MPI, one process per rank:

    mpiexec -n 4 python -m sgemm.distributed.selftest                  # CPU: NumPy + MPI
    mpirun  -n 4 python -m sgemm.distributed.selftest --backend cupy   # GPU: CuPy + NCCL

In one process (the ``sgemm.multi_gpu`` path; "numpy" simulates the ranks):

    python -m sgemm.distributed.selftest --inproc 4 --backend numpy
    python -m sgemm.distributed.selftest --inproc 4 --backend cupy

Rank 0 makes random operands, the run scatters them, multiplies, gathers C
and compares with NumPy in float64; every case of uneven sizes, partial
blocks, transposes, alpha/beta and empty local blocks is listed.
``--algorithm summa,ksplit`` runs every case under each algorithm (default
"auto": SUMMA where a case gives blocks, else the cost model's choice).
``--shapes`` adds a tall, a wide, a deep and a square problem with the
model's choice of algorithm, grid and panel width, and prints that choice
("choice <name>: <plan>").  Exit status 0 when every case passes, 1
otherwise.

Fault injection (to check that a failing rank takes the job down):
``--fault raise|hang|exit --fault-rank R --fault-step S`` makes rank R raise,
hang, or exit at its S-th collective (a SUMMA step's broadcasts or a K-split
reduce-scatter); ``--timeout`` bounds every wait of the other ranks,
``--watchdog`` the whole run of every rank.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

# (m, n, k, trans_a, trans_b, alpha, beta, mb, nb, kb); None: the default block.
CASES = [
    (37, 53, 29, False, False, 1.0, 0.0, 5, 7, 4),
    (37, 53, 29, True, False, 0.5, 2.0, 4, 3, 6),
    (37, 53, 29, False, True, -1.5, 1.0, 8, 16, 5),
    (37, 53, 29, True, True, 2.0, -0.5, 3, 5, 7),
    (37, 53, 29, False, False, 1.0, 0.0, None, None, None),
    (1, 1, 1, False, False, 1.0, 1.0, 1, 1, 1),
    (5, 3, 0, False, False, 1.0, 0.5, 2, 2, 1),         # K = 0: C = beta * C
    (0, 7, 5, False, True, 1.0, 0.0, 1, 2, 2),          # M = 0
    (2, 3, 40, True, False, 1.0, 1.0, 4, 4, 3),         # fewer blocks than ranks
    (33, 31, 47, False, False, 1.0, 0.0, 6, 6, 1),      # 47 one-wide panels
    (64, 48, 100, True, True, 1.0, 0.0, 16, 16, 100),   # a single panel
    (19, 23, 31, False, True, 0.0, 3.0, 4, 4, 8),       # alpha = 0
]
QUICK = [0, 1, 2, 3, 6, 8]
# Shapes whose choice the model makes by shape (tests/distributed/test_dist_model.py
# checks the choices on the CPU machine model for 2, 4 and 8 ranks).
SHAPES = {"tall": (4096, 16, 256), "wide": (16, 4096, 256), "deep": (16, 16, 32768),
          "square": (384, 384, 384)}
TOL = {None: 2e-5, "ieee": 2e-5, "tf32x3": 2e-5, "tf32": 5e-3}


def _parse_case(s: str):
    f = s.split(",")
    if len(f) != 10:
        raise argparse.ArgumentTypeError("case: m,n,k,ta,tb,alpha,beta,mb,nb,kb")
    ints = lambda x: None if x in ("", "-", "None") else int(x)  # noqa: E731
    flag = lambda x: x.lower() in ("1", "t", "true", "y")        # noqa: E731
    return (int(f[0]), int(f[1]), int(f[2]), flag(f[3]), flag(f[4]), float(f[5]),
            float(f[6]), ints(f[7]), ints(f[8]), ints(f[9]))


def make_operands(case, seed: int):
    m, n, k, ta, tb, alpha, beta = case[:7]
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    c = rng.standard_normal((m, n)).astype(np.float32) if beta != 0.0 else None
    return a, b, c


def error(case, a, b, c0, c) -> float:
    """max |C - ref| / (|alpha| |op(A)| |op(B)| + |beta| |C0|), elementwise."""
    m, n, k, ta, tb, alpha, beta = case[:7]
    if m == 0 or n == 0:
        return 0.0 if c.shape == (m, n) else float("inf")
    A = (a.T if ta else a).astype(np.float64)
    B = (b.T if tb else b).astype(np.float64)
    ref = alpha * (A @ B)
    scale = abs(alpha) * (np.abs(A) @ np.abs(B))
    if beta != 0.0:
        ref += beta * c0.astype(np.float64)
        scale += abs(beta) * np.abs(c0.astype(np.float64))
    return float(np.max(np.abs(np.asarray(c, dtype=np.float64) - ref) / np.maximum(scale, 1e-30)))


def describe(case) -> str:
    m, n, k, ta, tb, alpha, beta, mb, nb, kb = case
    return (f"{m}x{n}x{k} {'T' if ta else 'N'}{'T' if tb else 'N'} alpha={alpha:g} "
            f"beta={beta:g} blocks=({mb},{nb},{kb})")


class FaultyBackend:
    """Wraps a backend; on ``rank``'s ``step``-th collective (broadcast group
    or reduce-scatter): raise, hang or exit."""

    def __init__(self, inner, rank: int, step: int, mode: str):
        self._inner, self._rank, self._step, self._mode = inner, rank, step, mode
        self._calls = 0

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def bcast(self, ops):
        self._maybe_fail("panel broadcast")
        return self._inner.bcast(ops)

    def reduce_scatter(self, ops):
        self._maybe_fail("reduce-scatter")
        return self._inner.reduce_scatter(ops)

    def _maybe_fail(self, what):
        self._calls += 1
        if self._calls == self._step and self._inner.ctxs[0].rank == self._rank:
            msg = f"injected fault on rank {self._rank} at {what} {self._step}"
            if self._mode == "raise":
                raise RuntimeError(msg)
            if self._mode == "exit":
                sys.stderr.write(msg + ": exiting with status 3\n")
                sys.stderr.flush()
                os._exit(3)
            sys.stderr.write(msg + ": hanging\n")
            sys.stderr.flush()
            while True:
                time.sleep(1)


def shape_cases() -> list[tuple[str, tuple]]:
    """(name, case) for SHAPES: alpha 1, beta 0, the model's blocks."""
    return [(name, (m, n, k, False, False, 1.0, 0.0, None, None, None))
            for name, (m, n, k) in SHAPES.items()]


def run_cases(ctx_gemm, cases, args, is_root: bool, label: str) -> tuple[int, int]:
    """(failures, runs) over every case and algorithm; ``ctx_gemm`` returns
    (C on the root, the plan it ran)."""
    failures = runs = 0
    tol = TOL.get(args.precision, 2e-5) if args.tol is None else args.tol
    todo = [(f"case {i:2d}", c, alg) for alg in args.algorithms for i, c in enumerate(cases)]
    if args.shapes:
        todo += [(f"choice {name}", c, "auto") for name, c in shape_cases()]
    for idx, (what, case, alg) in enumerate(todo):
        a = b = c0 = None
        if is_root:
            a, b, c0 = make_operands(case, args.seed * 1000 + idx)
        t0 = time.perf_counter()
        c, plan = ctx_gemm(a, b, None if c0 is None else c0.copy(), case, alg)
        dt = time.perf_counter() - t0
        runs += 1
        if is_root:
            err = error(case, a, b, c0, c)
            ok = err <= tol
            failures += not ok
            chosen = plan.summary() if plan is not None else alg
            print(f"[{label}] {what} {describe(case):52s} err={err:.2e} "
                  f"{'ok' if ok else 'FAIL'} ({dt * 1e3:.0f} ms)"
                  + (f"\n[{label}] {what}: {chosen}" if what.startswith("choice") else
                     f" {chosen.split(',')[0]}"), flush=True)
    return failures, runs


def main_mpi(args) -> int:
    from mpi4py import MPI

    from . import guard
    from .context import init

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if args.expect_size is not None and size != args.expect_size:
        print(f"[selftest] mpi4py sees {size} process(es) but {args.expect_size} were "
              "launched: mpi4py uses a different MPI library than the launcher",
              file=sys.stderr, flush=True)
        return 2

    def body():
        ctx = init(args.backend, comm=comm, grid=args.grid, local_gemm=args.local_gemm,
                   timeout=args.timeout)
        if args.fault:
            ctx.set_backend_hook(lambda be: FaultyBackend(be, args.fault_rank, args.fault_step,
                                                          args.fault))
        label = f"{args.backend} P={size}" + (f" grid={ctx.grid}" if args.grid else "")
        if rank == 0:
            dev = "" if args.backend == "numpy" else f" device={ctx.device}"
            print(f"[{label}] {ctx.backend.name}{dev}", flush=True)

        def gemm(a, b, c, case, alg):
            m, n, k, ta, tb, alpha, beta, mb, nb, kb = case
            if alg == "ksplit":
                nb = kb = None
            out = ctx.gemm_global(a, b, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb,
                                  mb=mb, nb=nb, kb=kb, precision=args.precision,
                                  timeout=args.timeout, algorithm=alg)
            return out, ctx.last_plan

        failures, runs = run_cases(gemm, args.cases, args, rank == 0, label)
        failures = comm.bcast(failures, root=0)
        if rank == 0:
            print(f"[{label}] SELFTEST {'PASSED' if failures == 0 else 'FAILED'}: "
                  f"{runs - failures}/{runs} cases", flush=True)
        ctx.close()
        return 0 if failures == 0 else 1

    return guard.run(body, comm=comm, timeout=args.watchdog)


def main_inproc(args) -> int:
    from .. import multi_gpu

    p = args.inproc
    devices = args.devices if args.devices is not None else list(range(p))
    label = f"{args.backend} in-process P={p}"

    def gemm(a, b, c, case, alg):
        m, n, k, ta, tb, alpha, beta, mb, nb, kb = case
        block = None if mb is None else (mb, nb, kb)
        kw = dict(alpha=alpha, beta=beta, trans_a=ta, trans_b=tb, grid=args.grid, block=block,
                  algorithm=alg, return_stats=True)
        if alg == "ksplit":
            kw.update(grid=None, block=None if mb is None else (mb, None, None))
        if args.backend == "cupy":
            import cupy
            with cupy.cuda.Device(devices[0]):
                ga, gb = cupy.asarray(a), cupy.asarray(b)
                gc = None if c is None else cupy.asarray(c)
            out, st = multi_gpu.gemm(ga, gb, gc, devices=devices, precision=args.precision,
                                     local_gemm=args.local_gemm, timeout=args.timeout, **kw)
            return cupy.asnumpy(out), st.plan
        out, st = multi_gpu.gemm(a, b, c, backend="numpy", nranks=p, **kw)
        return out, st.plan

    failures, runs = run_cases(gemm, args.cases, args, True, label)
    print(f"[{label}] SELFTEST {'PASSED' if failures == 0 else 'FAILED'}: "
          f"{runs - failures}/{runs} cases", flush=True)
    multi_gpu.close()
    return 0 if failures == 0 else 1


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python -m sgemm.distributed.selftest",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=("numpy", "cupy"), default="numpy")
    ap.add_argument("--inproc", type=int, default=None, metavar="P",
                    help="no MPI: P ranks in this process (sgemm.multi_gpu)")
    ap.add_argument("--devices", type=lambda s: [int(x) for x in s.split(",")], default=None)
    ap.add_argument("--grid", type=lambda s: tuple(int(x) for x in s.lower().split("x")),
                    default=None, help="RxC (default: chosen from P)")
    ap.add_argument("--cases", choices=("all", "quick"), default="all")
    ap.add_argument("--case", type=_parse_case, action="append", default=None,
                    help="extra case m,n,k,ta,tb,alpha,beta,mb,nb,kb (replaces --cases)")
    ap.add_argument("--algorithm", default="auto",
                    help="auto, summa, ksplit, or a comma list: every case under each")
    ap.add_argument("--shapes", action="store_true",
                    help="also tall / wide / deep / square problems, the model's choice")
    ap.add_argument("--precision", default=None)
    ap.add_argument("--tol", type=float, default=None)
    ap.add_argument("--local-gemm", choices=("sgemm", "cublas"), default="sgemm")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds any wait for peers may take (default 60)")
    ap.add_argument("--watchdog", type=float, default=300.0,
                    help="seconds the whole run may take on any rank (default 300)")
    ap.add_argument("--fault", choices=("raise", "hang", "exit"), default=None)
    ap.add_argument("--fault-rank", type=int, default=1)
    ap.add_argument("--fault-step", type=int, default=2)
    ap.add_argument("--expect-size", type=int, default=None)
    args = ap.parse_args(argv)
    args.algorithms = [x.strip() for x in args.algorithm.split(",") if x.strip()]
    bad = [x for x in args.algorithms if x not in ("auto", "summa", "ksplit")]
    if bad:
        ap.error(f"--algorithm: unknown {bad}")
    if args.case:
        args.cases = args.case
    else:
        args.cases = CASES if args.cases == "all" else [CASES[i] for i in QUICK]
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.inproc is not None:
        return main_inproc(args)
    return main_mpi(args)


if __name__ == "__main__":
    sys.exit(main())
