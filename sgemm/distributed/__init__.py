"""Multi-GPU / multi-node SGEMM: SUMMA on a 2-D block-cyclic process grid.

One process per GPU under MPI (``mpirun -n P python app.py``), NCCL for the
panel broadcasts, sgemm.gemm for the local products; or the same algorithm
on CPUs with NumPy blocks and MPI collectives (what CI runs).  For deep
products (k >> m, n) a K split with a reduce-scatter of C (ksplit.py).  A cost
model (model.py) picks the algorithm, process grid and panel width per
problem: ``ctx.plan(m, n, k)`` / ``ctx.explain(m, n, k)``, or
``plan_gemm(m, n, k, nprocs, machine)`` without any process.  See
docs/distributed.md.

    from sgemm import distributed as dist

    def main():
        ctx = dist.init("cupy")                   # "numpy" on CPUs
        C = ctx.gemm_global(A, B)                  # A, B on rank 0; C back on rank 0

    dist.run(main, comm=MPI.COMM_WORLD)            # any failing rank aborts the job

Importing this package needs neither mpi4py nor CuPy; ``init`` needs mpi4py,
the "cupy" backend CuPy with NCCL.
"""
from .backend import COMM, COMPUTE, Backend, BcastOp, RankContext, ReduceScatterOp
from .context import DistContext, init, local
from .grid import ProcessGrid, choose_grid
from .guard import (DistributedError, DistributedTimeoutError, Watchdog, abort_on_error,
                    ensure_nccl_env, run)
from .ksplit import KSplitLayout, ksplit, ksplit_layout
from .layout import AxisCyclic, Block, BlockCyclic, GemmLayout, default_kb, gemm_layout
from .model import DistMachine, DistPlan, cpu_machine, gpu_machine, plan_gemm
from .redistribute import gather_matrix, scatter_matrix
from .summa import RankStats, SummaStats, summa

__all__ = [
    "init", "local", "DistContext", "ProcessGrid", "choose_grid",
    "AxisCyclic", "Block", "BlockCyclic", "GemmLayout", "gemm_layout", "default_kb",
    "summa", "SummaStats", "RankStats", "scatter_matrix", "gather_matrix",
    "KSplitLayout", "ksplit", "ksplit_layout",
    "plan_gemm", "DistPlan", "DistMachine", "cpu_machine", "gpu_machine",
    "Backend", "BcastOp", "ReduceScatterOp", "RankContext", "COMPUTE", "COMM",
    "run", "abort_on_error", "Watchdog", "ensure_nccl_env",
    "DistributedError", "DistributedTimeoutError",
]
