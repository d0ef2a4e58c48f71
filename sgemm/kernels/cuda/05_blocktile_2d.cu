// Rung 5 -- 2-D register blocking: each thread computes a TM x TN block of C
// as a sum of outer products.
//
// Adds over rung 4: per k step a thread copies TM values of the A tile and TN
// values of the B tile into registers and does their TM x TN outer product,
// so shared loads per FMA drop from 1 + 1/TM to 1/TN + 1/TM (0.25 at 8x8),
// and the accumulators, fragments and FMAs are all independent (ILP).
// Thread layout: ti = tid % (BM/TM) runs fastest.  A thread's rows are
// i = ti + r*(BM/TM) and its columns j = tj + c*(BN/TN) (interleaved): at
// every r a warp reads consecutive words of the A tile (conflict-free), the B
// tile read is a broadcast over the threads sharing tj, and each store of C
// covers consecutive rows of a column.
// Seed: seed 001 Algorithm 1 (block / thread / register levels, two
// parameter sets picked by size), seed 003 kernels 7 (64x64x16, 4x4:
// "small") and 8 (128x128x8, 8x8: "large"), seed 002 "2D Block Tiling".
// Global loads and edges: as rung 4 -- coalesced for every transpose, rows /
// columns past the m/n edge redirected to the last valid one (seed 004
// section 8.1, observation 7), only the last partial k-tile guarded and
// zero-filled, stores guarded per element.  The transposed tile stores (TA
// for A, !TB for B) still conflict; rung 7 removes that.
// Measured (H200, sgemm bench, bench/results/ladder-h200-2026-11-22.json): 28.6 TFLOPS
// at 4096^3 against rung 4's 11.0 (ncu at 2048^3: FMA pipe 20% -> 50% busy).
// Reproduce: sgemm bench --kernels 4,5 --sizes 4096.
#include "common.cuh"

namespace rung5 {

// Same slab copy as rung 4: S[p * LD + x] = op(X)(x0 + x, k0 + p) with the
// thread index along the contiguous dimension (KCONT: along k), x clamped to
// xmax - 1, p >= K - k0 zero-filled when KGUARD.
template <int XS, int BK, int LD, int T, bool KCONT, bool KGUARD>
__device__ __forceinline__ void load_tile(float* S, const float* X, long long ld,
                                          int x0, int xmax, int k0, int K) {
    constexpr int CONT = KCONT ? BK : XS;
#pragma unroll
    for (int s = 0; s < XS * BK / T; ++s) {
        const int e = threadIdx.x + s * T;
        const int c = e % CONT, r = e / CONT;
        const int p = KCONT ? c : r, x = KCONT ? r : c;
        const long long xg = min(x0 + x, xmax - 1);
        const long long off = KCONT ? xg * ld + (k0 + p) : (long long)(k0 + p) * ld + xg;
        S[p * LD + x] = (!KGUARD || k0 + p < K) ? X[off] : 0.0f;
    }
}

}  // namespace rung5

template <int BM, int BN, int BK, int TM, int TN, bool TA, bool TB>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_blocktile_2d(SGEMM_PARAMS) {
    constexpr int RM = BM / TM, RN = BN / TN;   // threads along i and along j
    constexpr int T = RM * RN;
    static_assert(BM % TM == 0 && BN % TN == 0, "TM, TN must divide BM, BN");
    static_assert(BM * BK % T == 0 && BN * BK % T == 0, "tile loads must split evenly");
    __shared__ float As[BK * BM];   // As[p * BM + i] = op(A)(bi + i, k0 + p)
    __shared__ float Bs[BK * BN];   // Bs[p * BN + j] = op(B)(k0 + p, bj + j)
    SGEMM_BATCH_OFFSET();

    const int ti = threadIdx.x % RM, tj = threadIdx.x / RM;
    const int bi = blockIdx.x * BM, bj = blockIdx.y * BN;
    float acc[TN][TM];
#pragma unroll
    for (int c = 0; c < TN; ++c)
#pragma unroll
        for (int r = 0; r < TM; ++r) acc[c][r] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        if (k0 + BK <= K) {   // full k-tile: unguarded loads
            rung5::load_tile<BM, BK, BM, T, TA, false>(As, A, lda, bi, M, k0, K);
            rung5::load_tile<BN, BK, BN, T, !TB, false>(Bs, B, ldb, bj, N, k0, K);
        } else {
            rung5::load_tile<BM, BK, BM, T, TA, true>(As, A, lda, bi, M, k0, K);
            rung5::load_tile<BN, BK, BN, T, !TB, true>(Bs, B, ldb, bj, N, k0, K);
        }
        __syncthreads();
#pragma unroll
        for (int p = 0; p < BK; ++p) {
            float a[TM], b[TN];
#pragma unroll
            for (int r = 0; r < TM; ++r) a[r] = As[p * BM + ti + r * RM];
#pragma unroll
            for (int c = 0; c < TN; ++c) b[c] = Bs[p * BN + tj + c * RN];
#pragma unroll
            for (int c = 0; c < TN; ++c)
#pragma unroll
                for (int r = 0; r < TM; ++r) acc[c][r] = fmaf(a[r], b[c], acc[c][r]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int c = 0; c < TN; ++c) {
        const int j = bj + tj + c * RN;
#pragma unroll
        for (int r = 0; r < TM; ++r) {
            const int i = bi + ti + r * RM;
            if (i < M && j < N) sg::store_c(C, (long long)j * ldc + i, acc[c][r], alpha, beta);
        }
    }
    // the epilogue in a second pass (common.cuh, epi_pass4 and epi_grid)
    if (epi) sg::epi_grid(C, ldc, M, N, bi + ti, RM, TM, bj + tj, RN, TN, SGEMM_EPI);
}
