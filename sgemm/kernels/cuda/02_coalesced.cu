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
// Measured (H200, sgemm bench, bench/results/ladder-h200-2026-11-22.json): 7.2 TFLOPS
// at 2048^3 against rung 1's 1.0, 5.8 at 4096^3.  Reproduce: sgemm bench
// --kernels 1,2 --sizes 2048,4096.
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
    sg::store_c(C, (long long)j * ldc + i, acc, alpha, beta, SGEMM_EPI, i, j);
}
