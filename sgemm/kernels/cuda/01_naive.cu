// Rung 1 -- naive: one thread per element of C.
//
// Adds: nothing; this is the baseline every later rung is measured against.
// Seed: seed 003 kernel 1, seed 002 "Naive".
// Mapping: consecutive threads take consecutive *columns* j of the
// column-major C, so a warp's loads of A are a broadcast but its loads of B
// and its stores to C are strided by ldb/ldc: uncoalesced on purpose (rung 2
// flips the mapping and is the lesson).
// Measured (H200, sgemm bench, bench/results/ladder-h200-2026-11-22.json): 1.0 TFLOPS
// at 4096^3, 2% of cuBLAS.  Reproduce: sgemm bench --kernels 1,2 --sizes 4096.
#include "common.cuh"

template <int BM, int BN, bool TA, bool TB>
__global__ void __launch_bounds__(BM * BN)
sgemm_naive(SGEMM_PARAMS) {
    SGEMM_BATCH_OFFSET();
    const int j = blockIdx.y * BN + threadIdx.x % BN;
    const int i = blockIdx.x * BM + threadIdx.x / BN;
    if (i >= M || j >= N) return;
    float acc = 0.0f;
    for (int p = 0; p < K; ++p)
        acc = fmaf(A[sg::a_off<TA>(i, p, lda)], B[sg::b_off<TB>(p, j, ldb)], acc);
    sg::store_c(C, (long long)j * ldc + i, acc, alpha, beta, SGEMM_EPI, i, j);
}
