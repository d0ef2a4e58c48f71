"""The integer tensor-core engine's arithmetic (Ozaki scheme II), on the host.

FP32 GEMM from INT8 products: scale each row of A and each column of B by a
power of two (a bound on its 2-norm to 2^alpha: moduli.py) and truncate to
integers (A', B'); for each of N = 7 or 8 pairwise
coprime moduli p_l <= 256 take symmetric residues, which fit int8; multiply
the residue matrices exactly (INT8 tensor cores, INT32 accumulators); rebuild
C' = A' B' from its residues (the Chinese remainder theorem, as one 64-bit
sum); undo the scaling.  Method: Ozaki, Uchino and Imamura, "Ozaki Scheme II: a
GEMM-oriented emulation of floating-point matrix multiplication using an
integer modular technique" (arXiv 2504.08009); GEMMul8 (RIKEN) implements it
unfused.  The code here is written from the method, not from theirs.

Status: the pipeline runs end to end on CuPy arrays
(runner.gemm: exponents and int8 residue planes, 40_int8x.cu; the INT8
GEMMs of all moduli in one launch, 42_int8_wgmma.cu on sm_90a and
41_int8_mma.cu elsewhere; Garner reconstruction with alpha/beta,
40_int8x.cu).  moduli.py holds what the kernels take from
the host (moduli, bit budgets, the reconstruction's constants); reference.py is an exact
NumPy emulation of the whole pipeline that the kernels match bit for bit --
every step but the scaling and the final conversion is integer arithmetic.
runner.py builds it once per problem shape (launches packed, workspace
laid out, the INT8 GEMMs queued before the one synchronisation).
sgemm.gemm(..., precision="int8x") runs it, and precision="fp32" where its
cost model (cost.py) beats tf32x3's (route.py), a repeated call through the
plan cache;
``sgemm.int8x.gemm`` is the same call.  Importing this package touches no
CUDA.

Wide exponent ranges within a row of A or a column of B are checked on the
GPU during the conversion (bound.py): precision="fp32" then runs tf32x3,
precision="int8x" warns (Int8xAccuracyWarning).
"""
from .bound import Int8xAccuracyWarning, ScalingLoss  # noqa: F401


def gemm(a, b, c=None, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, *, stream=None):
    """C = alpha op(a) op(b) + beta c through the integer engine, with
    sgemm.gemm's arguments, checks and result types."""
    from ..api import gemm as _gemm
    return _gemm(a, b, c, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b,
                 precision="int8x", stream=stream)
