// Rung 9 -- shared-memory double buffer + register prefetch of the next k-tile.
//
// Adds over rung 8: two shared buffers.  While the warps compute on buffer
// `cur`, each thread already has the *next* k-tile's float4 global loads in
// flight into registers (issued before the FFMA loop, consumed after it), then
// writes them into buffer `cur^1`.  The global-load latency hides behind the BK
// k-steps of FFMA, and one __syncthreads per k-tile suffices: the buffer
// written in iteration t was last read in iteration t-1, which ended with the
// barrier.  Costs R*BK/threads registers per operand live across the FFMAs.
// Unaligned (scalar) instantiations issue the loads after the FFMAs instead:
// the scalar slots' registers would not fit next to 64 accumulators.
// Seeds: seed 000 algorithms 4-5 (double buffering), seed 003 kernels 10-11
// (prefetch, then double buffer to drop a __syncthreads).
// Edges: as rung 8 (EDGE instantiation, zero-filled loads, guarded epilogue).
// Measured (H200, 2026-11-21, canonical NN, median of 25, cuBLAS 50.1/51.4/51.2
// TFLOPS at 2048/4096/8192^3; bench/results/ffma-tuning-h200-2026-11-21.json):
//   large  256x128x8, warps 128x32, 16x8/thread, 1 block/SM:
//          47.9 / 48.7 / 49.4 TFLOPS = 95.6 / 94.8 / 96.4% of cuBLAS -- the
//          fastest FFMA kernel of rungs 8-11; 4096^3 NT 49.6, TN 46.2, TT 47.2.
//   medium 128x128x16, 8x8/thread, 2 blocks/SM: 46.1 / 46.9 / 48.4
//          (4096^3: NT 47.7, TN 40.1, TT 46.4; NN unaligned 39.7).
//   Same 256x128x8 tile with warps of 64x64 and 8x16/thread: 43.5/44.3/44.5.
// Rung 9 beats rung 8 (+7-9% on 128x128x16) and also rung 10: the register
// path transposes the k-contiguous operand with LDG.128 + STS, where a cp.async
// pipeline needs 4-byte copies for it (see rung 10).
#include "tile_loaders.cuh"

namespace sg {

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS,
          bool TA, bool TB, bool ALIGNED, bool EDGE>
__device__ __forceinline__ void double_buffer_block(SGEMM_PARAMS, float (*As)[BK * (BM + 4)],
                                                    float (*Bs)[BK * (BN + 4)]) {
    constexpr int LDA = BM + 4, LDB = BN + 4;
    constexpr int WTM = WM / TM, WTN = WN / TN;
    static_assert(WTM * WTN == 32, "a warp tile must hold exactly 32 thread tiles");
    static_assert((BM / WM) * (BN / WN) * 32 == THREADS, "warps must tile the block");
    static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tiles are made of 4x4 sub-tiles");

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp % (BM / WM)) * WM, wn0 = (warp / (BM / WM)) * WN;
    const int lm = lane % WTM, ln = lane / WTM;
    const int bm0 = blockIdx.x * BM, bn0 = blockIdx.y * BN;
    const int rowsA = M - bm0, rowsB = N - bn0;

    RegStage<BM, BK, THREADS, TA, ALIGNED> la(A + poff<TA>(bm0, 0, lda), lda, tid);
    RegStage<BN, BK, THREADS, !TB, ALIGNED> lb(B + poff<!TB>(bn0, 0, ldb), ldb, tid);
    auto load = [&](int kend) {   // kend = valid k left from this tile
        if (kend >= BK) {
            la.template load<false, EDGE>(rowsA, kend, tid);
            lb.template load<false, EDGE>(rowsB, kend, tid);
        } else {
            la.template load<true, EDGE>(rowsA, kend, tid);
            lb.template load<true, EDGE>(rowsB, kend, tid);
        }
    };

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    // Prologue: tile 0 into buffer 0.
    load(K);
    la.store(As[0], tid);
    lb.store(Bs[0], tid);
    __syncthreads();

    const int a_off = wm0 + lm * 4, b_off = wn0 + ln * 4;
    int cur = 0;
    // ALIGNED: the next tile's float4 loads fly during the FFMAs.  Unaligned
    // (scalar) loads are issued after the FFMAs instead: their registers and
    // addresses would not fit next to the 64 accumulators without spills.
    constexpr bool EARLY = ALIGNED;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (EARLY && more) {
            la.advance();
            lb.advance();
            load(K - k0 - BK);
        }
        mma_ktile<BK, TM, TN, WTM * 4, WTN * 4, LDA, LDB, EDGE ? 2 : BK>(As[cur] + a_off,
                                                                        Bs[cur] + b_off, acc);
        if (more) {
            if (!EARLY) {
                la.advance();
                lb.advance();
                load(K - k0 - BK);
            }
            la.store(As[cur ^ 1], tid);
            lb.store(Bs[cur ^ 1], tid);
        }
        __syncthreads();
        cur ^= 1;
    }

    store_tile<TM, TN, WTM * 4, WTN * 4, ALIGNED, EDGE>(acc, C, ldc, bm0 + a_off, bn0 + b_off, M,
                                                        N, alpha, beta);
}

// Interior blocks take the unguarded instantiation, edge blocks the guarded one.
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS,
          bool TA, bool TB, bool ALIGNED>
__device__ __forceinline__ void double_buffer_dispatch(SGEMM_PARAMS, float (*As)[BK * (BM + 4)],
                                                       float (*Bs)[BK * (BN + 4)]) {
    if ((blockIdx.x + 1) * BM <= M && (blockIdx.y + 1) * BN <= N)
        double_buffer_block<BM, BN, BK, WM, WN, TM, TN, THREADS, TA, TB, ALIGNED, false>(
            M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, As, Bs);
    else
        double_buffer_block<BM, BN, BK, WM, WN, TM, TN, THREADS, TA, TB, ALIGNED, true>(
            M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, As, Bs);
}

}  // namespace sg

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS,
          bool TA, bool TB, bool ALIGNED>
__global__ void __launch_bounds__(THREADS, (TM * TN <= 64 && THREADS <= 256) ? 2 : 1)
sgemm_double_buffer(SGEMM_PARAMS) {
    constexpr int A_FLOATS = BK * (BM + 4), B_FLOATS = BK * (BN + 4);
    SGEMM_BATCH_OFFSET();
    // Tiles up to 48 KB live in static shared memory; bigger ones (256x128x16:
    // 50 KB, over the static limit) in dynamic shared memory, which the
    // launcher opts in to.  Not dynamic for all: on sm_90a the 128x128x16
    // instantiation then needs one more register and spills at its 128 cap.
    if constexpr (2 * (A_FLOATS + B_FLOATS) * 4 <= 48 * 1024) {
        __shared__ __align__(16) float As[2][A_FLOATS];
        __shared__ __align__(16) float Bs[2][B_FLOATS];
        sg::double_buffer_dispatch<BM, BN, BK, WM, WN, TM, TN, THREADS, TA, TB, ALIGNED>(
            M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, As, Bs);
    } else {
        extern __shared__ float4 smem4[];
        auto As = reinterpret_cast<float (*)[A_FLOATS]>(smem4);
        auto Bs = reinterpret_cast<float (*)[B_FLOATS]>(reinterpret_cast<float*>(smem4) +
                                                        2 * A_FLOATS);
        sg::double_buffer_dispatch<BM, BN, BK, WM, WN, TM, TN, THREADS, TA, TB, ALIGNED>(
            M, N, K, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, As, Bs);
    }
}
