// Rung 10 -- cp.async (LDGSTS) multi-stage pipeline in dynamic shared memory.
//
// Adds over rung 9: global -> shared copies bypass the registers.  STAGES
// (>= 2) k-tiles live in dynamic shared memory; the copies of tile t+STAGES-1
// are issued while tile t is being multiplied, so global latency hides behind
// STAGES-1 k-tiles of FFMA and no registers hold prefetched data.  Per k-tile:
// cp.async.wait_group(STAGES-2); __syncthreads(); issue the next tile into the
// stage read in the previous iteration; commit (empty groups keep the count);
// FFMA loop.  One barrier per k-tile, which also frees the stage overwritten.
// Copy widths: the r-contiguous operand (A without TA, B with TB) goes 16 bytes
// wide with cp.async.cg (L2 only); the k-contiguous operand must be transposed
// into the k-major shared layout, which a 16-byte copy cannot do, so it uses
// 4-byte cp.async.ca, 8 lanes along k by 4 rows (one full 32-byte sector per
// row; conflict-free stores with the R+4 pitch).  ALIGNED=false: 4-byte copies.
// KPATH (trailing template argument, default -1 = automatic): bit 0 routes
// k-contiguous operands through registers (LDG.128 + transposing STS after the
// FFMAs), bit 1 is a fragment-pipelined main loop (fragments of step p+1 load
// under step p, across tiles: the barrier sits before the last k-step).
// Automatic: bit 1 when TM*TN >= 128, else 0.
// Seed: seed 002 kernel 9 (asynchronous copies into ping-pong buffers); PTX
// ISA cp.async with src-size for zero-fill.
// Edges: the copy's src-size is the number of valid bytes (0..16, or 0/4);
// the hardware zero-fills the rest; an empty copy reads from the panel origin,
// always a valid address.  EDGE blocks as in rung 8.  Works on sm_80 and sm_90a.
// Measured (H200, sgemm bench, bench/results/ladder-h200-2026-11-22.json):
// large 256x128x16, warps 128x32, 16x8/thread, 3 stages: 46.4 TFLOPS at 4096^3
// (91% of cuBLAS), below rung 9's 48.7. Reproduce: sgemm bench --kernels 9,10
// --sizes 4096. Why slower: NT, where both operands go 16 bytes wide, is the
// fastest transpose for every tile; each k-contiguous operand costs about 5-7%
// (docs/notes/ffma-fast.md, with the KPATH variants). An ncu profile (4096^3,
// 128x128x16,
// 3 stages) showed issue slots 81% active against cuBLAS's 91%, with 0.5
// dispatch and 0.4 barrier stall cycles per issue (cuBLAS: 0.1 and 0.1).
// Not weighed by the planner: on unaligned deep K, where its 4-byte copies
// match cuBLAS's align1 kernels, its best tile took 1.39x rung 9's best time
// (geometric mean of 12 problems, H200,
// bench/results/async-deepk-h200-2026-11-29.json).
#include "tile_loaders.cuh"

namespace sg {

// Block (tm, tn) of C; rung 11 calls it too.  EDGE as in rung 8.
// KPATH bit 0 -- k-contiguous operands: 0 by 4-byte cp.async, 1 by float4
// loads into registers written (transposed) after the FFMAs, when ALIGNED.
// KPATH bit 1 -- fragment-pipelined main loop for interior blocks.
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS, int STAGES,
          bool TA, bool TB, bool ALIGNED, int KPATH, bool EDGE>
__device__ __forceinline__ void async_block(SGEMM_PARAMS, int tm, int tn) {
    constexpr int LDA = BM + 4, LDB = BN + 4;
    constexpr int WTM = WM / TM, WTN = WN / TN;
    constexpr int STAGE_FLOATS = BK * (LDA + LDB);
    static_assert(WTM * WTN == 32, "a warp tile must hold exactly 32 thread tiles");
    static_assert((BM / WM) * (BN / WN) * 32 == THREADS, "warps must tile the block");
    static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tiles are made of 4x4 sub-tiles");
    static_assert(STAGES >= 2, "a pipeline needs at least two stages");
    extern __shared__ float4 smem4[];
    float* smem = reinterpret_cast<float*>(smem4);   // [stage][As BK*LDA | Bs BK*LDB]
    const unsigned smem_base = smem_addr(smem);

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp % (BM / WM)) * WM, wn0 = (warp / (BM / WM)) * WN;
    const int lm = lane % WTM, ln = lane / WTM;
    const int bm0 = tm * BM, bn0 = tn * BN;
    const int rowsA = M - bm0, rowsB = N - bn0;

    // KPATH < 0 (the default): the fragment pipeline for the big 1-block/SM
    // thread tiles (TM*TN >= 128), where it measured faster, plain otherwise.
    constexpr int KP = KPATH >= 0 ? KPATH : (TM * TN >= 128 ? 2 : 0);
    constexpr bool A_REG = (KP & 1) && ALIGNED && TA;
    constexpr bool B_REG = (KP & 1) && ALIGNED && !TB;
    constexpr bool FRAGPIPE = (KP & 2) != 0;
    static_assert(BK % 2 == 0, "BK must be even");
    typename pick<A_REG, RegAsync<BM, BK, THREADS, TA, ALIGNED>,
                  AsyncStage<BM, BK, THREADS, TA, ALIGNED>>::type
        la(A + poff<TA>(bm0, 0, lda), lda, tid);
    typename pick<B_REG, RegAsync<BN, BK, THREADS, !TB, ALIGNED>,
                  AsyncStage<BN, BK, THREADS, !TB, ALIGNED>>::type
        lb(B + poff<!TB>(bn0, 0, ldb), ldb, tid);

    const int ntiles = (K + BK - 1) / BK;
    int kload = 0;            // first k of the next tile to issue
    int wstage = 0;           // float offset of its stage
    // Fetch the next k-tile (if any) into stage wstage; true when one was fetched.
    auto issue = [&]() {
        const bool any = kload < K;
        if (any) {
            const unsigned sa = smem_base + 4u * wstage, sb = sa + 4u * (BK * LDA);
            float* pa = smem + wstage;
            float* pb = pa + BK * LDA;
            if (kload + BK <= K) {
                la.template fetch<false, EDGE>(sa, pa, rowsA, K - kload, tid);
                lb.template fetch<false, EDGE>(sb, pb, rowsB, K - kload, tid);
            } else {
                la.template fetch<true, EDGE>(sa, pa, rowsA, K - kload, tid);
                lb.template fetch<true, EDGE>(sb, pb, rowsB, K - kload, tid);
            }
            la.advance();
            lb.advance();
            kload += BK;
        }
        cp_async_commit();    // an empty group when nothing was left: keeps the count
        wstage += STAGE_FLOATS;
        if (wstage == STAGES * STAGE_FLOATS) wstage = 0;
        return any;
    };

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (issue()) {
            la.land(tid);
            lb.land(tid);
        }
    }

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    const int a_off = wm0 + lm * 4, b_off = wn0 + ln * 4;
    if constexpr (FRAGPIPE && !EDGE) {
        // Fragment-pipelined main loop: the fragments of k-step p+1 are read
        // while step p multiplies, across tile boundaries too.  The barrier that
        // publishes tile t+1 sits before the last k-step of tile t, so the first
        // fragments of t+1 load under that step's FFMAs; the next tile's copies
        // go out at step 0 into the stage everybody finished with before it.
        float fa[2][TM], fb[2][TN];
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        load_frag<TM, TN, WTM * 4, WTN * 4, LDA, LDB>(smem + a_off, smem + BK * LDA + b_off, 0,
                                                      fa[0], fb[0]);
        int rstage = 0;
        for (int t = 0; t < ntiles; ++t) {
            const float* cur = smem + rstage * STAGE_FLOATS;
            const int nstage = rstage + 1 == STAGES ? 0 : rstage + 1;
            const float* nxt = smem + nstage * STAGE_FLOATS;
            bool fetched = false;
#pragma unroll
            for (int p = 0; p < BK; ++p) {
                if (p == 0) fetched = issue();
                if (p == BK - 1) {
                    if ((A_REG || B_REG) && fetched) {
                        la.land(tid);
                        lb.land(tid);
                    }
                    cp_async_wait<STAGES - 2>();
                    __syncthreads();
                }
                if (p + 1 < BK)
                    load_frag<TM, TN, WTM * 4, WTN * 4, LDA, LDB>(
                        cur + a_off, cur + BK * LDA + b_off, p + 1, fa[(p + 1) & 1], fb[(p + 1) & 1]);
                else if (t + 1 < ntiles)
                    load_frag<TM, TN, WTM * 4, WTN * 4, LDA, LDB>(
                        nxt + a_off, nxt + BK * LDA + b_off, 0, fa[(p + 1) & 1], fb[(p + 1) & 1]);
                ffma_step<TM, TN>(fa[p & 1], fb[p & 1], acc);
            }
            rstage = nstage;
        }
        cp_async_wait_all();
        store_tile<TM, TN, WTM * 4, WTN * 4, ALIGNED, EDGE>(acc, C, ldc, bm0 + a_off,
                                                            bn0 + b_off, M, N, alpha, beta,
                                                            SGEMM_EPI);
        return;
    }
    int rstage = 0;
    for (int t = 0; t < ntiles; ++t) {
        cp_async_wait<STAGES - 2>();   // tile t has landed (this thread's copies)
        __syncthreads();               // ... everyone's; stage t-1 is free again
        const bool fetched = issue();  // tile t + STAGES - 1 into stage (t-1) % STAGES
        const float* as = smem + rstage * STAGE_FLOATS;
        mma_ktile<BK, TM, TN, WTM * 4, WTN * 4, LDA, LDB, EDGE ? 2 : BK>(as + a_off,
                                                                        as + BK * LDA + b_off, acc);
        if ((A_REG || B_REG) && fetched) {   // register-staged operands land now
            la.land(tid);
            lb.land(tid);
        }
        rstage = rstage + 1 == STAGES ? 0 : rstage + 1;
    }
    cp_async_wait_all();

    store_tile<TM, TN, WTM * 4, WTN * 4, ALIGNED, EDGE>(acc, C, ldc, bm0 + a_off, bn0 + b_off, M,
                                                        N, alpha, beta, SGEMM_EPI);
}

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS, int STAGES,
          bool TA, bool TB, bool ALIGNED, int KPATH>
__device__ __forceinline__ void async_tile(SGEMM_PARAMS, int tm, int tn) {
    if ((tm + 1) * BM <= M && (tn + 1) * BN <= N)
        async_block<BM, BN, BK, WM, WN, TM, TN, THREADS, STAGES, TA, TB, ALIGNED, KPATH, false>(
            SGEMM_ARGS, tm, tn);
    else
        async_block<BM, BN, BK, WM, WN, TM, TN, THREADS, STAGES, TA, TB, ALIGNED, KPATH, true>(
            SGEMM_ARGS, tm, tn);
}

}  // namespace sg

// Blocks per SM the launch bounds ask for; SGEMM_ASYNC_MINB (an experiment
// define, SGEMM_DEFINES=SGEMM_ASYNC_MINB=4) overrides it for 128-thread tiles.
#ifndef SGEMM_ASYNC_MINB
#define SGEMM_ASYNC_MINB 0
#endif
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS, int STAGES,
          bool TA, bool TB, bool ALIGNED, int KPATH = -1>
__global__ void __launch_bounds__(THREADS, (SGEMM_ASYNC_MINB > 0 && THREADS == 128)
                                               ? SGEMM_ASYNC_MINB
                                               : (TM * TN <= 64 && THREADS <= 256) ? 2 : 1)
sgemm_async(SGEMM_PARAMS) {
    SGEMM_BATCH_OFFSET();
    sg::async_tile<BM, BN, BK, WM, WN, TM, TN, THREADS, STAGES, TA, TB, ALIGNED, KPATH>(
        SGEMM_ARGS, blockIdx.x,
        blockIdx.y);
}
