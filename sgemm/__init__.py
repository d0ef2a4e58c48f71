"""sgemm: hand-tuned FP32 GEMM kernels for NVIDIA GPUs, compiled at run time.

    import sgemm
    c = sgemm.gemm(a, b)                  # alpha*op(a)@op(b) + beta*c
    c = sgemm.matmul(a, b)                # NumPy matmul semantics, batched
    p = sgemm.plan(a, b, c); p.execute()  # choose and compile once, run often
    sgemm.blas.sgemm("N", "T", m, n, k, 1.0, A, lda, B, ldb, 0.0, C, ldc)

Importing needs no GPU; the first call compiles (and caches) what it runs.
"""
from . import blas
from .api import gemm, gemm_batched, matmul, plan
from .errors import (ArgumentError, ArgumentTypeError, CompileError, DeviceError,
                     OutOfMemoryError, SgemmError)
from .kernels.registry import KERNELS
from .plan import Plan

__version__ = "0.1.0"

__all__ = ["gemm", "gemm_batched", "matmul", "plan", "Plan", "blas", "KERNELS",
           "SgemmError", "ArgumentError", "ArgumentTypeError", "CompileError",
           "DeviceError", "OutOfMemoryError", "__version__"]
