// Rung 6 -- vectorized: 16-byte (float4) global loads, float4 shared loads in
// the inner loop, float4 stores of C.
//
// Adds over rung 5:
//  * Global -> shared copies move float4s along the contiguous dimension of
//    each operand (i for A, p for op(A)=A^T and for B, j for op(B)=B^T): a
//    quarter of the load instructions of rung 5 for the same bytes.
//  * Both tiles stay k-major in shared memory (As[p][i], Bs[p][j]); when the
//    stored operand is contiguous along k (TA for A, !TB for B) the float4
//    read from global memory is transposed on its way in (four scalar stores).
//  * A thread's TM rows are TM/4 groups of 4 consecutive rows, groups
//    interleaved by BM/TM*4 (likewise TN columns): per k step it fetches its
//    fragments with TM/4 + TN/4 float4 shared loads instead of TM + TN
//    scalar ones, consecutive threads read consecutive float4s (no conflict),
//    and the epilogue writes C as float4s down each column.
// Left as is (rung 7's subject): the transposed tile stores conflict.  Tile
// rows are multiples of 32 words (BM, BN of the configs), so element (p, x) sits in bank x % 32 for
// every p, and the BK/4 lanes that copy different k-units of the same x
// collide (2-way at BK = 8).
// ALIGNED: the Python side sets it only when the pointers are 16-byte aligned
// and lda/ldb/ldc and the batch strides are multiples of 4.  ALIGNED=false
// (an offset view such as a[1:]) never issues a vector global access: each
// 4-element unit becomes 4 scalar loads by the same lane, so the shared-memory
// side is unchanged.  (Each of those 4 loads touches the same sectors as the
// one float4 would, so the 3 after the first are expected to hit in L1.)
// Registers: __launch_bounds__ asks for 512 resident threads per SM (two
// 256-thread blocks of the large config), i.e. at most 128 registers.
// Seed: seed 000 method 3 (float4 loads, A transposed into shared memory),
// seed 003 kernel 6 (vectorized load/store), seed 002 kernel 7 (float4 loads).
// Edges (seed 004 section 8.1): rows/columns past the m/n edge are clamped to
// the last valid one (never stored, always legal to read).  Float4s along m/n
// are used only by blocks wholly inside that edge, float4s along k only on
// full k-tiles; elsewhere the scalar loads of a unit are clamped (m/n) or
// zero-filled (k) one by one.  C is stored as a float4 when ALIGNED and all 4
// rows are < M, else per element (C never read when beta == 0).
// Measured (H200, sgemm bench, bench/results/ladder-h200-2026-11-22.json): 38.3 TFLOPS
// at 4096^3 against rung 5's 28.6.  Reproduce: sgemm bench --kernels 5,6
// --sizes 4096.
#include "common.cuh"

namespace rung6 {

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

}  // namespace rung6

template <int BM, int BN, int BK, int TM, int TN, bool TA, bool TB, bool ALIGNED>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), 512 / ((BM / TM) * (BN / TN)))
sgemm_vectorized(SGEMM_PARAMS) {
    constexpr int RM = BM / TM, RN = BN / TN;   // threads along i and along j
    constexpr int T = RM * RN;
    constexpr int LDA = BM, LDB = BN;           // no padding yet (rung 7)
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
            rung6::load_tile<BM, BK, LDA, T, TA, false, ALIGNED>(As, A, lda, bi, M, k0, K);
            rung6::load_tile<BN, BK, LDB, T, !TB, false, ALIGNED>(Bs, B, ldb, bj, N, k0, K);
        } else {
            rung6::load_tile<BM, BK, LDA, T, TA, true, ALIGNED>(As, A, lda, bi, M, k0, K);
            rung6::load_tile<BN, BK, LDB, T, !TB, true, ALIGNED>(Bs, B, ldb, bj, N, k0, K);
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
