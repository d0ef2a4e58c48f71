"""sgemm: hand-tuned FP32 GEMM kernels for NVIDIA GPUs, compiled at run time.

    import sgemm
    c = sgemm.gemm(a, b)                  # alpha*op(a)@op(b) + beta*c
    c = sgemm.matmul(a, b)                # NumPy matmul semantics, batched
    sgemm.blas.sgemm("N", "T", m, n, k, 1.0, A, lda, B, ldb, 0.0, C, ldc)

Importing needs no GPU; the first call compiles (and caches) what it runs.
"""
__version__ = "0.1.0"
