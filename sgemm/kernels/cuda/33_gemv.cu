// Scheme kernel 33 -- tall-skinny / matrix-vector GEMM ("gemv", issue 5).
//
// For m or n <= 16 the product is a few matrix-vector products: the big
// operand X (R rows along the big side of C, by K) is read exactly once,
// coalesced, and the small operand Y (K by S, S <= 16) is staged in shared
// memory chunk by chunk.  The block shape says which side is small:
//   BM <= 16: the small side is m (S = BM), X = op(B)^T, Y = op(A)^T, RB = BN;
//   else      the small side is n (S = BN), X = op(A),   Y = op(B),   RB = BM.
// A block owns an RB-row strip of the big side and S columns of the small
// side; the grid is the ordinary (ceil(m/BM), ceil(n/BN), batch), so any
// problem is computed correctly (a small side larger than S just gives more
// blocks along it).
//
// Two inner layouts, chosen by how X lies in memory:
//   KCONT (X contiguous along k): warp per row group; lanes along k (float4
//     when ALIGNED), ROWS = RB/WARPS rows at once so each Y value read from
//     shared memory feeds ROWS FMAs; a butterfly shuffle sums the lanes.
//   R-contiguous: lanes along the rows (V = RB/32 consecutive rows per lane,
//     float4/float2 when ALIGNED), the block's warps split k; Y(p, 0..S-1) is
//     one broadcast read; the warps' partial sums meet in shared memory.
//     Each lane keeps up to 16 loads in flight (8 for S >= 4) (a 128-byte warp load each):
//     with 16 warps that is ~32 KiB in flight per SM, what HBM3e needs.
// Both use fixed summation orders: results are deterministic.
// beta == 0 never reads C (common.cuh).
#include "common.cuh"

namespace s33 {

template <bool KCONT>
__device__ __forceinline__ long long off(int r, int k, long long ld) {
    return KCONT ? (long long)r * ld + k : (long long)k * ld + r;
}

template <int S>
__device__ __forceinline__ void zero(float (&a)[S]) {
#pragma unroll
    for (int s = 0; s < S; ++s) a[s] = 0.0f;
}

}  // namespace s33

template <int BM, int BN, int BK, int THREADS, bool TA, bool TB, bool ALIGNED>
__global__ void __launch_bounds__(THREADS)
sgemm_gemv(SGEMM_PARAMS) {
    constexpr bool SMALL_M = BM <= 16;
    constexpr int S = SMALL_M ? BM : BN;          // small-side outputs per block
    constexpr int RB = SMALL_M ? BN : BM;         // big-side rows per block
    constexpr bool KCONT = SMALL_M ? !TB : TA;    // X contiguous along k
    constexpr bool YK = SMALL_M ? TA : !TB;       // Y contiguous along k
    constexpr int WARPS = THREADS / 32;
    static_assert(S >= 1 && S <= 16, "small side per block is 1..16");
    static_assert(BK % 128 == 0 && BK % WARPS == 0, "BK: multiple of 128 and of the warps");
    static_assert(BK * S * 4 <= 32768, "the Y chunk must fit in 32 KiB of shared memory");
    static_assert(RB % 32 == 0 && RB <= 128 && RB % WARPS == 0, "RB: 32, 64 or 128, split over warps");

    SGEMM_BATCH_OFFSET();
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int s0 = (SMALL_M ? blockIdx.x : blockIdx.y) * S;
    const int r0 = (SMALL_M ? blockIdx.y : blockIdx.x) * RB;
    const int scount = (SMALL_M ? M : N) - s0;     // valid small outputs (>= 1)
    const int rcount = (SMALL_M ? N : M) - r0;     // valid big rows (>= 1)

    // X(r, p) = X[off<KCONT>(r, p, ldx)], r relative to r0.
    const float* X;
    long long ldx;
    if constexpr (SMALL_M) { X = B + (TB ? (long long)r0 : (long long)r0 * ldb); ldx = ldb; }
    else                   { X = A + (TA ? (long long)r0 * lda : (long long)r0); ldx = lda; }
    // Y(p, s) = Y[off<YK>(s, p, ldy)] -- with YK, contiguous along p.
    const float* Y;
    long long ldy;
    if constexpr (SMALL_M) { Y = A + (TA ? (long long)s0 * lda : (long long)s0); ldy = lda; }
    else                   { Y = B + (TB ? (long long)s0 : (long long)s0 * ldb); ldy = ldb; }

    // Y chunk in shared memory: KCONT reads Ys[s][p] (float4 along p),
    // R-contiguous reads Ys[p][s] (broadcast along s).
    __shared__ __align__(16) float Ys[BK * S];
    // R-contiguous cross-warp reduction buffer.
    __shared__ __align__(16) float Red[KCONT ? 1 : WARPS * RB];

    // C(r, s) for the block: SMALL_M: C(s0 + s, r0 + r); else C(r0 + r, s0 + s).
    auto cptr = [&](int r, int s) -> long long {
        return SMALL_M ? (long long)(r0 + r) * ldc + (s0 + s) : (long long)(s0 + s) * ldc + (r0 + r);
    };

    if constexpr (KCONT) {
        constexpr int ROWS = RB / WARPS;              // rows per warp
        constexpr bool V4 = ALIGNED;
        static_assert(ROWS * S <= 64, "accumulators: ROWS * S <= 64");
        float acc[ROWS][S];
#pragma unroll
        for (int q = 0; q < ROWS; ++q) s33::zero(acc[q]);
        const int rbase = warp * ROWS;

        for (int k0 = 0; k0 < K; k0 += BK) {
            const int kleft = K - k0;
            // Stage Y(k0 + p, s) -> Ys[s * BK + p].
#pragma unroll 4
            for (int e = tid; e < BK * S; e += THREADS) {
                int p, s;
                if constexpr (YK) { p = e % BK; s = e / BK; } else { s = e % S; p = e / S; }
                Ys[s * BK + p] = (p < kleft && s < scount) ? Y[s33::off<YK>(s, k0 + p, ldy)] : 0.0f;
            }
            __syncthreads();
            if constexpr (V4) {
#pragma unroll
                for (int c = 0; c < BK / 128; ++c) {
                    const int p = c * 128 + lane * 4;
                    float4 x[ROWS];
#pragma unroll
                    for (int q = 0; q < ROWS; ++q) {
                        const int r = rbase + q;
                        const float* src = X + s33::off<true>(r, k0 + p, ldx);
                        if (r < rcount && p + 3 < kleft) {
                            x[q] = sg::ld4(src);
                        } else {
                            const bool ok = r < rcount;
                            x[q].x = (ok && p < kleft) ? src[0] : 0.0f;
                            x[q].y = (ok && p + 1 < kleft) ? src[1] : 0.0f;
                            x[q].z = (ok && p + 2 < kleft) ? src[2] : 0.0f;
                            x[q].w = (ok && p + 3 < kleft) ? src[3] : 0.0f;
                        }
                    }
#pragma unroll
                    for (int s = 0; s < S; ++s) {
                        const float4 y = *reinterpret_cast<const float4*>(Ys + s * BK + p);
#pragma unroll
                        for (int q = 0; q < ROWS; ++q) {
                            float a = acc[q][s];
                            a = fmaf(x[q].x, y.x, a);
                            a = fmaf(x[q].y, y.y, a);
                            a = fmaf(x[q].z, y.z, a);
                            a = fmaf(x[q].w, y.w, a);
                            acc[q][s] = a;
                        }
                    }
                }
            } else {
#pragma unroll
                for (int c = 0; c < BK / 32; c += 4) {
                    float x[4][ROWS];
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        const int p = (c + u) * 32 + lane;
#pragma unroll
                        for (int q = 0; q < ROWS; ++q) {
                            const int r = rbase + q;
                            x[u][q] = (r < rcount && p < kleft) ? X[s33::off<true>(r, k0 + p, ldx)] : 0.0f;
                        }
                    }
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        const int p = (c + u) * 32 + lane;
#pragma unroll
                        for (int s = 0; s < S; ++s) {
                            const float y = Ys[s * BK + p];
#pragma unroll
                            for (int q = 0; q < ROWS; ++q) acc[q][s] = fmaf(x[u][q], y, acc[q][s]);
                        }
                    }
                }
            }
            __syncthreads();
        }
        // Butterfly: every lane ends with the full sums; lane s writes column s.
#pragma unroll
        for (int q = 0; q < ROWS; ++q)
#pragma unroll
            for (int s = 0; s < S; ++s) {
                float a = acc[q][s];
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
                acc[q][s] = a;
            }
#pragma unroll
        for (int q = 0; q < ROWS; ++q) {
            const int r = rbase + q;
            if (r >= rcount) continue;
#pragma unroll
            for (int s = 0; s < S; ++s)
                if (lane == s && s < scount) sg::store_c(C, cptr(r, s), acc[q][s], alpha, beta);
        }
    } else {
        constexpr int V = RB / 32;                    // consecutive rows per lane
        constexpr int PW = BK / WARPS;                // k per warp per chunk
        constexpr int UMAX = S >= 4 ? 8 : 16;          // loads in flight per lane
        constexpr int U = PW < UMAX ? PW : UMAX;
        static_assert(PW % U == 0, "k per warp must split into groups of U");
        float acc[V][S];
#pragma unroll
        for (int v = 0; v < V; ++v) s33::zero(acc[v]);
        const int rl = lane * V;                      // this lane's first row
        const bool rfull = rl + V - 1 < rcount;

        for (int k0 = 0; k0 < K; k0 += BK) {
            const int kleft = K - k0;
            // Stage Y(k0 + p, s) -> Ys[p * S + s].
#pragma unroll 4
            for (int e = tid; e < BK * S; e += THREADS) {
                int p, s;
                if constexpr (YK) { p = e % BK; s = e / BK; } else { s = e % S; p = e / S; }
                Ys[p * S + s] = (p < kleft && s < scount) ? Y[s33::off<YK>(s, k0 + p, ldy)] : 0.0f;
            }
            __syncthreads();
#pragma unroll
            for (int g = 0; g < PW; g += U) {
                float x[U][V];
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    const int p = warp + (g + u) * WARPS;    // warps interleave along k
                    const float* src = X + s33::off<false>(rl, k0 + p, ldx);
                    const bool kin = p < kleft;
                    bool done = false;
                    if constexpr (ALIGNED && V == 4) {
                        if (rfull && kin) {
                            const float4 t = sg::ld4(src);
                            x[u][0] = t.x; x[u][1] = t.y; x[u][2] = t.z; x[u][3] = t.w;
                            done = true;
                        }
                    } else if constexpr (ALIGNED && V == 2) {
                        if (rfull && kin) {
                            const float2 t = *reinterpret_cast<const float2*>(src);
                            x[u][0] = t.x; x[u][1] = t.y;
                            done = true;
                        }
                    }
                    if (!done) {
#pragma unroll
                        for (int v = 0; v < V; ++v) x[u][v] = (kin && rl + v < rcount) ? src[v] : 0.0f;
                    }
                }
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    const int p = warp + (g + u) * WARPS;
                    float y[S];
                    if constexpr (S % 4 == 0) {
#pragma unroll
                        for (int s = 0; s < S; s += 4) {
                            const float4 t = *reinterpret_cast<const float4*>(Ys + p * S + s);
                            y[s] = t.x; y[s + 1] = t.y; y[s + 2] = t.z; y[s + 3] = t.w;
                        }
                    } else {
#pragma unroll
                        for (int s = 0; s < S; ++s) y[s] = Ys[p * S + s];
                    }
#pragma unroll
                    for (int v = 0; v < V; ++v)
#pragma unroll
                        for (int s = 0; s < S; ++s) acc[v][s] = fmaf(x[u][v], y[s], acc[v][s]);
                }
            }
            __syncthreads();
        }
        // Sum the warps' partials, one small-side column at a time, warp order fixed.
#pragma unroll
        for (int s = 0; s < S; ++s) {
            if (s >= scount) break;
#pragma unroll
            for (int v = 0; v < V; ++v) Red[warp * RB + rl + v] = acc[v][s];
            __syncthreads();
            for (int r = tid; r < RB; r += THREADS) {
                float t = 0.0f;
#pragma unroll
                for (int w = 0; w < WARPS; ++w) t += Red[w * RB + r];
                if (r < rcount) sg::store_c(C, cptr(r, s), t, alpha, beta);
            }
            __syncthreads();
        }
    }
}
