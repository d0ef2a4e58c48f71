// Rung 8 -- warp tiling: block tile -> warp tiles -> thread tiles of 4x4 sub-tiles.
//
// Adds over rung 7: a three-level tiling.  A block of `threads` threads owns a
// BM x BN tile of C; each warp owns a WM x WN piece of it; each thread owns
// TM x TN accumulators laid out as (TM/4) x (TN/4) sub-tiles of 4 x 4, the
// sub-tiles 4*(WM/TM) rows (4*(WN/TN) columns) apart.  Lanes run along m first,
// so a warp's LDS.128 of one sub-tile reads 32 contiguous floats: one
// conflict-free wavefront (B: 16 floats, broadcast to the other lanes).  With
// 8x8 per thread a k-step is 64 FFMA for 4 LDS.128 (16x8: 128 for 6).
// Both operands sit k-major in shared memory (S[k][r], row pitch R+4): the
// k-contiguous operand (A with TA, B without TB -- so B in the common
// canonical NN case) is transposed while it is stored, by a lane mapping
// (pairs of lanes along k, 16 rows deep) that keeps the STS.32 conflict-free
// with the 4-float pad; see tile_loaders.cuh.  Global loads are float4 along
// whichever dimension is contiguous (ALIGNED), each thread walking one 64-bit
// pointer over a 2-D slot grid (no per-slot 64-bit addresses in registers).
// One shared buffer, two __syncthreads per k-tile (rung 9 removes one).
// Seeds: seed 002 kernels 7-8 (warptiling, float4), seed 003 kernels 8-9
// (128x128x8 tile, 8x8 micro-tile, warp-level tiling).
// Edges: blocks that stick out of C are a separate instantiation (EDGE): their
// loads check rows and k and zero-fill shared memory (scalar where a float4
// would straddle), their FFMA loop is unrolled by 2 only (keeps registers <=
// 128), their epilogue checks both indices.  Interior blocks check nothing
// except k in the last, partial k-tile, and store float4 along m (ALIGNED).
// ALIGNED=false: every global access is a scalar load/store (offset views).
// Measured (H200, sgemm bench, bench/results/ladder-h200-2026-11-22.json):
// large 128x128x16, 8x8/thread, 44.6 TFLOPS at 4096^3 (87% of cuBLAS) against
// rung 7's 38.7. Reproduce: sgemm bench --kernels 7,8 --sizes 4096. Tile and BK
// choices, and the other transposes: docs/notes/ffma-fast.md.
#include "tile_loaders.cuh"

namespace sg {

// Block (tm, tn) of C.  EDGE: the block pokes out of C, so every load checks
// its row and the epilogue checks both indices; interior blocks check nothing
// except k in the last, partial k-tile.
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS,
          bool TA, bool TB, bool ALIGNED, bool EDGE>
__device__ __forceinline__ void warptile_block(SGEMM_PARAMS, float* As, float* Bs) {
    constexpr int LDA = BM + 4, LDB = BN + 4;
    constexpr int WTM = WM / TM, WTN = WN / TN;      // lanes along m, along n
    static_assert(WTM * WTN == 32, "a warp tile must hold exactly 32 thread tiles");
    static_assert((BM / WM) * (BN / WN) * 32 == THREADS, "warps must tile the block");
    static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tiles are made of 4x4 sub-tiles");

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp % (BM / WM)) * WM, wn0 = (warp / (BM / WM)) * WN;
    const int lm = lane % WTM, ln = lane / WTM;
    const int bm0 = blockIdx.x * BM, bn0 = blockIdx.y * BN;
    const int rowsA = M - bm0, rowsB = N - bn0;

    // A is k-contiguous when TA, B when !TB.
    RegStage<BM, BK, THREADS, TA, ALIGNED> la(A + poff<TA>(bm0, 0, lda), lda, tid);
    RegStage<BN, BK, THREADS, !TB, ALIGNED> lb(B + poff<!TB>(bn0, 0, ldb), ldb, tid);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    const float* as = As + wm0 + lm * 4;
    const float* bs = Bs + wn0 + ln * 4;
    for (int k0 = 0; k0 < K; k0 += BK) {
        if (k0 + BK <= K) {
            la.template load<false, EDGE>(rowsA, K - k0, tid);
            lb.template load<false, EDGE>(rowsB, K - k0, tid);
        } else {
            la.template load<true, EDGE>(rowsA, K - k0, tid);
            lb.template load<true, EDGE>(rowsB, K - k0, tid);
        }
        la.store(As, tid);
        lb.store(Bs, tid);
        __syncthreads();
        mma_ktile<BK, TM, TN, WTM * 4, WTN * 4, LDA, LDB, EDGE ? 2 : BK>(as, bs, acc);
        __syncthreads();
        la.advance();
        lb.advance();
    }

    store_tile<TM, TN, WTM * 4, WTN * 4, ALIGNED, EDGE>(acc, C, ldc, bm0 + wm0 + lm * 4,
                                                        bn0 + wn0 + ln * 4, M, N, alpha, beta,
                                                        SGEMM_EPI);
}

}  // namespace sg

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS,
          bool TA, bool TB, bool ALIGNED>
__global__ void __launch_bounds__(THREADS, (TM * TN <= 64 && THREADS <= 256) ? 2 : 1)
sgemm_warptile(SGEMM_PARAMS) {
    __shared__ __align__(16) float As[BK * (BM + 4)];   // As[k][m]
    __shared__ __align__(16) float Bs[BK * (BN + 4)];   // Bs[k][n]
    SGEMM_BATCH_OFFSET();
    if ((blockIdx.x + 1) * BM <= M && (blockIdx.y + 1) * BN <= N)
        sg::warptile_block<BM, BN, BK, WM, WN, TM, TN, THREADS, TA, TB, ALIGNED, false>(
            SGEMM_ARGS, As, Bs);
    else
        sg::warptile_block<BM, BN, BK, WM, WN, TM, TN, THREADS, TA, TB, ALIGNED, true>(
            SGEMM_ARGS, As, Bs);
}
