"""The canonical problem every kernel sees (see kernels/cuda/common.cuh).

    C[m x n, column-major, ldc] = act(alpha * op(A) * op(B) + beta * C + bias)

``layout.normalize`` builds one of these from any accepted user call; the
BLAS front end builds one directly.  Pointers are integers (device addresses);
leading dimensions and batch strides are in elements.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One canonical GEMM, as the module docstring states it."""
    m: int
    n: int
    k: int
    ta: bool            # op(A) = A^T (A stored k x m)
    tb: bool            # op(B) = B^T (B stored n x k)
    a: int              # device pointer to A (element 0 of batch entry 0)
    lda: int
    b: int
    ldb: int
    c: int
    ldc: int
    alpha: float = 1.0
    beta: float = 0.0
    batch: int = 1
    stride_a: int = 0   # elements between batch entries (0: broadcast)
    stride_b: int = 0
    stride_c: int = 0
    bias: int = 0       # device pointer of the bias vector (0: none)
    epi: int = 0        # epilogue code (epilogue.py): activation | bias axis; 0: none

    @property
    def flops(self) -> int:
        """2*m*n*k per batch entry (the convention cuBLAS and the seeds use)."""
        return 2 * self.m * self.n * self.k * self.batch

    @property
    def aligned(self) -> bool:
        """True when every row of every operand starts on a 16-byte boundary,
        so float4 loads along the contiguous dimension are legal."""
        # bitwise: x | y has its low bits clear exactly when both do (Python's
        # ints are two's complement, so negative strides too); the planner
        # asks this once per prediction (generators cost 6 % of its time)
        return ((self.a | self.b | self.c) & 15 == 0
                and (self.lda | self.ldb | self.ldc) & 3 == 0
                and (self.batch == 1 or (self.stride_a | self.stride_b | self.stride_c) & 3 == 0))

    @property
    def transposes(self) -> str:
        return ("T" if self.ta else "N") + ("T" if self.tb else "N")
