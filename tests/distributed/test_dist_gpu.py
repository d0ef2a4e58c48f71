"""GPU runs of the distributed GEMM (skipped without a GPU; the multi-GPU
ones need several).  NCCL_NVLS_ENABLE=0 is forced by the library before any
communicator exists."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sgemm.distributed.selftest import CASES, QUICK, error, make_operands

REPO = Path(__file__).resolve().parents[2]


def _cupy_devices():
    cupy = pytest.importorskip("cupy")
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001
        n = 0
    if n == 0:
        pytest.skip("no CUDA device")
    return cupy, n


@pytest.mark.gpu
@pytest.mark.parametrize("local_gemm", ["sgemm", "cublas"])
def test_multi_gpu_one_device(local_gemm):
    cupy, _ = _cupy_devices()
    from sgemm import multi_gpu
    for ci in QUICK:
        case = CASES[ci]
        m, n, k, ta, tb, alpha, beta, mb, nb, kb = case
        a, b, c0 = make_operands(case, ci)
        out = multi_gpu.gemm(a, b, None if c0 is None else c0.copy(), devices=[0], alpha=alpha,
                             beta=beta, trans_a=ta, trans_b=tb, block=(mb, nb, kb),
                             local_gemm=local_gemm)
        assert isinstance(out, np.ndarray)
        assert error(case, a, b, c0, out) < 2e-5, case
    multi_gpu.close()


@pytest.mark.gpu
@pytest.mark.multigpu
@pytest.mark.parametrize("local_gemm", ["sgemm", "cublas"])
def test_multi_gpu_all_devices(local_gemm):
    cupy, ndev = _cupy_devices()
    if ndev < 2:
        pytest.skip("needs 2 GPUs")
    from sgemm import multi_gpu
    for p in sorted({2, ndev}):
        for ci, case in enumerate(CASES):
            m, n, k, ta, tb, alpha, beta, mb, nb, kb = case
            a, b, c0 = make_operands(case, ci)
            with cupy.cuda.Device(p - 1):
                ga, gb = cupy.asarray(a), cupy.asarray(b)
                gc = None if c0 is None else cupy.asarray(c0)
            out = multi_gpu.gemm(ga, gb, gc, devices=list(range(p)), alpha=alpha, beta=beta,
                                 trans_a=ta, trans_b=tb,
                                 block=None if mb is None else (mb, nb, kb),
                                 local_gemm=local_gemm)
            assert out.device.id == p - 1
            assert error(case, a, b, c0, cupy.asnumpy(out)) < 2e-5, (p, case)
    assert os.environ.get("NCCL_NVLS_ENABLE") == "0"
    multi_gpu.close()


@pytest.mark.gpu
@pytest.mark.multigpu
@pytest.mark.mpi
def test_mpi_nccl_selftest():
    _, ndev = _cupy_devices()
    if ndev < 2:
        pytest.skip("needs 2 GPUs")
    sys.path.insert(0, str(Path(__file__).parent))
    from test_dist_mpi import launcher
    prefix = launcher()
    if prefix is None:
        pytest.skip("mpiexec / mpi4py not available")
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", PYTHONPATH=str(REPO))
    p = subprocess.run([*prefix, "-n", "2", sys.executable, "-m", "sgemm.distributed.selftest",
                        "--backend", "cupy", "--expect-size", "2", "--algorithm", "summa,ksplit",
                        "--shapes"], capture_output=True,
                       text=True, timeout=600, cwd=REPO, env=env)
    assert p.returncode == 0 and "SELFTEST PASSED" in p.stdout, p.stdout + p.stderr


@pytest.mark.gpu
@pytest.mark.multigpu
def test_multi_gpu_ksplit_and_model_choice():
    """Both algorithms on every GPU, and the model's choice for the selftest's
    tall / wide / deep / square problems (the GPU model's plan)."""
    cupy, ndev = _cupy_devices()
    if ndev < 2:
        pytest.skip("needs 2 GPUs")
    from sgemm import multi_gpu
    from sgemm.distributed.selftest import SHAPES
    devices = list(range(ndev))
    for alg in ("summa", "ksplit"):
        for ci in QUICK:
            case = CASES[ci]
            m, n, k, ta, tb, alpha, beta, mb, nb, kb = case
            a, b, c0 = make_operands(case, ci)
            out = multi_gpu.gemm(a, b, None if c0 is None else c0.copy(), devices=devices,
                                 alpha=alpha, beta=beta, trans_a=ta, trans_b=tb,
                                 algorithm=alg)
            assert error(case, a, b, c0, out) < 2e-5, (alg, case)
    for name, (m, n, k) in SHAPES.items():
        case = (m, n, k, False, False, 1.0, 0.0, None, None, None)
        a, b, _ = make_operands(case, 7)
        out, st = multi_gpu.gemm(a, b, devices=devices, return_stats=True)
        assert st.plan == multi_gpu.plan(m, n, k, devices=devices), name
        assert st.timing == "cuda events" and st.exposed_comm_s >= 0
        assert error(case, a, b, None, out) < 2e-5, name
    multi_gpu.close()
