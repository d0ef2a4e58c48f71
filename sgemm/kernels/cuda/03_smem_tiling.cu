// Rung 3 -- shared-memory tiling with square BS x BS tiles.
//
// Adds over rung 2: each block stages a BS x BS tile of op(A) and of op(B) in
// shared memory, so every element fetched from global memory is used BS times
// instead of once.  Global loads are coalesced for every transpose: the thread
// index runs along whichever dimension is contiguous in memory.  Tiles are
// padded by one float so the transposed store into shared memory does not
// put a whole warp on one bank.
// Seed: seed 002 "Shared Memory Cache-Blocking", seed 003 kernel 2, seed 001.
// Edges: out-of-range elements of the A/B tiles are loaded as zero, so the
// inner product needs no guard; only the final store is guarded.
// Measured (H200, sgemm bench, bench/results/ladder-h200-2026-11-22.json): 6.8 TFLOPS
// at 4096^3 against rung 2's 5.8; ncu shows the shared-memory pipe as the new
// limit (two shared loads per FMA: MIO throttle).  Reproduce: sgemm bench
// --kernels 2,3 --sizes 4096; sgemm profile 3 --size 2048 2048 2048.
#include "common.cuh"

template <int BS, bool TA, bool TB>
__global__ void __launch_bounds__(BS * BS)
sgemm_smem(SGEMM_PARAMS) {
    __shared__ float As[BS][BS + 1];  // As[p][i] = op(A)(bi + i, k0 + p)
    __shared__ float Bs[BS][BS + 1];  // Bs[p][j] = op(B)(k0 + p, bj + j)
    SGEMM_BATCH_OFFSET();

    const int tx = threadIdx.x % BS, ty = threadIdx.x / BS;
    const int bi = blockIdx.x * BS, bj = blockIdx.y * BS;
    float acc = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BS) {
        // A: contiguous along i when !TA, along p when TA; tx follows it.
        {
            const int i = TA ? ty : tx, p = TA ? tx : ty;
            const bool in = bi + i < M && k0 + p < K;
            As[p][i] = in ? A[sg::a_off<TA>(bi + i, k0 + p, lda)] : 0.0f;
        }
        // B: contiguous along p when !TB, along j when TB.
        {
            const int p = TB ? ty : tx, j = TB ? tx : ty;
            const bool in = k0 + p < K && bj + j < N;
            Bs[p][j] = in ? B[sg::b_off<TB>(k0 + p, bj + j, ldb)] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int p = 0; p < BS; ++p) acc = fmaf(As[p][tx], Bs[p][ty], acc);
        __syncthreads();
    }
    const int i = bi + tx, j = bj + ty;
    if (i < M && j < N) sg::store_c(C, (long long)j * ldc + i, acc, alpha, beta, SGEMM_EPI, i, j);
}
