// Scheme kernel 34 -- split-K in one launch ("splitk_fused", issue 5).
//
// Scheme 32 runs the tile kernel over K-slices into a workspace and then a
// second kernel (32_splitk_reduce.cu) sums the slices.  Under CUDA graphs
// that second launch costs ~1.5-2 us, as much as a whole 384^3 GEMM gains
// from splitting.  Here the grid is (m tiles, n tiles, batch * S): block
// (x, y, z) computes slice s = z % S of output tile (x, y) and then
//   1. writes its partial tile to its own workspace slot (tile, s);
//   2. fences and increments the tile's counter (one atomic per block);
//   3. the block that sees the count reach S - 1 is the last: it sums ALL
//      S slots in the fixed order 0, 1, ..., S-1 (its own included, read back:
//      the stored value is the register value, so the result does not depend
//      on which block came last -- bit-identical run to run), applies
//      alpha/beta (beta == 0 never reads C), writes C and resets the counter
//      to 0, so the next launch on the stream finds it zeroed without a memset.
// The counters are zeroed once, when the plan allocates the workspace.  Two
// launches may not use one workspace concurrently (the plan owns it; the plan
// cache keys workspace plans by stream).
//
// Partial tiles are stored thread-major: float4 group g of thread t at
// slot[g * NT + t], so a warp's stores and the reducer's loads are 512
// contiguous bytes; the reducer maps each float4 back to the thread tile it
// came from (the same arithmetic as the epilogue of 30_tile.cu).
//
// The main loop is 30_tile.cu's (same template parameters, the same cp.async
// copies through s30::Copy, included from that file), so a tile config means
// the same thing for the two-launch and the fused scheme and the tuner's tile
// space serves both.  With S == 1 (W and counters unused, may be null) the
// kernel is an ordinary SGEMM: the direct-launch contract of every spec.
#include "30_tile.cu"

namespace s34 {

// Release/acquire increment at GPU scope: the partial-tile stores ordered
// before it (via __syncthreads + the fence in every thread) are visible to
// whichever block observes the incremented value.
__device__ __forceinline__ unsigned count_in(unsigned* p) {
    unsigned old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;\n" : "=r"(old) : "l"(p) : "memory");
    return old;
}

// C(m..m+3, n) <- alpha * v + beta * C; float4 when the rows allow it.
template <bool ALIGNED>
__device__ __forceinline__ void store4(float* col, int m, int M, float4 v, float alpha, float beta) {
    if (ALIGNED && m + 3 < M) {
        float4* p = reinterpret_cast<float4*>(col + m);
        float4 r = make_float4(alpha * v.x, alpha * v.y, alpha * v.z, alpha * v.w);
        if (beta != 0.0f) {
            const float4 c = *p;
            r.x = fmaf(beta, c.x, r.x); r.y = fmaf(beta, c.y, r.y);
            r.z = fmaf(beta, c.z, r.z); r.w = fmaf(beta, c.w, r.w);
        }
        *p = r;
    } else {
        const float a[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int u = 0; u < 4; ++u)
            if (m + u < M) sg::store_c(col, m + u, a[u], alpha, beta);
    }
}

}  // namespace s34

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS, int STAGES,
          bool TA, bool TB, bool ALIGNED>
__global__ void __launch_bounds__(THREADS, (THREADS <= 256 ? 512 / THREADS : 1))
sgemm_splitk_fused(SGEMM_PARAMS, float* __restrict__ W, unsigned* __restrict__ counters,
                   int kc, int S) {
    constexpr int LM = WM / TM, LN = WN / TN;
    constexpr int WARPS_M = BM / WM;
    constexpr int WARPS_MN = (BM / WM) * (BN / WN);
    constexpr int KS = THREADS / (32 * WARPS_MN);
    constexpr int NT = 32 * WARPS_MN;                  // threads holding the C tile
    constexpr int SA = 4 * LM, SB = 4 * LN;
    constexpr int LDA = BM + 4, LDB = BN + 4;
    constexpr int ATILE = BK * LDA, BTILE = BK * LDB;
    constexpr int G = TM * TN / 4;                     // float4 groups per thread
    static_assert(LM * LN == 32, "a warp is 32 lanes");
    static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tile is made of 4x4 sub-tiles");
    static_assert(KS * WARPS_MN * 32 == THREADS && (KS == 1 || KS == 2 || KS == 4),
                  "threads = 32 * warps * KS, KS in {1, 2, 4}");
    static_assert(BK % KS == 0, "the k-groups split BK evenly");
    static_assert(STAGES >= 2, "at least double buffering");

    extern __shared__ __align__(16) float smem[];
    __shared__ unsigned is_last;
    float* As = smem;
    float* Bs = smem + STAGES * ATILE;

    // z = entry * S + slice: the batch entry moves A, B, C; the slice moves A
    // and B along k by kc (a multiple of BK and of 4, so ALIGNED still holds).
    const int slice = blockIdx.z % S;
    const long long entry = blockIdx.z / S;
    const int kbeg = slice * kc;
    const int KL = min(kc, K - kbeg);                  // >= 1: the host launches ceil(K/kc) slices
    A += entry * strideA + (TA ? (long long)kbeg : (long long)kbeg * lda);
    B += entry * strideB + (TB ? (long long)kbeg * ldb : (long long)kbeg);
    C += entry * strideC;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int kg = warp / WARPS_MN, wmn = warp % WARPS_MN;
    const int wm = wmn % WARPS_M, wn = wmn / WARPS_M;
    const int lm = lane % LM, ln = lane / LM;
    const int bi = blockIdx.x * BM, bj = blockIdx.y * BN;
    const int mrows = M - bi, ncols = N - bj;

    using CA = s30::Copy<BM, BK, THREADS, TA, ALIGNED>;
    using CB = s30::Copy<BN, BK, THREADS, !TB, ALIGNED>;
    const float* ga = A + (TA ? (long long)bi * lda : (long long)bi);
    const float* gb = B + (TB ? (long long)bj : (long long)bj * ldb);
    const long long stepA = TA ? (long long)BK : (long long)BK * lda;
    const long long stepB = TB ? (long long)BK * ldb : (long long)BK;
    const unsigned sA = s30::saddr(As), sB = s30::saddr(Bs);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    const int ntiles = (KL + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ntiles) {
            CA::issue(tid, sA + 4u * s * ATILE, ga + s * stepA, lda, mrows, KL - s * BK);
            CB::issue(tid, sB + 4u * s * BTILE, gb + s * stepB, ldb, ncols, KL - s * BK);
        }
        s30::commit();
    }

    const int aoff = wm * WM + lm * 4, boff = wn * WN + ln * 4;
    int rd = 0, wr = STAGES - 1;
    for (int t = 0; t < ntiles; ++t) {
        s30::wait<STAGES - 2>();
        __syncthreads();
        const int tn = t + STAGES - 1;
        if (tn < ntiles) {
            CA::issue(tid, sA + 4u * wr * ATILE, ga + tn * stepA, lda, mrows, KL - tn * BK);
            CB::issue(tid, sB + 4u * wr * BTILE, gb + tn * stepB, ldb, ncols, KL - tn * BK);
        }
        s30::commit();
        const float* as = As + rd * ATILE + aoff + kg * LDA;
        const float* bs = Bs + rd * BTILE + boff + kg * LDB;
#pragma unroll
        for (int pp = 0; pp < BK / KS; ++pp) {
            const int p = pp * KS;
            float a[TM], b[TN];
#pragma unroll
            for (int it = 0; it < TM / 4; ++it) {
                const float4 x = *reinterpret_cast<const float4*>(as + p * LDA + it * SA);
                a[4 * it] = x.x; a[4 * it + 1] = x.y; a[4 * it + 2] = x.z; a[4 * it + 3] = x.w;
            }
#pragma unroll
            for (int jt = 0; jt < TN / 4; ++jt) {
                const float4 x = *reinterpret_cast<const float4*>(bs + p * LDB + jt * SB);
                b[4 * jt] = x.x; b[4 * jt + 1] = x.y; b[4 * jt + 2] = x.z; b[4 * jt + 3] = x.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        rd = rd + 1 == STAGES ? 0 : rd + 1;
        wr = wr + 1 == STAGES ? 0 : wr + 1;
    }
    s30::wait<0>();
    if constexpr (KS > 1) {
        // k-groups summed in a fixed order through the idle pipeline smem; the
        // groups > 0 stay alive (no early return) for the barriers below.
        __syncthreads();
        float* red = smem;
        const int t = wmn * 32 + lane;
        if (kg > 0) {
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    red[((kg - 1) * TM * TN + i * TN + j) * NT + t] = acc[i][j];
        }
        __syncthreads();
        if (kg == 0) {
#pragma unroll
            for (int g = 0; g < KS - 1; ++g)
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j)
                        acc[i][j] += red[(g * TM * TN + i * TN + j) * NT + t];
        }
    }

    if (S == 1) {       // not split: the ordinary epilogue, straight from registers
        if (kg > 0) return;
        const int m0 = bi + aoff, n0 = bj + boff;
#pragma unroll
        for (int jt = 0; jt < TN / 4; ++jt)
#pragma unroll
            for (int v = 0; v < 4; ++v) {
                const int n = n0 + jt * SB + v;
                if (n >= N) continue;
                float* col = C + (long long)n * ldc;
#pragma unroll
                for (int it = 0; it < TM / 4; ++it) {
                    const int i = 4 * it, j = 4 * jt + v;
                    s34::store4<ALIGNED>(col, m0 + it * SA, M,
                                         make_float4(acc[i][j], acc[i + 1][j], acc[i + 2][j],
                                                     acc[i + 3][j]), alpha, beta);
                }
            }
        return;
    }

    // 1. this slice's partial tile -> its slot (padding rows/columns included:
    //    every slot is written whole, so the reducer needs no guards).
    const long long tile = (entry * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    float4* slots = reinterpret_cast<float4*>(W + tile * (long long)S * (BM * BN));
    if (kg == 0) {
        float4* mine = slots + (long long)slice * (G * NT);
        const int t = wmn * 32 + lane;
#pragma unroll
        for (int it = 0; it < TM / 4; ++it)
#pragma unroll
            for (int j = 0; j < TN; ++j)
                __stcg(mine + (it * TN + j) * NT + t,
                       make_float4(acc[4 * it][j], acc[4 * it + 1][j], acc[4 * it + 2][j],
                                   acc[4 * it + 3][j]));
    }
    // 2. publish: each thread's stores are ordered before the block's count.
    __threadfence();
    __syncthreads();
    if (tid == 0) is_last = s34::count_in(counters + tile) == (unsigned)(S - 1);
    __syncthreads();
    if (!is_last) return;
    __threadfence();    // the slots read below come after the count observed above

    // 3. the last block: every thread sums whole float4s of the tile, slices in
    //    order 0..S-1, read through L2 (__ldcg: another SM wrote them).
    // Loads go out 8 slices at a time before any is added (one block does
    // this for the whole tile: with one load in flight per add, measured
    // ~18 us of tail at S = 16; the adds keep the order 0..S-1).
    for (int e = tid; e < G * NT; e += THREADS) {
        float4 s = __ldcg(slots + e);
        for (int q0 = 1; q0 < S; q0 += 8) {
            float4 u[8];
#pragma unroll
            for (int i = 0; i < 8; ++i)
                if (q0 + i < S) u[i] = __ldcg(slots + (long long)(q0 + i) * (G * NT) + e);
#pragma unroll
            for (int i = 0; i < 8; ++i)
                if (q0 + i < S) { s.x += u[i].x; s.y += u[i].y; s.z += u[i].z; s.w += u[i].w; }
        }
        // Back to the thread tile this float4 came from (thread t, group g).
        const int g = e / NT, t = e % NT;
        const int it = g / TN, j = g % TN, jt = j / 4, v = j % 4;
        const int tw = t / 32, tl = t % 32;
        const int m = bi + (tw % WARPS_M) * WM + (tl % LM) * 4 + it * SA;
        const int n = bj + (tw / WARPS_M) * WN + (tl / LM) * 4 + jt * SB + v;
        if (n < N && m < M) s34::store4<ALIGNED>(C + (long long)n * ldc, m, M, s, alpha, beta);
    }
    if (tid == 0) counters[tile] = 0u;    // ready for the next launch (stream-ordered)
}
