"""The integer tensor-core engine's arithmetic (Ozaki scheme II), on the host.

FP32 GEMM from INT8 products: scale each row of A and each column of B by a
power of two and truncate to integers (A', B'); for each of N pairwise
coprime moduli p_l <= 256 take symmetric residues, which fit int8; multiply
the residue matrices exactly (INT8 tensor cores, INT32 accumulators); rebuild
C' = A' B' from its residues (the Chinese remainder theorem, here in Garner's
mixed-radix form, which needs only small-integer arithmetic); undo the
scaling.  Method: Ozaki, Uchino and Imamura, "Ozaki Scheme II: a
GEMM-oriented emulation of floating-point matrix multiplication using an
integer modular technique" (arXiv 2504.08009); GEMMul8 (RIKEN) implements it
unfused.  The code here is written from the method, not from theirs.

Status: the engine is not built.  This package holds what the kernels take
from the host (moduli, bit budgets, Garner constants: moduli.py), an exact
NumPy emulation of the whole pipeline (reference.py) that the kernels must
match -- every step but the scaling and the final conversion is integer
arithmetic, so correct kernels reproduce it bit for bit -- and the
conversion and reconstruction kernels' launches (device.py, 40_int8x.cu).
The INT8 GEMM is missing; no public entry point uses any of it.  Importing
this package touches no CUDA.
"""
