// Scheme kernel 30 -- the planner's general tile kernel.
//
// One warp-tiled FFMA GEMM template serves three schemes (kernels/schemes.py):
//   "tile"   (id 30)  direct launch, large/medium tiles;
//   "small"  (id 31)  the same template with small tiles and deep BK, for
//                     problems up to ~512^3 where latency and block count rule;
//   "splitk" (id 32)  partial products of K-slices: the host launches this
//                     kernel as a strided *batch* over the slices (K' = slice,
//                     A/B advanced by the slice, C = a workspace, alpha=1,
//                     beta=0) and 32_splitk_reduce.cu sums the slices.
// So the kernel itself is an ordinary SGEMM_PARAMS kernel: launched on its
// own it computes the whole GEMM.
//
// Structure: block tile BM x BN, k-tile BK, a STAGES-deep cp.async pipeline
// (global -> shared without registers, so the 8x8 micro-tile fits the
// 128-register cap; one __syncthreads per k-tile).  Warps own WM x WN; lanes
// sit on a (WM/TM) x (WN/TN) grid and each thread owns TM x TN made of 4x4
// sub-tiles spaced 4*lanes apart, so every fragment read is one conflict-free
// LDS.128.  Shared tiles are k-major, S[k][R + 4] (rows stay 16-byte aligned).
// Copies: an r-contiguous operand with ALIGNED (16-byte pointer, ld % 4 == 0)
// moves 16 bytes per cp.async; otherwise 4-byte cp.asyncs, which transpose a
// k-contiguous operand for free.  Those go 8 lanes along k (one 32-byte
// sector) by 4 rows: bank = 4k + r (mod 32), no conflicts for any BK.
// Edges: out-of-range elements are zero-filled by the copy (src-size 0), so
// the inner loop has no guard; only the epilogue is guarded.
// KS = threads / (32 * warps of the tile) > 1 splits every k-tile among KS
// warp groups (k-steps interleaved) whose partial tiles are summed through
// shared memory at the end: more threads and a shorter dependent chain per
// block, for small problems where the k-loop latency dominates.
// Registers are capped at 128 (at least 512 threads resident per SM) so that a
// 256-thread block of 8x8 micro-tiles keeps two blocks per SM.
// Self-contained on purpose (only common.cuh): the ladder's headers may move.
// Measured (H100, public suite, cuBLAS in the same process;
// bench/results/suite-h100-2026-11-25.json, reproduce: bash
// scripts/gpu_session.sh suite): the planner runs "tile" on 35x79x19 (2.4x
// cuBLAS under CUDA graphs), "small" on its TT form (3.0x), and "splitk" on
// 16x8192x2048 (8 slices, 1.5x); larger shapes go to the ladder's rung 9-11
// loops, which are faster per block.
#include "common.cuh"

namespace s30 {

template <bool KCONT>
__device__ __forceinline__ long long off(int r, int k, long long ld) {
    return KCONT ? (long long)r * ld + k : (long long)k * ld + r;
}

__device__ __forceinline__ unsigned saddr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp16(unsigned dst, const void* src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void cp4(unsigned dst, const void* src, int bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Slot s of a thread in a grid whose fast dimension has F entries:
// e = tid + s*T, f = e % F, q = e / F, split into a per-thread base and a
// compile-time step (T and F are powers of two).
template <int F, int T>
struct Slots {
    static_assert(T % F == 0 || F % T == 0, "power-of-two tile and block");
    static constexpr bool TF = T % F == 0;
    __device__ static __forceinline__ int f0(int tid) { return TF ? tid % F : tid; }
    __device__ static __forceinline__ int q0(int tid) { return TF ? tid / F : 0; }
    __host__ __device__ static constexpr int df(int s) { return TF ? 0 : (s % (F / T)) * T; }
    __host__ __device__ static constexpr int dq(int s) { return TF ? s * (T / F) : s / (F / T); }
};

// Copies of one operand tile (R rows by BK) into S[k * (R + 4) + r].
//   VEC  (r-contiguous, aligned): 16-byte slots along r, F = R/4 per k-row.
//   R1   (r-contiguous, any): one float per slot, lanes along r.
//   K8   (k-contiguous): e = 8*(r + R*ko) + k8, k = 8*ko + k8: 8 lanes along k.
template <int R, int BK, int T, bool KCONT, bool ALIGNED>
struct Copy {
    static constexpr int LD = R + 4;
    static constexpr bool VEC = ALIGNED && !KCONT;
    static constexpr int W = VEC ? 4 : 1;
    static constexpr int NS = R * BK / (W * T);       // slots per thread
    static_assert(R * BK % (W * T) == 0, "tile must split evenly over the threads");
    static_assert(!KCONT || (BK % 8 == 0 && T % 8 == 0), "k-contiguous copies go 8 along k");
    // Slot grid: VEC/R1: fast = r-slots (R/W), slow = k.  K8: fast = r over T/8 "octets".
    using Sl = Slots<KCONT ? R : R / W, KCONT ? T / 8 : T>;
    // This thread's first element; recomputed from tid at each issue (cheap
    // integer work) rather than held in registers across the k-loop.
    __device__ static __forceinline__ void first(int tid, int& r0, int& k0) {
        if constexpr (KCONT) {
            const int o = tid >> 3;
            r0 = Sl::f0(o);
            k0 = Sl::q0(o) * 8 + (tid & 7);
        } else {
            r0 = Sl::f0(tid) * W;
            k0 = Sl::q0(tid);
        }
    }
    __host__ __device__ static constexpr int dr(int s) { return KCONT ? Sl::df(s) : Sl::df(s) * W; }
    __host__ __device__ static constexpr int dk(int s) { return KCONT ? Sl::dq(s) * 8 : Sl::dq(s); }

    // g: element (0, 0) of the panel at this k-tile; rows/kleft: valid extent.
    __device__ static __forceinline__ void issue(int tid, unsigned sbase, const float* __restrict__ g,
                                                 long long ld, int rows, int kleft) {
        int r0, k0;
        first(tid, r0, k0);
        const float* base = g + off<KCONT>(r0, k0, ld);
        sbase += 4u * (unsigned)(k0 * LD + r0);
        // Scalar copies: a rolled loop (NS can be 8+; unrolled, their 64-bit
        // addresses would compete with the accumulators for registers).
#pragma unroll VEC ? NS : 2
        for (int s = 0; s < NS; ++s) {
            const int r = r0 + dr(s), k = k0 + dk(s);
            const float* src = base + (KCONT ? (long long)dr(s) * ld + dk(s)
                                             : (long long)dk(s) * ld + dr(s));
            const unsigned dst = sbase + 4u * (dk(s) * LD + dr(s));
            if constexpr (VEC) {
                int n = rows - r;
                n = n < 0 ? 0 : (n > 4 ? 4 : n);
                if (k >= kleft) n = 0;
                cp16(dst, n > 0 ? src : g, 4 * n);
            } else {
                const bool ok = r < rows && k < kleft;
                cp4(dst, ok ? src : g, ok ? 4 : 0);
            }
        }
    }
};

// One thread's place in the block tile (BM x BN) and the block's main loop:
// shared by sgemm_tile and 34_splitk_fused.cu, so a tile config means the same
// thing for the direct, two-launch split-K and fused split-K schemes.
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS, int STAGES,
          bool TA, bool TB, bool ALIGNED>
struct Tile {
    static constexpr int LM = WM / TM, LN = WN / TN;          // lanes along m and n
    static constexpr int WARPS_M = BM / WM;
    static constexpr int WARPS_MN = (BM / WM) * (BN / WN);    // warps covering the C tile
    static constexpr int KS = THREADS / (32 * WARPS_MN);      // warp groups splitting a k-tile
    static constexpr int NT = 32 * WARPS_MN;                  // threads holding the C tile
    static constexpr int SA = 4 * LM, SB = 4 * LN;            // distance between 4x4 sub-tiles
    static constexpr int LDA = BM + 4, LDB = BN + 4;
    static constexpr int ATILE = BK * LDA, BTILE = BK * LDB;  // floats per stage
    static_assert(LM * LN == 32, "a warp is 32 lanes");
    static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tile is made of 4x4 sub-tiles");
    static_assert(KS * WARPS_MN * 32 == THREADS && (KS == 1 || KS == 2 || KS == 4),
                  "threads = 32 * warps * KS, KS in {1, 2, 4}");
    static_assert(BK % KS == 0, "the k-groups split BK evenly");
    static_assert(STAGES >= 2, "at least double buffering");

    int tid, lane, kg, wmn, bi, bj, aoff, boff;

    __device__ __forceinline__ Tile() {
        tid = threadIdx.x;
        lane = tid & 31;
        const int warp = tid >> 5;
        kg = warp / WARPS_MN;                                  // k-group
        wmn = warp % WARPS_MN;                                 // warp in the tile
        const int wm = wmn % WARPS_M, wn = wmn / WARPS_M;
        bi = blockIdx.x * BM;
        bj = blockIdx.y * BN;
        aoff = wm * WM + (lane % LM) * 4;
        boff = wn * WN + (lane / LM) * 4;
    }

    // acc <- op(A) op(B) over k in [0, K) for this block's C tile.  On return
    // the k-group 0 threads hold the sum of all k-groups (added in a fixed
    // order: deterministic); the others' acc is spent.  Every thread returns,
    // so callers may still use barriers.  smem: the pipeline's dynamic smem.
    __device__ __forceinline__ void accumulate(const float* A, long long lda, const float* B,
                                               long long ldb, int M, int N, int K, float* smem,
                                               float (&acc)[TM][TN]) const {
        float* As = smem;                       // STAGES x ATILE
        float* Bs = smem + STAGES * ATILE;      // STAGES x BTILE
        const int mrows = M - bi, ncols = N - bj;
        using CA = Copy<BM, BK, THREADS, TA, ALIGNED>;      // A: rows m, k-contiguous iff TA
        using CB = Copy<BN, BK, THREADS, !TB, ALIGNED>;     // B: rows n, k-contiguous iff !TB
        const float* ga = A + (TA ? (long long)bi * lda : (long long)bi);
        const float* gb = B + (TB ? (long long)bj : (long long)bj * ldb);
        const long long stepA = TA ? (long long)BK : (long long)BK * lda;
        const long long stepB = TB ? (long long)BK * ldb : (long long)BK;
        const unsigned sA = saddr(As), sB = saddr(Bs);

#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

        const int ntiles = (K + BK - 1) / BK;
        // Prologue: tiles 0 .. STAGES-2 in flight (empty groups keep the count uniform).
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < ntiles) {
                CA::issue(tid, sA + 4u * s * ATILE, ga + s * stepA, lda, mrows, K - s * BK);
                CB::issue(tid, sB + 4u * s * BTILE, gb + s * stepB, ldb, ncols, K - s * BK);
            }
            commit();
        }

        int rd = 0, wr = STAGES - 1;            // stage read this step, stage written
        for (int t = 0; t < ntiles; ++t) {
            wait<STAGES - 2>();                 // this thread's copies of tile t landed
            __syncthreads();                    // everyone's; and stage wr is free again
            const int tn = t + STAGES - 1;
            if (tn < ntiles) {
                CA::issue(tid, sA + 4u * wr * ATILE, ga + tn * stepA, lda, mrows, K - tn * BK);
                CB::issue(tid, sB + 4u * wr * BTILE, gb + tn * stepB, ldb, ncols, K - tn * BK);
            }
            commit();
            // k-group kg takes k-steps kg, kg + KS, ... of the tile
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
        wait<0>();
        if constexpr (KS > 1) {
            // Sum the k-groups' partial tiles in a fixed order (deterministic):
            // groups 1.. park theirs in the (now idle) pipeline smem, group 0 adds.
            __syncthreads();
            float* red = smem;                               // (KS-1) x TM*TN x NT
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
    }

    // Thread-major parking of a partial C tile (34_splitk_fused.cu's workspace
    // slots, 36_splitk_cluster.cu's shared memory): float4 group g of thread t
    // at index e = g * NT + t, so a warp's stores and a reducer's loads are
    // 512 contiguous bytes.  park() writes this thread's groups (k-group 0
    // threads only); coord() maps an index back to its C element (m, n) of
    // rows m..m+3, the epilogue's arithmetic.
    static constexpr int G = TM * TN / 4;                     // float4 groups per thread
    template <class Put>    // put(e, float4)
    __device__ __forceinline__ void park(const float (&acc)[TM][TN], Put put) const {
        const int t = wmn * 32 + lane;
#pragma unroll
        for (int it = 0; it < TM / 4; ++it)
#pragma unroll
            for (int j = 0; j < TN; ++j)
                put((it * TN + j) * NT + t, make_float4(acc[4 * it][j], acc[4 * it + 1][j],
                                                        acc[4 * it + 2][j], acc[4 * it + 3][j]));
    }
    __device__ __forceinline__ void coord(int e, int& m, int& n) const {
        const int g = e / NT, t = e % NT;
        const int it = g / TN, j = g % TN, jt = j / 4, v = j % 4;
        const int tw = t / 32, tl = t % 32;
        m = bi + (tw % WARPS_M) * WM + (tl % LM) * 4 + it * SA;
        n = bj + (tw / WARPS_M) * WN + (tl / LM) * 4 + jt * SB + v;
    }

    // Unaligned C goes out through shared memory (store below), which the
    // main loop's stages held: every thread of the block passes this barrier
    // before any k-group returns.  Aligned C needs nothing.
    static constexpr int PARK = WM * LN;                       // floats a warp parks per pass
    static_assert(ALIGNED || NT * TM <= STAGES * (ATILE + BTILE),
                  "unaligned stores park WM x LN floats a warp in the stages' smem");
    __device__ __forceinline__ void before_store() const {
        if constexpr (!ALIGNED) __syncthreads();
    }

    // C <- alpha * acc + beta * C for this thread's rows m0 + it*SA + u
    // (u < 4) and columns n0 + jt*SB + v, then ep's bias and activation in a
    // rolled second pass (common.cuh, epi_pass4); k-group 0 threads only,
    // after before_store().  Aligned: float4 stores from registers;
    // unaligned: through smem, lanes along m (common.cuh, store_parked).
    __device__ __forceinline__ void store(const float (&acc)[TM][TN], float* C, long long ldc,
                                          int M, int N, float alpha, float beta,
                                          sg::Epi ep, float* smem) const {
        const int m0 = bi + aoff, n0 = bj + boff;
        if constexpr (ALIGNED) {
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
                        sg::store4<ALIGNED>(col, m0 + it * SA, M,
                                        make_float4(acc[i][j], acc[i + 1][j], acc[i + 2][j],
                                                    acc[i + 3][j]), alpha, beta);
                    }
                }
        } else {
            sg::store_parked<TM, TN, LM>(acc, smem + wmn * PARK, C, ldc,
                                         bi + (wmn % WARPS_M) * WM, bj + (wmn / WARPS_M) * WN,
                                         M, N, alpha, beta);
        }
        if (!ep.code) return;
#pragma unroll 1
        for (int jt = 0; jt < TN / 4; ++jt)
#pragma unroll 1
            for (int v = 0; v < 4; ++v) {
                const int n = n0 + jt * SB + v;
                if (n >= N) continue;
                float* col = C + (long long)n * ldc;
#pragma unroll 1
                for (int it = 0; it < TM / 4; ++it) {
                    const int m = m0 + it * SA;
                    sg::epi_pass4(col, m, n, ep, m < M, m + 1 < M, m + 2 < M, m + 3 < M);
                }
            }
    }
};

}  // namespace s30

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS, int STAGES,
          bool TA, bool TB, bool ALIGNED>
__global__ void __launch_bounds__(THREADS, (THREADS <= 256 ? 512 / THREADS : 1))
sgemm_tile(SGEMM_PARAMS) {
    extern __shared__ __align__(16) float smem[];
    SGEMM_BATCH_OFFSET();
    const s30::Tile<BM, BN, BK, WM, WN, TM, TN, THREADS, STAGES, TA, TB, ALIGNED> tile;
    float acc[TM][TN];
    tile.accumulate(A, lda, B, ldb, M, N, K, smem, acc);
    tile.before_store();
    if (tile.kg > 0) return;
    tile.store(acc, C, ldc, M, N, alpha, beta, SGEMM_EPI, smem);
}
