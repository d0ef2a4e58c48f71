"""Run a module or script with the fake CuPy installed (and sgemm.plan/gemm on
NumPy), so the GPU code path runs under mpiexec on a CPU-only machine:

    mpiexec -n 4 python tests/distributed/fake_gpu_run.py -m sgemm.distributed.selftest --backend cupy
    mpiexec -n 4 python tests/distributed/fake_gpu_run.py bench/distributed_bench.py --launcher mpi ...
"""
import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fake_cupy  # noqa: E402

fake_cupy.install()
fake_cupy.patch_sgemm()
if sys.argv[1] == "-m":
    sys.argv = sys.argv[2:]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
