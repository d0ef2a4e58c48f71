// Rung 9 -- shared-memory double buffer + register prefetch of the next k-tile.
//
// Adds over rung 8: two shared buffers.  While the warps compute on buffer
// `cur`, each thread already has the *next* k-tile's float4 global loads in
// flight into registers (issued before the FFMA loop, consumed after it), then
// writes them into buffer `cur^1`.  The global-load latency hides behind the BK
// k-steps of FFMA, and one __syncthreads per k-tile suffices: the buffer
// written in iteration t was last read in iteration t-1, which ended with the
// barrier.  Costs R*BK/threads registers per operand live across the FFMAs.
// Unaligned (scalar) loads are prefetched the same way, except in the medium
// config (64 accumulators at a 128-register cap: see db_roomy).
// Seeds: seed 000 algorithms 4-5 (double buffering), seed 003 kernels 10-11
// (prefetch, then double buffer to drop a __syncthreads).
// Edges: a block past the bottom/right edge of C computes the last full tile
// inside C with the unguarded loop and stores only its own rows/columns
// ("shifted" tiles, double_buffer_dispatch); the guarded EDGE instantiation
// (zero-filled loads; FFMA loop unrolled by 2 at the register cap, fully in
// roomy configs with BK <= 16) is left for M < BM, N < BN, an aligned
// M % 4 != 0, and the medium config.  Shifted tiles run the edge
// blocks at interior speed: on the H200, 2000^3 took 349 us with them against
// 421 us with the guarded EDGE path, 4097x4095x4093 (unaligned) 3071 against
// 4161 us, and 4096^3 (no edge block) the same either way
// (docs/notes/ffma-fast.md).  The full unroll of guarded blocks: 1.02x over
// 28 deep-K problems of the judge's distribution on the H100, up to 1.20x
// where a side is narrower than the tile (docs/notes/dispatch.md).
// Split-K: the slices are grid z entries (A and B advanced by the batch
// strides), the last one shorter (k_last), in one launch: 1.125x over 28
// deep-K problems against a launch of its own for the short slice (H100,
// bench/results/ragged-split-ab-h100-2026-11-27.json).
// Measured (H200, sgemm bench, bench/results/ladder-h200-2026-11-22.json):
// large 256x128x8, warps 128x32, 16x8/thread, 1 block/SM: 48.7 TFLOPS at 4096^3
// and 49.4 at 8192^3 (97% of cuBLAS) against rung 8's 44.6 / 45.4 -- the
// fastest FFMA rung. Reproduce: sgemm bench --kernels 8,9 --sizes 4096,8192.
// The other configs and transposes: docs/notes/ffma-fast.md.  The
// serpentine FFMA order of the unguarded blocks (SGEMM_FFMA_SERP below) came
// later: 1.02-1.03x at 4096^3 NN and TN as called, the same outputs
// (bench/results/define-ab-h200-2026-11-29.json, serpentine-digests-*).
// Rung 9 beats rung 8 (+7-9% on 128x128x16) and also rung 10: the register
// path transposes the k-contiguous operand with LDG.128 + STS, where a cp.async
// pipeline needs 4-byte copies for it (see rung 10).
#include "tile_loaders.cuh"

// The pipelined loop of the roomy configs (double_buffer_block): 1 where A
// is k-contiguous, 0 nowhere, 2 on every layout, 3 on every layout and
// alignment (the others: aligned operands only), 4 as 1 and also on every
// layout and alignment of the 8x8 tiles of 128 threads.  An A/B switch
// (SGEMM_DEFINES=SGEMM_DB_PIPE=0, compiled by NVRTC, never bundled).
#ifndef SGEMM_DB_PIPE
#define SGEMM_DB_PIPE 1
#endif
// The serpentine FFMA order (tile_loaders.cuh, ffma_step) in unguarded
// blocks: 1 (default) or 0 (the row order, an A/B switch).  Guarded (EDGE)
// blocks keep the row order: with the serpentine they ran 0.65-1.55x on
// small deep-K draws, both ways, where unguarded blocks gained 0.6-1.9 % on
// large layers over three A/Bs (docs/notes/ffma-fast.md).
#ifndef SGEMM_FFMA_SERP
#define SGEMM_FFMA_SERP 1
#endif

namespace sg {

// Blocks per SM the launch bounds ask for: two for thread tiles up to 8x8
// (at 256 threads: a 128-register cap), one for 16x8 (up to 255 registers).
template <int TM, int TN, int THREADS>
__host__ __device__ constexpr int db_min_blocks() {
    return (TM * TN <= 64 && THREADS <= 256) ? 2 : 1;
}

// ROOMY: thread tiles of at most 32 accumulators, or more than 128 registers
// per thread: small 64x64x16 and large 256x128x8, not medium 128x128x16 (64
// accumulators, two 256-thread blocks per SM).  Only roomy configs take the
// shifted edge tiles and the early *scalar* prefetch (below).  Medium at its
// 128-register cap: ptxas spilled 4-36 bytes (sm_80, sm_90a) with early scalar
// loads and 24 bytes (TN, sm_90a) with the shifted tile's owned-row guard
// alone.  Aligned, nothing spilled, but at 4096^3 (no edge block) the shifted
// tiles took 3224 us against 2963 without them, and 3196 against 2953 with
// only the start passed through min() and a signed edge test: code generation
// at the cap (docs/notes/ffma-fast.md).  So medium keeps the guarded path.
template <int TM, int TN, int THREADS>
__host__ __device__ constexpr bool db_roomy() {
    return TM * TN <= 32 || 65536 / (db_min_blocks<TM, TN, THREADS>() * THREADS) > 128;
}

// Where thread `tid`'s TM x TN accumulators sit in the BM x BN tile: rows
// a_off + it*SA + u and columns b_off + jt*SB + v (it < TM/4, jt < TN/4,
// u, v < 4).  The block's main loop, its epilogue and the cluster kernel's
// parked tile (38_db_cluster.cu) all read it from here.
template <int BM, int BN, int WM, int WN, int TM, int TN>
struct DbThreadTile {
    static constexpr int WTM = WM / TM, WTN = WN / TN, SA = WTM * 4, SB = WTN * 4;
    static_assert(WTM * WTN == 32, "a warp tile must hold exactly 32 thread tiles");
    static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tiles are made of 4x4 sub-tiles");
    int a_off, b_off;
    __device__ __forceinline__ explicit DbThreadTile(int tid) {
        const int lane = tid & 31, warp = tid >> 5;
        a_off = (warp % (BM / WM)) * WM + (lane % WTM) * 4;
        b_off = (warp / (BM / WM)) * WN + (lane / WTM) * 4;
    }
};

// The barrier of one k-group: the whole block when there is one group, else
// the group's THREADS threads on named barrier 1 + group (0 is __syncthreads).
template <int KG, int THREADS>
__device__ __forceinline__ void kgroup_sync() {
    if constexpr (KG == 1)
        __syncthreads();
    else
        asm volatile("bar.sync %0, %1;\n" ::"r"(1 + (int)threadIdx.x / THREADS), "n"(THREADS)
                     : "memory");
}

// The main loop: acc <- the block's (bm0, bn0) tile of op(A) op(B) over K.
// ROOMY (db_roomy) decides whether unaligned loads are prefetched early; the
// cluster kernel, at one block per SM, passes true.  KG > 1 (38_db_cluster.cu):
// the block holds KG k-groups of THREADS threads, each running this loop on
// its own K range and shared memory, synchronized on its own barrier.
// PIPE (unguarded tiles only: the cluster kernel, and rung 9's roomy configs
// on aligned operands with a k-contiguous A): the fragments of k-step
// p+1 are loaded while step p's FFMAs run, and the next k-tile is stored and
// its barrier passed before the tile's last step, so that the next tile's
// first fragments load under that step's FFMAs too (pipelined_ktiles).
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS,
          bool TA, bool TB, bool ALIGNED, bool EDGE, bool ROOMY, int KG = 1, bool PIPE = false,
          int EDGE_UNROLL = 2>
__device__ __forceinline__ void double_buffer_accumulate(
        const float* __restrict__ A, long long lda, const float* __restrict__ B, long long ldb,
        int M, int N, int K, int bm0, int bn0, float (*As)[BK * (BM + 4)],
        float (*Bs)[BK * (BN + 4)], float (&acc)[TM][TN]) {
    constexpr int LDA = BM + 4, LDB = BN + 4;
    using TT = DbThreadTile<BM, BN, WM, WN, TM, TN>;
    static_assert((BM / WM) * (BN / WN) * 32 == THREADS, "warps must tile the block");
    // DbThreadTile's offsets, spelled out in this order: it keeps the SASS of
    // every rung-9 config identical to the one measured before the split.
    const int tid = KG == 1 ? (int)threadIdx.x : (int)threadIdx.x % THREADS, lane = tid & 31,
              warp = tid >> 5;
    const int wm0 = (warp % (BM / WM)) * WM, wn0 = (warp / (BM / WM)) * WN;
    const int lm = lane % TT::WTM, ln = lane / TT::WTM;
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

#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    // Prologue: tile 0 into buffer 0.
    load(K);
    la.store(As[0], tid);
    lb.store(Bs[0], tid);
    kgroup_sync<KG, THREADS>();

    const int a_off = wm0 + lm * 4, b_off = wn0 + ln * 4;
    int cur = 0;
    if constexpr (PIPE && !EDGE) {
        static_assert(BK % 2 == 0, "a k-tile's steps alternate the two fragment buffers");
        static_assert(ALIGNED || ROOMY, "the next tile's loads are issued early");
        constexpr int SA = TT::SA, SB = TT::SB;
        // ncu at 512x512x4096 (k4 tile): 17% of the warps' stall
        // samples were FFMAs waiting on their LDS (short scoreboard), the
        // largest on the first FFMA of each k-tile, which had nothing to hide
        // behind after the barrier.
        float fa[2][TM], fb[2][TN];
        load_frag<TM, TN, SA, SB, LDA, LDB>(As[0] + a_off, Bs[0] + b_off, 0, fa[0], fb[0]);
        for (int k0 = 0; k0 < K; k0 += BK) {
            const bool more = k0 + BK < K;
            if (more) {
                la.advance();
                lb.advance();
                load(K - k0 - BK);
            }
            const float* as = As[cur] + a_off;
            const float* bs = Bs[cur] + b_off;
#pragma unroll
            for (int p = 0; p < BK; ++p) {
                if (p + 1 < BK) {
                    load_frag<TM, TN, SA, SB, LDA, LDB>(as, bs, p + 1, fa[(p + 1) % 2],
                                                        fb[(p + 1) % 2]);
                } else if (more) {
                    // Buffer cur^1 was last read before the previous tile's
                    // barrier; after this one, every thread's next tile is in it.
                    la.store(As[cur ^ 1], tid);
                    lb.store(Bs[cur ^ 1], tid);
                    kgroup_sync<KG, THREADS>();
                    load_frag<TM, TN, SA, SB, LDA, LDB>(As[cur ^ 1] + a_off, Bs[cur ^ 1] + b_off,
                                                        0, fa[0], fb[0]);
                }
                ffma_step<TM, TN, SGEMM_FFMA_SERP>(fa[p % 2], fb[p % 2], acc);
            }
            cur ^= 1;
        }
        return;
    }
    // The next tile's loads fly during the FFMAs; scalar (unaligned) ones too
    // where registers allow (db_roomy): a thread holds the same R*BK/threads
    // values either way, and with one pointer per operand (TileMap) the scalar
    // slots need no more live addresses.  Otherwise they are issued after the
    // FFMAs and their latency is exposed.
    constexpr bool EARLY = ALIGNED || ROOMY;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (EARLY && more) {
            la.advance();
            lb.advance();
            load(K - k0 - BK);
        }
        mma_ktile<BK, TM, TN, TT::SA, TT::SB, LDA, LDB, EDGE ? EDGE_UNROLL : BK,
                  SGEMM_FFMA_SERP && !EDGE>(As[cur] + a_off, Bs[cur] + b_off, acc);
        if (more) {
            if (!EARLY) {
                la.advance();
                lb.advance();
                load(K - k0 - BK);
            }
            la.store(As[cur ^ 1], tid);
            lb.store(Bs[cur ^ 1], tid);
        }
        kgroup_sync<KG, THREADS>();
        cur ^= 1;
    }
}

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS,
          bool TA, bool TB, bool ALIGNED, bool EDGE>
__device__ __forceinline__ void double_buffer_block(SGEMM_PARAMS, int bm0, int bn0,
                                                    float (*As)[BK * (BM + 4)],
                                                    float (*Bs)[BK * (BN + 4)]) {
    constexpr bool ROOMY = db_roomy<TM, TN, THREADS>();
    // Guarded blocks unroll their FFMA loop by 2 to stay inside the register
    // cap, except in roomy configs with k-tiles of at most 16: there every
    // block of an output narrower than the tile (M < BM or N < BN: deep K with
    // a small side) is a guarded one, and the full unroll ran them 8-10 %
    // faster on the H100 at the same blocks per SM (docs/notes/dispatch.md).
    // With BK = 32 (tall) it crossed a blocks-per-SM step.
    constexpr int EDGE_UNROLL = ROOMY && BK <= 16 ? BK : 2;
    using TT = DbThreadTile<BM, BN, WM, WN, TM, TN>;
    float acc[TM][TN];
    // Unguarded aligned tiles of the roomy configs run the pipelined loop
    // (double_buffer_accumulate's PIPE) where A is k-contiguous (TA: a
    // user's row-major x @ W^T): each k-step's fragments load under the
    // previous step's FFMAs, and the k-tile's stores and barrier come before
    // its last step instead of after it.  With TA, A's k-tile goes in as
    // scalar transposing stores (the 256x128 tile: 12 stores a k-tile
    // against 3-6 on the other layouts).  On the H100 that ran large TA
    // layers 2-3 % faster, and the other layouts 2-4 % slower (the loop
    // holds ~30 more registers); unaligned operands 12 % slower.  Medium
    // has no registers to spare at its 128 cap.  docs/notes/ffma-fast.md.
    constexpr bool PIPE =
        SGEMM_DB_PIPE == 4
            ? ROOMY && !EDGE && ((TA && ALIGNED) || (TM * TN == 64 && THREADS == 128))
            : SGEMM_DB_PIPE && (ALIGNED || SGEMM_DB_PIPE == 3) && ROOMY && !EDGE &&
                  (TA || SGEMM_DB_PIPE >= 2);
    double_buffer_accumulate<BM, BN, BK, WM, WN, TM, TN, THREADS, TA, TB, ALIGNED, EDGE, ROOMY,
                             1, PIPE, EDGE_UNROLL>(
        A, lda, B, ldb, M, N, K, bm0, bn0, As, Bs, acc);
    // Unguarded tiles may have been shifted back inside C (see the dispatch):
    // they write only the rows/columns from the block's own start on.
    const TT tt(threadIdx.x);
    constexpr bool OWN = !EDGE && ROOMY;
    const int mlo = (int)blockIdx.x * BM, nlo = (int)blockIdx.y * BN;
    if constexpr (ALIGNED) {
        store_tile<TM, TN, TT::SA, TT::SB, ALIGNED, EDGE, OWN>(
            acc, C, ldc, bm0 + tt.a_off, bn0 + tt.b_off, M, N, alpha, beta, SGEMM_EPI, mlo, nlo);
    } else {
        // Unaligned C: through the stages' smem, lanes along m (common.cuh,
        // store_parked), once every warp is done reading them.
        static_assert(THREADS * TM <= 2 * BK * (BM + 4), "a warp parks 32 * TM floats in As");
        const int warp = threadIdx.x >> 5;
        __syncthreads();
        store_parked<TM, TN, TT::WTM, ROOMY ? TM : 1>(
            acc, &As[0][0] + warp * 32 * TM, C, ldc, bm0 + (warp % (BM / WM)) * WM,
            bn0 + (warp / (BM / WM)) * WN, M, N, alpha, beta, mlo, nlo);
        if (SGEMM_EPI.code)
            epi_tile<TM, TN, TT::SA, TT::SB, ALIGNED, EDGE, OWN>(
                C, ldc, bm0 + tt.a_off, bn0 + tt.b_off, M, N, SGEMM_EPI, mlo, nlo);
    }
}

// Interior blocks take the unguarded instantiation.  So do blocks on the
// bottom/right edge of C, in roomy configs, when the last full tile inside C,
// [M-BM, M) (resp. [N-BN, N)), is legal for the fast path: they compute that
// shifted tile and store only their own rows/columns (the overlap is computed
// twice: the same work as rounding M up to a whole tile).  The shift needs
// M >= BM and, with ALIGNED, a start that keeps the float4 accesses aligned:
// C's and an m-contiguous A's need (M-BM) % 4 == 0, i.e. M % 4 == 0; along n
// only an n-contiguous B (TB) does.  Other edge blocks take the guarded one.
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS,
          bool TA, bool TB, bool ALIGNED>
__device__ __forceinline__ void double_buffer_dispatch(SGEMM_PARAMS, float (*As)[BK * (BM + 4)],
                                                       float (*Bs)[BK * (BN + 4)]) {
    const int bm0 = blockIdx.x * BM, bn0 = blockIdx.y * BN;
    constexpr bool SHIFT = db_roomy<TM, TN, THREADS>();
    const bool m_fast =
        (blockIdx.x + 1) * BM <= M || (SHIFT && M >= BM && (!ALIGNED || M % 4 == 0));
    const bool n_fast =
        (blockIdx.y + 1) * BN <= N || (SHIFT && N >= BN && (!ALIGNED || !TB || N % 4 == 0));
    // Without SHIFT the start goes in as is: through min() it cost medium 8%.
    if (m_fast && n_fast)
        double_buffer_block<BM, BN, BK, WM, WN, TM, TN, THREADS, TA, TB, ALIGNED, false>(
            SGEMM_ARGS,
            SHIFT ? min(bm0, M - BM) : bm0, SHIFT ? min(bn0, N - BN) : bn0, As, Bs);
    else
        double_buffer_block<BM, BN, BK, WM, WN, TM, TN, THREADS, TA, TB, ALIGNED, true>(
            SGEMM_ARGS, bm0, bn0,
            As, Bs);
}

}  // namespace sg

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS,
          bool TA, bool TB, bool ALIGNED>
__global__ void __launch_bounds__(THREADS, sg::db_min_blocks<TM, TN, THREADS>())
sgemm_double_buffer(SGEMM_PARAMS, int k_last) {
    constexpr int A_FLOATS = BK * (BM + 4), B_FLOATS = BK * (BN + 4);
    SGEMM_BATCH_OFFSET();
    // The grid's last z entry is k_last deep, the others K: split-K's shorter
    // last slice runs in the same launch as the full ones (launches.py), so
    // its blocks fill the waves instead of trailing them.  A direct launch
    // passes k_last = K.
    if (blockIdx.z == gridDim.z - 1)
        K = k_last;
    // Tiles up to 48 KB live in static shared memory; bigger ones (256x128x16:
    // 50 KB, over the static limit) in dynamic shared memory, which the
    // launcher opts in to.  Not dynamic for all: on sm_90a the 128x128x16
    // instantiation then needs one more register and spills at its 128 cap.
    if constexpr (2 * (A_FLOATS + B_FLOATS) * 4 <= 48 * 1024) {
        __shared__ __align__(16) float As[2][A_FLOATS];
        __shared__ __align__(16) float Bs[2][B_FLOATS];
        sg::double_buffer_dispatch<BM, BN, BK, WM, WN, TM, TN, THREADS, TA, TB, ALIGNED>(
            SGEMM_ARGS, As, Bs);
    } else {
        extern __shared__ float4 smem4[];
        auto As = reinterpret_cast<float (*)[A_FLOATS]>(smem4);
        auto Bs = reinterpret_cast<float (*)[B_FLOATS]>(reinterpret_cast<float*>(smem4) +
                                                        2 * A_FLOATS);
        sg::double_buffer_dispatch<BM, BN, BK, WM, WN, TM, TN, THREADS, TA, TB, ALIGNED>(
            SGEMM_ARGS, As, Bs);
    }
}
