// Rung 2 -- naive, coalesced: one thread per element of C, consecutive
// threads on consecutive rows i.
//
// Adds over rung 1: only the thread -> element mapping changes.  C is
// column-major, so rows i are the contiguous dimension: with i running
// fastest over threadIdx.x a warp stores 32 consecutive floats of one column
// of C and, when A is not transposed, loads 32 consecutive floats of one
// column of A per k step.  B(p, j) is the same address for the whole warp (a
// broadcast).  Exception: when TA, op(A)(i, p) = A[p + i*lda] is strided
// across the warp whatever the mapping; each lane walks its own row of the
// stored A, so the lines stay in L1 for the next k steps.  Shared-memory
// staging (rung 3) is what removes that case.
// Seed: seed 002 "Naive-Coalesced" (row-major there, so it makes the column
// index fastest; canonical column-major here makes the row index fastest).
// Edges: threads past the m x n edge return before the loop; no other guard.
// Measured (H100/H200): see docs/kernels.md, generated from bench/results/.
#include "common.cuh"

template <int BM, int BN, bool TA, bool TB>
__global__ void __launch_bounds__(BM * BN)
sgemm_coalesced(SGEMM_PARAMS) {
    SGEMM_BATCH_OFFSET();
    const int i = blockIdx.x * BM + threadIdx.x % BM;   // fastest: contiguous in C
    const int j = blockIdx.y * BN + threadIdx.x / BM;
    if (i >= M || j >= N) return;
    float acc = 0.0f;
    for (int p = 0; p < K; ++p)
        acc = fmaf(A[sg::a_off<TA>(i, p, lda)], B[sg::b_off<TB>(p, j, ldb)], acc);
    sg::store_c(C, (long long)j * ldc + i, acc, alpha, beta);
}
