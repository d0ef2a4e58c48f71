"""The CPU backend under a real MPI launcher: ``mpiexec -n P python -m
sgemm.distributed.selftest`` for square and non-square grids, both
algorithms (SUMMA, the K split) and the cost model's choice for tall / wide
/ deep / square problems with 2, 4 and 8 ranks (8 on 2 cores: MPICH
oversubscribes), and the failure guard (a raising, hanging or exiting rank
ends the job non-zero within a bounded time, in SUMMA and in the K split).
Skipped when mpiexec or mpi4py is missing (``pip install mpich mpi4py``)."""
import os
import re
import shutil
import subprocess
import sys
import time
from functools import lru_cache
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi

REPO = Path(__file__).resolve().parents[2]


@lru_cache(maxsize=1)
def launcher():
    """[mpiexec, flags...] or None; prefers the one installed beside this Python."""
    import importlib.util
    if importlib.util.find_spec("mpi4py") is None:      # the selftest needs it
        return None
    cand = Path(sys.executable).parent / "mpiexec"
    exe = str(cand) if cand.exists() else shutil.which("mpiexec") or shutil.which("mpirun")
    if exe is None:
        return None
    try:
        ver = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    flags = []
    text = ver.stdout + ver.stderr
    if "Open MPI" in text or "OpenRTE" in text:
        flags = ["--oversubscribe"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            flags.append("--allow-run-as-root")
    return [exe, *flags]


def mpirun(n, *args, timeout=120, fake_gpu=False, script=None):
    """mpiexec -n n python [fake_gpu_run.py] (-m sgemm.distributed.selftest | script) args"""
    prefix = launcher()
    if prefix is None:
        pytest.skip("mpiexec / mpi4py not available (pip install mpich mpi4py)")
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONUNBUFFERED="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    py = [sys.executable] + ([str(Path(__file__).parent / "fake_gpu_run.py")] if fake_gpu else [])
    target = [script] if script else ["-m", "sgemm.distributed.selftest", "--expect-size", str(n)]
    cmd = [*prefix, "-n", str(n), *py, *target, *args]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO,
                           env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(cmd)} did not finish in {timeout} s (a hang):\n"
                    f"{(e.stdout or b'')[-3000:]}\n{(e.stderr or b'')[-3000:]}")
    return p, time.monotonic() - t0


@pytest.mark.parametrize("n,grid", [(1, None), (2, None), (3, None), (4, None), (6, None),
                                    (6, "3x2"), (4, "4x1"), (2, "2x1")])
def test_selftest_cpu_backend(n, grid):
    args = ["--grid", grid, "--cases", "quick"] if grid else []
    p, dt = mpirun(n, *args)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    assert "SELFTEST PASSED" in out, out[-4000:]
    assert "FAIL" not in p.stdout


def test_selftest_extra_case_transposes_uneven():
    p, _ = mpirun(4, "--case", "41,23,57,1,1,-0.75,0.25,6,5,9",
                  "--case", "17,31,13,0,1,1.0,0.0,3,4,2")
    assert p.returncode == 0 and "2/2 cases" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("n", [2, 4, 8])
def test_both_algorithms_and_the_models_choice(n):
    """Every quick case under SUMMA and under the K split, then the tall,
    wide, deep and square problems with the model's choice: correct against
    float64, and the plan each rank ran is the CPU model's (rank 0 decides
    and broadcasts it)."""
    from sgemm.distributed import cpu_machine, plan_gemm
    from sgemm.distributed.selftest import SHAPES
    p, _ = mpirun(n, "--cases", "quick", "--algorithm", "summa,ksplit", "--shapes")
    out = p.stdout + p.stderr
    assert p.returncode == 0 and "SELFTEST PASSED: 16/16" in p.stdout, out[-4000:]
    ran = dict(re.findall(r"choice (\w+): (.+)$", p.stdout, re.M))
    for name, (m, k_, kk) in SHAPES.items():
        assert ran[name] == plan_gemm(m, k_, kk, n, cpu_machine()).summary(), (name, out)
    assert ran["tall"].startswith(f"summa on {n}x1") and ran["wide"].startswith(f"summa on 1x{n}")
    assert ran["deep"].startswith("ksplit")
    assert len(re.findall(r" ok .* ksplit on", p.stdout)) == 6       # every quick case


@pytest.mark.parametrize("algorithm,mode", [("summa", "raise"), ("summa", "hang"),
                                            ("summa", "exit"), ("ksplit", "raise"),
                                            ("ksplit", "hang")])
def test_failing_rank_ends_the_job(algorithm, mode):
    """Rank 1 fails at its 2nd collective (a SUMMA step's broadcasts, a K-split
    reduce-scatter); the others are blocked in collectives.  The job must end
    non-zero well within the limit."""
    p, dt = mpirun(4, "--cases", "quick", "--algorithm", algorithm, "--fault", mode,
                   "--fault-rank", "1", "--fault-step", "2", "--timeout", "3",
                   "--watchdog", "30", timeout=90)
    err = p.stderr + p.stdout
    assert p.returncode != 0, err[-3000:]
    assert dt < 60, f"took {dt:.0f} s"
    where = "panel broadcast" if algorithm == "summa" else "reduce-scatter"
    assert f"injected fault on rank 1 at {where} 2" in err
    if mode == "raise":
        assert "[sgemm.distributed] rank 1/4" in err and "RuntimeError" in err
    if mode == "hang":
        assert "timed out" in err or "watchdog" in err


@pytest.mark.parametrize("n", [2, 4])
def test_gpu_code_path_on_fake_cupy(n):
    """The CuPy+NCCL backend's multi-process code (device choice, NCCL ids
    over MPI, row/column communicators, events, grouped broadcasts) on a fake
    CuPy whose NCCL broadcasts are MPI broadcasts."""
    p, _ = mpirun(n, "--backend", "cupy", "--cases", "quick", "--algorithm", "summa,ksplit",
                  fake_gpu=True)
    assert p.returncode == 0 and "SELFTEST PASSED: 12/12" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("algorithm", ["summa", "ksplit"])
def test_bench_mpi_launcher_on_fake_cupy(tmp_path, algorithm):
    out = tmp_path / "mpi.json"
    p, _ = mpirun(4, "--launcher", "mpi", "--sizes", "64", "--shapes", "16x16x4096",
                  "--algorithm", algorithm, "--reps", "2", "--out", str(out), fake_gpu=True,
                  script=str(REPO / "bench" / "distributed_bench.py"))
    assert p.returncode == 0, p.stdout + p.stderr
    import json
    runs = json.loads(out.read_text())["runs"]
    assert runs[0]["scheme"] == algorithm and runs[0]["launcher"] == "mpi"
    assert runs[0]["gpus"] == 4 and runs[0]["check_ok"] and len(runs[0]["per_rank"]) == 4
    deep = runs[1]
    assert deep["algorithm"] == algorithm
    assert deep["scheme"] == "dist_shape" and deep["shape"] == [16, 16, 4096], deep
    assert deep["check_ok"] and deep["predicted_exposed_comm_s"] >= 0
    assert deep["plan"]["algorithm"] == algorithm and "exposed_comm_s" in deep
