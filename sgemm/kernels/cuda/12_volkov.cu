// Rung 12 -- the Volkov-Demmel (2008) SGEMM: B tile in shared memory, a
// column of A streamed through registers, one row strip of C per thread.
//
// The historical form, kept as a reference point beside the modern ladder.
// A block of BM threads (64 in the original) computes a BM x BN block of C
// (64 x 16).  Per BK = 16 deep k-tile it stages the BK x BN tile of op(B) in
// shared memory; thread t holds its row i = bi + t of op(A) for those BK
// values in registers and does BK rank-1 updates of its 1 x BN strip:
//   c[j] += a[p] * Bs[p][j],  p < BK, j < BN.
// Only B goes through shared memory, and every B read is a broadcast (all
// threads read the same Bs[p][j]); A reaches each thread straight from global
// memory, coalesced because consecutive threads own consecutive rows of the
// column-major A.  The original is column-major too, so the orientation
// carries over as is (seed 004 section 2.1: c[0:15] = C(threadID, 0:15)).
// Adaptations to sm_80 / sm_90:
//  * GT200 fused the shared read into the MAD ("MAD dest, [smem], src2, src3",
//    seed 004 section 3); FFMA now takes registers only, so the B row is read
//    as BN/4 float4 broadcasts per rank-1 update (rows padded to LDB = BN + 4,
//    a multiple of 4, instead of the original b[16][17]).
//  * LDB % 8 == 4 and the k-direction copy works in 8-float chunks (one 32-byte
//    sector per 8 lanes), which keeps the transposed B store conflict-free.
//  * TA: op(A)(i, p) = A[p + i*lda] is strided across threads, so the A tile
//    is first copied (coalesced, along p) into a small shared buffer and each
//    thread then reads its row of it; the original assumed !TA.
//  * All BK values of a's column strip are loaded before the barrier, so
//    their latency overlaps the B copy (the original streamed them inside the
//    unrolled rank-1 loop).
// Seed: seed 004 (Chien's review of Volkov's code, sections 2.1, 7 and 8).
// Edges (seed 004 section 8.1, observation 7): rows of A past M are redirected
// to row M-1 and columns of B past N to column N-1 -- legal reads whose
// results are never stored -- so the full k-tiles run without any check
// ("case I").  The last partial k-tile zero-fills p >= K in both A and B
// (instead of the original rank-k tail loop, which defeated unrolling, seed 004
// figure 67).  Stores are guarded per element (seed 004 figure 58).
// Measured (H200, sgemm bench, bench/results/ladder-h200-2026-11-22.json): 23.3 TFLOPS
// at 4096^3, 46% of cuBLAS: without A reuse across threads it stays below the
// register-blocked rungs (rung 5: 28.6).  Reproduce: sgemm bench --kernels
// 5,12 --sizes 4096.
#include "common.cuh"

namespace rung12 {

// S[p * LD + x] = op(X)(x0 + x, k0 + p) for x < XS, p < BK.  The stored
// operand X has element (p, x) at
//   KCONT  : (x0 + x) * ld + (k0 + p)   (contiguous along k: A when TA, B when !TB)
//   !KCONT : (k0 + p) * ld + (x0 + x)   (contiguous along n: B when TB)
// KCONT copies go in 8-float chunks of k (8 lanes per 32-byte sector, then the
// next x); with LD % 8 == 4 the 32 lanes of a store then hit 32 banks.
// x0 + x is clamped to xmax - 1; p >= K - k0 is zero-filled when KGUARD.
template <int XS, int BK, int LD, int T, bool KCONT, bool KGUARD>
__device__ __forceinline__ void load_tile(float* S, const float* X, long long ld,
                                          int x0, int xmax, int k0, int K) {
#pragma unroll
    for (int s = 0; s < XS * BK / T; ++s) {
        const int e = threadIdx.x + s * T;
        int p, x;
        if (KCONT) {
            p = (e / 8 / XS) * 8 + e % 8;
            x = (e / 8) % XS;
        } else {
            p = e / XS;
            x = e % XS;
        }
        const long long xg = min(x0 + x, xmax - 1);
        const long long off = KCONT ? xg * ld + (k0 + p) : (long long)(k0 + p) * ld + xg;
        S[p * LD + x] = (!KGUARD || k0 + p < K) ? X[off] : 0.0f;
    }
}

}  // namespace rung12

template <int BM, int BN, int BK, bool TA, bool TB>
__global__ void __launch_bounds__(BM)
sgemm_volkov(SGEMM_PARAMS) {
    constexpr int T = BM;                                  // one thread per row of the C block
    constexpr int LDB = BN + ((4 - BN % 8) + 8) % 8;       // LDB % 8 == 4 (20 for BN = 16)
    constexpr int LDA = BM + ((4 - BM % 8) + 8) % 8;       // TA staging buffer
    static_assert(BN % 4 == 0 && BK % 8 == 0 && BM % 4 == 0, "float4 rows, 8-float k chunks");
    static_assert(BN * BK % T == 0, "B tile loads must split evenly");
    __shared__ __align__(16) float Bs[BK * LDB];           // Bs[p * LDB + j] = op(B)(k0 + p, bj + j)
    __shared__ float As[TA ? BK * LDA : 1];                // As[p * LDA + i] = op(A)(bi + i, k0 + p)
    SGEMM_BATCH_OFFSET();

    const int bi = blockIdx.x * BM, bj = blockIdx.y * BN;
    const int i = bi + threadIdx.x;
    const long long ic = min(i, M - 1);                    // redirected row (seed 004 obs. 7)
    float c[BN];
#pragma unroll
    for (int j = 0; j < BN; ++j) c[j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        float a[BK];
        if (k0 + BK <= K) {   // full k-tile: no checks at all
            if (!TA) {
#pragma unroll
                for (int p = 0; p < BK; ++p) a[p] = A[(long long)(k0 + p) * lda + ic];
            } else {
                rung12::load_tile<BM, BK, LDA, T, true, false>(As, A, lda, bi, M, k0, K);
            }
            rung12::load_tile<BN, BK, LDB, T, !TB, false>(Bs, B, ldb, bj, N, k0, K);
        } else {              // last partial k-tile: zero-fill p >= K
            if (!TA) {
#pragma unroll
                for (int p = 0; p < BK; ++p)
                    a[p] = k0 + p < K ? A[(long long)(k0 + p) * lda + ic] : 0.0f;
            } else {
                rung12::load_tile<BM, BK, LDA, T, true, true>(As, A, lda, bi, M, k0, K);
            }
            rung12::load_tile<BN, BK, LDB, T, !TB, true>(Bs, B, ldb, bj, N, k0, K);
        }
        __syncthreads();
        if (TA) {
#pragma unroll
            for (int p = 0; p < BK; ++p) a[p] = As[p * LDA + threadIdx.x];
        }
#pragma unroll
        for (int p = 0; p < BK; ++p) {   // BK rank-1 updates of the 1 x BN strip
#pragma unroll
            for (int q = 0; q < BN / 4; ++q) {
                const float4 b = sg::ld4(&Bs[p * LDB + 4 * q]);
                c[4 * q + 0] = fmaf(a[p], b.x, c[4 * q + 0]);
                c[4 * q + 1] = fmaf(a[p], b.y, c[4 * q + 1]);
                c[4 * q + 2] = fmaf(a[p], b.z, c[4 * q + 2]);
                c[4 * q + 3] = fmaf(a[p], b.w, c[4 * q + 3]);
            }
        }
        __syncthreads();
    }

    if (i >= M) return;
#pragma unroll
    for (int j = 0; j < BN; ++j)
        if (bj + j < N) sg::store_c(C, (long long)(bj + j) * ldc + i, c[j], alpha, beta);
    if (!epi) return;      // the epilogue in a rolled second pass (common.cuh, epi_pass4)
#pragma unroll 4
    for (int j = 0; j < BN; ++j)
        if (bj + j < N) sg::epi_at(C + (long long)(bj + j) * ldc + i, SGEMM_EPI, i, bj + j);
}
