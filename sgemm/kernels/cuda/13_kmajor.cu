// Rung 13 -- each operand's shared tile laid out as it lies in memory.
//
// Adds over rungs 9-10: no operand is transposed on its way into shared
// memory.  An operand stored along k (A with TA, B without TB: every
// x @ W^T layer's both operands) keeps its rows k-contiguous in shared
// memory, S[r][BK + 4]; an operand stored along its rows keeps S[k][R + 4].
// Both fill with 16-byte cp.async where aligned (4-byte where not), so no
// register holds data in flight and no transposing store is paid: rung 9
// pays them for every k-contiguous operand, rung 10 takes 4-byte copies.
// A k-major row gives four k-steps of one row in one LDS.128, so a group of
// four k-steps loads TM + TN LDS.128 either way: for a k-major operand the
// thread's rows interleave with its neighbours' (row = lane + j * lanes), for
// a row-major one they come in runs of four (one LDS.128 a k-step).  The
// pitch BK + 4 is an odd number of 16-byte units, so eight consecutive rows
// read by a quarter-warp land in eight different bank groups.
// Pipeline: STAGES k-tiles in flight (cp.async groups); one barrier a tile,
// placed before the tile's last k-group so that the next tile's first
// fragments load under that group's FFMAs (fragments double-buffered across
// k-groups).  Aimed at what cuBLAS runs where the planner lost to it (ncu,
// bench/results/cublas-kernels-h100-2026-11-27.json): 128-thread blocks,
// two an SM, deep per-thread ILP, 3-5 cp.async stages.
// Edges: copies past M, N or K read nothing and zero-fill (src-size), so
// the inner loop has no guard; the epilogue is guarded.  Split-K as rung 9:
// the slices are grid z entries, the last one k_last deep.
// Measured (H100, bench/results/kmajor-ab-h100-2026-11-27.json; reproduce:
// OUT=dir python bench/probes/kmajor_ab.py 6 5): on attention PV with head
// dims 64 and 80, where one wave puts two 128-thread blocks on an SM for a
// 1-2K-deep loop, 64x128 ran 1.19-1.26x rung 9's same tile
// (8x2048x80x2048: 241 us against 291; cuBLAS 184), 1.00x at head dim 128;
// on the other rows its 8x8 tiles ran 0.61-1.36x rung 9's: slower where many
// waves favour rung 9's three blocks an SM (it holds two at 255 registers),
// on K split 24-128 ways (0.65-0.98x) and on QK^T (0.61-0.77x).  The
// planner weighs it by its fitted rates
// (bench/results/kmajor-sweep-h100-2026-11-27.json).
#include "tile_loaders.cuh"

namespace s13 {

using sg::cp_async_commit;
using sg::cp_async_wait;
using sg::cp_async16_zfill;
using sg::cp_async4_zfill;

// The copies of one operand tile: R rows by BK, W floats a copy (4 aligned,
// 1 not).  Item e = tid + s * T of a grid whose fast dimension (F items) runs
// along the memory's contiguous axis: k for KCONT, r otherwise.
template <int R, int BK, int T, bool KCONT, bool ALIGNED>
struct Copy {
    static constexpr int W = ALIGNED ? 4 : 1;
    static constexpr int F = (KCONT ? BK : R) / W;
    static constexpr int Q = KCONT ? R : BK;
    static constexpr int N = F * Q / T;
    static_assert(N >= 1 && F * Q % T == 0, "the tile's copies split evenly over the threads");
    static_assert(T % F == 0 || F % T == 0, "power-of-two tile and block");
    static constexpr int P = KCONT ? BK + 4 : R + 4;       // shared pitch (floats)
    static constexpr int FLOATS = Q * P;                  // one stage of the tile

    // rows valid from the panel's first row, K the operand's depth
    __device__ static __forceinline__ void issue(unsigned sm, const float* __restrict__ panel,
                                                 long long ld, int rows, int k0, int K,
                                                 int tid) {
#pragma unroll
        for (int s = 0; s < N; ++s) {
            const int e = tid + s * T;
            const int f = e % F, q = e / F;
            const int r = KCONT ? q : f * W, k = KCONT ? f * W : q;
            const int kg = k0 + k;
            int bytes;
            if (KCONT)
                bytes = r < rows ? 4 * max(0, min(W, K - kg)) : 0;
            else
                bytes = kg < K ? 4 * max(0, min(W, rows - r)) : 0;
            const float* src = panel;
            if (bytes)
                src += KCONT ? (long long)r * ld + kg : (long long)kg * ld + r;
            const unsigned dst = sm + 4u * (KCONT ? r * P + k : k * P + r);
            if (!ALIGNED) {
                cp_async4_zfill(dst, src, bytes);
            } else if (bytes == 16 || bytes == 0) {
                cp_async16_zfill(dst, src, bytes);
            } else {
                // A chunk cut by the edge: its valid floats one by one.  A
                // 16-byte copy with a short src-size still counts as a
                // 16-byte read (compute-sanitizer: out of bounds where the
                // last row ends the allocation, uninitialized in padding).
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    const bool in = 4 * u < bytes;
                    cp_async4_zfill(dst + 4u * u, in ? src + u : panel, in ? 4 : 0);
                }
            }
        }
    }
};

// The fragment rows (or columns) of a thread along one operand: a
// k-major operand interleaves lanes (row = l + j * L), a row-major one
// takes runs of four (row = 4 l + (j / 4) * 4 L + j % 4); L lanes along it.
template <bool KCONT, int L>
__device__ __forceinline__ int frag_row(int l, int j) {
    return KCONT ? l + j * L : 4 * l + (j / 4) * 4 * L + (j % 4);
}

// f[j][u] <- element (row j, k-step kk + u) of an operand tile at `s` (the
// warp's first row), for u < 4: one LDS.128 a row (KCONT) or a k-step.
template <int TC, int L, int P, bool KCONT>
__device__ __forceinline__ void load_group(const float* s, int l, int kk, float (&f)[TC][4]) {
    if (KCONT) {
#pragma unroll
        for (int j = 0; j < TC; ++j) {
            const float4 v = *reinterpret_cast<const float4*>(s + (l + j * L) * P + kk);
            f[j][0] = v.x; f[j][1] = v.y; f[j][2] = v.z; f[j][3] = v.w;
        }
    } else {
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
            for (int q = 0; q < TC / 4; ++q) {
                const float4 v =
                    *reinterpret_cast<const float4*>(s + (kk + u) * P + 4 * l + q * 4 * L);
                f[4 * q][u] = v.x; f[4 * q + 1][u] = v.y;
                f[4 * q + 2][u] = v.z; f[4 * q + 3][u] = v.w;
            }
    }
}

template <int TM, int TN>
__device__ __forceinline__ void ffma_group(const float (&a)[TM][4], const float (&b)[TN][4],
                                           float (&acc)[TM][TN]) {
#pragma unroll
    for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i][u], b[j][u], acc[i][j]);
}

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS, int STAGES,
          bool TA, bool TB, bool ALIGNED>
__device__ __forceinline__ void block(SGEMM_PARAMS) {
    constexpr bool KA = TA, KB = !TB;                    // operands stored along k
    constexpr int WTM = WM / TM, WTN = WN / TN;
    using CA = Copy<BM, BK, THREADS, KA, ALIGNED>;
    using CB = Copy<BN, BK, THREADS, KB, ALIGNED>;
    constexpr int AF = CA::FLOATS, BF = CB::FLOATS, PA = CA::P, PB = CB::P;
    constexpr int G = BK / 4;                            // k-groups a tile
    static_assert(WTM * WTN == 32, "a warp tile must hold exactly 32 thread tiles");
    static_assert((BM / WM) * (BN / WN) * 32 == THREADS, "warps must tile the block");
    static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 8 == 0, "runs of four; two k-groups a tile");
    static_assert(STAGES >= 2, "a pipeline needs at least two stages");

    extern __shared__ float4 smem4[];
    float* smem = reinterpret_cast<float*>(smem4);       // [stage][A | B]
    const unsigned sbase = sg::smem_addr(smem);

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp % (BM / WM)) * WM, wn0 = (warp / (BM / WM)) * WN;
    const int lm = lane % WTM, ln = lane / WTM;
    const int bm0 = blockIdx.x * BM, bn0 = blockIdx.y * BN;
    const int rowsA = M - bm0, rowsB = N - bn0;
    const float* pa = A + (KA ? (long long)bm0 * lda : bm0);
    const float* pb = B + (KB ? (long long)bn0 * ldb : bn0);
    const int tiles = (K + BK - 1) / BK;

    auto issue = [&](int t) {       // tile t into its stage; an empty group past the end
        if (t < tiles) {
            const unsigned st = sbase + 4u * (t % STAGES) * (AF + BF);
            CA::issue(st, pa, lda, rowsA, t * BK, K, tid);
            CB::issue(st + 4u * AF, pb, ldb, rowsB, t * BK, K, tid);
        }
        cp_async_commit();
    };

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

#pragma unroll
    for (int t = 0; t < STAGES; ++t) issue(t);
    // the warp's corner of each operand tile
    const int oa = KA ? wm0 * PA : wm0, ob = KB ? wn0 * PB : wn0;
    float fa[2][TM][4], fb[2][TN][4];
    cp_async_wait<STAGES - 1>();
    __syncthreads();
    load_group<TM, WTM, PA, KA>(smem + oa, lm, 0, fa[0]);
    load_group<TN, WTN, PB, KB>(smem + AF + ob, ln, 0, fb[0]);

    for (int t = 0; t < tiles; ++t) {
        const float* sa = smem + (t % STAGES) * (AF + BF) + oa;
        const float* sb = sa - oa + AF + ob;
#pragma unroll
        for (int g = 0; g < G; ++g) {
            if (g + 1 < G) {
                load_group<TM, WTM, PA, KA>(sa, lm, 4 * (g + 1), fa[(g + 1) & 1]);
                load_group<TN, WTN, PB, KB>(sb, ln, 4 * (g + 1), fb[(g + 1) & 1]);
            } else if (t + 1 < tiles) {
                // Every thread has this tile's last fragments in registers:
                // after the barrier its stage takes tile t + STAGES, and tile
                // t + 1 (the oldest group after this thread's wait) is whole.
                cp_async_wait<STAGES - 2>();
                __syncthreads();
                issue(t + STAGES);
                const float* na = smem + ((t + 1) % STAGES) * (AF + BF) + oa;
                load_group<TM, WTM, PA, KA>(na, lm, 0, fa[0]);
                load_group<TN, WTN, PB, KB>(na - oa + AF + ob, ln, 0, fb[0]);
            }
            ffma_group<TM, TN>(fa[g & 1], fb[g & 1], acc);
        }
    }
    cp_async_wait<0>();      // nothing is left in flight when the block exits

    // alpha * acc + beta * C, then (epi != 0) the epilogue over the same
    // elements in a rolled pass (common.cuh: epi_grid), accumulators dead.
#pragma unroll
    for (int j = 0; j < TN; ++j) {
        const int n = bn0 + wn0 + frag_row<KB, WTN>(ln, j);
        if (n >= N) continue;
        float* col = C + (long long)n * ldc;
        if (KA) {
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                const int m = bm0 + wm0 + frag_row<true, WTM>(lm, i);
                if (m < M) sg::store_c(col, m, acc[i][j], alpha, beta);
            }
        } else {
#pragma unroll
            for (int q = 0; q < TM / 4; ++q)
                sg::store4<ALIGNED>(col, bm0 + wm0 + frag_row<false, WTM>(lm, 4 * q), M,
                                    make_float4(acc[4 * q][j], acc[4 * q + 1][j],
                                                acc[4 * q + 2][j], acc[4 * q + 3][j]),
                                    alpha, beta);
        }
    }
    if (epi) {
        const sg::Epi ep = SGEMM_EPI;
        constexpr int RA = KA ? 1 : TM / 4, RB = KB ? 1 : TN / 4;
#pragma unroll 1
        for (int qa = 0; qa < RA; ++qa)
#pragma unroll 1
            for (int qb = 0; qb < RB; ++qb)
                sg::epi_grid(C, ldc, M, N,
                             bm0 + wm0 + (KA ? lm : 4 * lm + qa * 4 * WTM), KA ? WTM : 1,
                             KA ? TM : 4,
                             bn0 + wn0 + (KB ? ln : 4 * ln + qb * 4 * WTN), KB ? WTN : 1,
                             KB ? TN : 4, ep);
    }
}

}  // namespace s13

// Two 128-thread blocks an SM (up to 255 registers), as cuBLAS's kernels run.
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS, int STAGES,
          bool TA, bool TB, bool ALIGNED>
__global__ void __launch_bounds__(THREADS, THREADS <= 128 ? 2 : 1)
sgemm_kmajor(SGEMM_PARAMS, int k_last) {
    SGEMM_BATCH_OFFSET();
    if (blockIdx.z == gridDim.z - 1)
        K = k_last;
    s13::block<BM, BN, BK, WM, WN, TM, TN, THREADS, STAGES, TA, TB, ALIGNED>(SGEMM_ARGS);
}
