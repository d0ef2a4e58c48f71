// Rung 7 -- conflict-free shared memory: rung 6 with padded tile rows.
//
// Adds over rung 6: the rows of both k-major tiles are padded (As[p][LDA],
// Bs[p][LDB]) so that the transposed tile stores (TA for A, !TB for B) no
// longer put two lanes of a warp on one bank.
// Why rung 6 conflicts: its rows are multiples of 32 words long, so element
// (p, x) sits in bank x % 32 whatever p is.  A transposing copy gives the
// BK/4 lanes of one x different k-units p = 4g + r (g < BK/4), all on one bank.
// The pad: lane (g, x) stores to bank ((4g + r)*LD + x) % 32, and a warp's x
// span 128/BK consecutive values.  With LD = W * odd, W = 32/BK, the term
// 4g*LD % 32 = (128/BK) * (g*odd % (BK/4)) gives each g its own block of
// 128/BK banks: all 32 lanes distinct.  For BK = 8, LD % 8 == 4: LDA = BM + 4
// (68 for 64, 132 for 128).  The inner-loop float4 reads and the float4 row
// stores (!TA for A, TB for B) stay contiguous within a row: still one
// wavefront per 8 lanes.
// Padding, not an XOR swizzle: the fix is one constant, the reads stay plain
// row reads, and the scalar (ALIGNED=false) copy, which uses the same lanes,
// is covered too.  Its limit: LD must stay a multiple of 4 for the float4
// reads, so W >= 4, i.e. BK <= 8 (the rules enforce BK in {4, 8}); a deeper
// tile would need a swizzle.  Cost: 4 floats per tile row (512 B at 128x128x8).
// Everything else (float4 loads and fragments, interleaved 4-row groups,
// scalar fallback, float4 epilogue, 128-register cap) is rung 6 unchanged.
// Seed: seed 003 kernel 4 (re-ordered shared layout to cut conflicts); seed
// 004 section 4.4 (padding a leading dimension -- there lda against global
// memory segments; here shared rows against banks, as Volkov's b[16][17] in
// seed 004 figure 67); seed 002 "2D Block Tiling Coalesced + PADDING".
// Edges (seed 004 section 8.1): as rung 6 -- m/n clamped to the last valid
// row/column, float4 along m/n only for blocks inside the edge, along k only
// on full k-tiles, scalar loads zero-filled on the last partial k-tile.
// Measured (H200, bench/results/ladder-h200-2026-11-22.json and ncu at 2048^3): shared
// store conflicts 2.7 million -> 0.63 million a launch, 39.1 TFLOPS at
// 8192^3 against rung 6's 38.3.  Reproduce: sgemm bench --kernels 6,7
// --sizes 8192; sgemm profile 7 --size 2048 2048 2048.
#include "common.cuh"

namespace rung7 {

// S[p * LD + x] = op(X)(x0 + x, k0 + p) for x < XS, p < BK.  The stored
// operand X has element (p, x) at
//   KCONT  : (x0 + x) * ld + (k0 + p)   (contiguous along k: A when TA, B when !TB)
//   !KCONT : (k0 + p) * ld + (x0 + x)   (contiguous along m/n)
// Each thread moves units of 4 consecutive elements along the contiguous
// dimension, consecutive threads on consecutive units.  A unit is one float4
// load when ALIGNED and the whole tile lies inside the matrix along that
// dimension; otherwise the same unit is 4 scalar loads, each clamped (m/n) or
// zero-filled (k) on its own -- same lanes, same shared-memory stores.
// x0 + x is clamped to xmax - 1; p >= K - k0 is zero-filled when KGUARD.
template <int XS, int BK, int LD, int T, bool KCONT, bool KGUARD, bool ALIGNED>
__device__ __forceinline__ void load_tile(float* S, const float* X, long long ld,
                                          int x0, int xmax, int k0, int K) {
    constexpr int G = KCONT ? BK / 4 : XS / 4;   // units along the contiguous dim
    const bool vec = ALIGNED && (KCONT ? !KGUARD : x0 + XS <= xmax);
#pragma unroll
    for (int s = 0; s < XS * BK / 4 / T; ++s) {
        const int u = threadIdx.x + s * T;
        const int c = u % G, r = u / G;
        float4 v;
        if (KCONT) {   // 4 consecutive p of one x, transposed into 4 rows of S
            const int x = r, p = 4 * c;
            const float* src = X + (long long)min(x0 + x, xmax - 1) * ld + (k0 + p);
            if (vec) {
                v = sg::ld4(src);
            } else {
                v.x = (!KGUARD || k0 + p + 0 < K) ? src[0] : 0.0f;
                v.y = (!KGUARD || k0 + p + 1 < K) ? src[1] : 0.0f;
                v.z = (!KGUARD || k0 + p + 2 < K) ? src[2] : 0.0f;
                v.w = (!KGUARD || k0 + p + 3 < K) ? src[3] : 0.0f;
            }
            S[(p + 0) * LD + x] = v.x;
            S[(p + 1) * LD + x] = v.y;
            S[(p + 2) * LD + x] = v.z;
            S[(p + 3) * LD + x] = v.w;
        } else {       // 4 consecutive x of one p: a float4 row segment of S
            const int p = r, x = 4 * c;
            v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (!KGUARD || k0 + p < K) {
                const float* src = X + (long long)(k0 + p) * ld;
                if (vec) {
                    v = sg::ld4(src + (x0 + x));
                } else {
                    v.x = src[min(x0 + x + 0, xmax - 1)];
                    v.y = src[min(x0 + x + 1, xmax - 1)];
                    v.z = src[min(x0 + x + 2, xmax - 1)];
                    v.w = src[min(x0 + x + 3, xmax - 1)];
                }
            }
            *reinterpret_cast<float4*>(&S[p * LD + x]) = v;
        }
    }
}

}  // namespace rung7

template <int BM, int BN, int BK, int TM, int TN, bool TA, bool TB, bool ALIGNED>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), 512 / ((BM / TM) * (BN / TN)))
sgemm_conflict_free(SGEMM_PARAMS) {
    constexpr int RM = BM / TM, RN = BN / TN;   // threads along i and along j
    constexpr int T = RM * RN;
    // Padded row lengths: the smallest LD >= BM (BN) with LD / W odd, W = 32/BK.
    constexpr int W = 32 / BK;
    constexpr int LDA = BM + ((W - BM % (2 * W)) + 2 * W) % (2 * W);
    constexpr int LDB = BN + ((W - BN % (2 * W)) + 2 * W) % (2 * W);
    static_assert(BK == 4 || BK == 8, "padding keeps float4 rows aligned only for BK <= 8");
    static_assert(LDA % 4 == 0 && LDB % 4 == 0, "padded rows must stay 16-byte aligned");
    static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "float4 fragments");
    static_assert(BM % TM == 0 && BN % TN == 0, "TM, TN must divide BM, BN");
    static_assert(BM * BK % (4 * T) == 0 && BN * BK % (4 * T) == 0,
                  "tile loads must split into whole float4s per thread");
    __shared__ __align__(16) float As[BK * LDA];   // As[p * LDA + i] = op(A)(bi + i, k0 + p)
    __shared__ __align__(16) float Bs[BK * LDB];   // Bs[p * LDB + j] = op(B)(k0 + p, bj + j)
    SGEMM_BATCH_OFFSET();

    const int ti = threadIdx.x % RM, tj = threadIdx.x / RM;
    const int bi = blockIdx.x * BM, bj = blockIdx.y * BN;
    float acc[TN][TM];
#pragma unroll
    for (int c = 0; c < TN; ++c)
#pragma unroll
        for (int r = 0; r < TM; ++r) acc[c][r] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        if (k0 + BK <= K) {   // full k-tile: no k guard
            rung7::load_tile<BM, BK, LDA, T, TA, false, ALIGNED>(As, A, lda, bi, M, k0, K);
            rung7::load_tile<BN, BK, LDB, T, !TB, false, ALIGNED>(Bs, B, ldb, bj, N, k0, K);
        } else {
            rung7::load_tile<BM, BK, LDA, T, TA, true, ALIGNED>(As, A, lda, bi, M, k0, K);
            rung7::load_tile<BN, BK, LDB, T, !TB, true, ALIGNED>(Bs, B, ldb, bj, N, k0, K);
        }
        __syncthreads();
#pragma unroll
        for (int p = 0; p < BK; ++p) {
            float a[TM], b[TN];
#pragma unroll
            for (int q = 0; q < TM / 4; ++q) {
                const float4 v = sg::ld4(&As[p * LDA + 4 * (ti + q * RM)]);
                a[4 * q] = v.x; a[4 * q + 1] = v.y; a[4 * q + 2] = v.z; a[4 * q + 3] = v.w;
            }
#pragma unroll
            for (int q = 0; q < TN / 4; ++q) {
                const float4 v = sg::ld4(&Bs[p * LDB + 4 * (tj + q * RN)]);
                b[4 * q] = v.x; b[4 * q + 1] = v.y; b[4 * q + 2] = v.z; b[4 * q + 3] = v.w;
            }
#pragma unroll
            for (int c = 0; c < TN; ++c)
#pragma unroll
                for (int r = 0; r < TM; ++r) acc[c][r] = fmaf(a[r], b[c], acc[c][r]);
        }
        __syncthreads();
    }

    // Epilogue: column j = bj + 4*(tj + qn*RN) + cc, rows i4 .. i4+3.
#pragma unroll
    for (int c = 0; c < TN; ++c) {
        const int j = bj + 4 * (tj + (c / 4) * RN) + c % 4;
        if (j >= N) continue;
#pragma unroll
        for (int q = 0; q < TM / 4; ++q) {
            const int i4 = bi + 4 * (ti + q * RM);
            float* cp = C + (long long)j * ldc + i4;
            if (ALIGNED && i4 + 4 <= M) {
                float4 o = make_float4(alpha * acc[c][4 * q], alpha * acc[c][4 * q + 1],
                                       alpha * acc[c][4 * q + 2], alpha * acc[c][4 * q + 3]);
                if (beta != 0.0f) {   // beta == 0: C is not read
                    const float4 old = sg::ld4(cp);
                    o.x = fmaf(beta, old.x, o.x); o.y = fmaf(beta, old.y, o.y);
                    o.z = fmaf(beta, old.z, o.z); o.w = fmaf(beta, old.w, o.w);
                }
                *reinterpret_cast<float4*>(cp) = o;
            } else {
#pragma unroll
                for (int rr = 0; rr < 4; ++rr)
                    if (i4 + rr < M) sg::store_c(cp, rr, acc[c][4 * q + rr], alpha, beta);
            }
        }
    }
    if (!epi) return;      // the epilogue in a rolled second pass (common.cuh, epi_pass4)
#pragma unroll 1
    for (int c = 0; c < TN; ++c) {
        const int j = bj + 4 * (tj + (c / 4) * RN) + c % 4;
        if (j >= N) continue;
#pragma unroll 1
        for (int q = 0; q < TM / 4; ++q) {
            const int i4 = bi + 4 * (ti + q * RM);
            sg::epi_pass4(C + (long long)j * ldc, i4, j, SGEMM_EPI, i4 < M, i4 + 1 < M,
                          i4 + 2 < M, i4 + 3 < M);
        }
    }
}
