// Scheme kernel 33 -- tall-skinny / matrix-vector GEMM ("gemv", "gemv_wide").
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
// Measured (H100, public suite, bench/results/suite-h100-2026-11-25.json;
// reproduce: bash scripts/gpu_session.sh suite): 8192x4x2048 3.2x cuBLAS under
// CUDA graphs, 1x4096x4096 NT 0.98x, and the wide form on 1x4096x4096 NN 0.87x:
// reading the big operand once is what a memory-bound product can do, so these
// sit near cuBLAS or above it.
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

// k-row p of the staged small operand, Ys[p][0..S): one broadcast read per
// float4 when S allows it.
template <int S>
__device__ __forceinline__ void load_y(const float* Ys, int p, float (&y)[S]) {
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
                if (lane == s && s < scount)
                    sg::store_c(C, cptr(r, s), acc[q][s], alpha, beta);
        }
        // The epilogue in a rolled second pass (common.cuh, epi_pass4): lane
        // s finishes the outputs it stored.
        if (epi && lane < S && lane < scount) {
#pragma unroll 1
            for (int q = 0; q < ROWS; ++q) {
                const int r = rbase + q;
                if (r >= rcount) continue;
                if (SMALL_M) sg::epi_at(C + cptr(r, lane), SGEMM_EPI, s0 + lane, r0 + r);
                else         sg::epi_at(C + cptr(r, lane), SGEMM_EPI, r0 + r, s0 + lane);
            }
        }
    } else {
        constexpr int V = RB / 32;                    // consecutive rows per lane
        constexpr bool EPI_INLINE = SMALL_M && S == 16;   // see the epilogue below
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
                    s33::load_y<S>(Ys, p, y);
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
                if (r < rcount) {
                    if (!EPI_INLINE)
                        sg::store_c(C, cptr(r, s), t, alpha, beta);
                    else if (SMALL_M)
                        sg::store_c(C, cptr(r, s), t, alpha, beta, SGEMM_EPI, s0 + s, r0 + r);
                    else
                        sg::store_c(C, cptr(r, s), t, alpha, beta, SGEMM_EPI, r0 + r, s0 + s);
                }
            }
            __syncthreads();
        }
        // The epilogue: a second pass over this thread's outputs
        // (common.cuh, epi_grid), or inline in the loop above (EPI_INLINE).
        // Neither compiles without spills for every block: inline, 32x16
        // (sm_80) and 64x2 (sm_90a) blocks spilled 4-8 bytes; as the pass,
        // the 16x32 block of 256 threads on sm_80 did (ptxas, NVRTC 13.5).
        if (!EPI_INLINE && epi && tid < RB) {
            const int nr = (RB - 1 - tid) / THREADS + 1;
            if (SMALL_M) sg::epi_grid(C, ldc, M, N, s0, 1, S, r0 + tid, THREADS, nr, SGEMM_EPI);
            else         sg::epi_grid(C, ldc, M, N, r0 + tid, THREADS, nr, s0, 1, S, SGEMM_EPI);
        }
    }
}

// ---- gemv_wide (scheme id 35): the big operand contiguous along the output ----
//
// The R-contiguous layout above puts a warp on 32 rows (128 bytes) of X per
// k-row and keeps K inside one block; for 1x4096x4096 NN that gave 32 blocks
// per strip width and 128-byte row segments: 55 us where cuBLAS takes 18 us,
// and more loads in flight made it slower (docs/notes/dispatch.md).  Here:
//   * a lane owns 4 consecutive outputs and reads them as one float4, so a
//     warp reads RB = 128 V contiguous floats (512 V bytes) of each k-row;
//   * the block's warps take interleaved k-rows of the block's K range, U
//     rows per lane in flight, and meet in shared memory in warp order;
//   * K is also split over blocks (grid z = batch * NS, NS slices of kc rows)
//     so a 4096-wide output still fills the SMs; the slices are summed as in
//     34_splitk_fused.cu: partial strip to a workspace slot, a counter, and
//     the last block adds the NS slots in order 0..NS-1 (deterministic) and
//     resets the counter.  NS == 1: no workspace, C written directly.
// float4 needs X's rows 16-byte aligned (pointer and ld); that is checked here
// per block rather than by the host's ALIGNED flag, which also asks for C
// and the small operand to be aligned (an m = 1 call has lda = 1 and would
// never qualify).  Otherwise, and for a k-contiguous X (correct, not fast:
// the dispatcher sends that orientation to sgemm_gemv), 4 scalar loads.
// The small operand Y is staged in shared memory BK rows at a time, Ys[p][s],
// so a k-row's S values are one broadcast read.
namespace s33 {

// X(r .. r+3, k) for lanes along r; zero outside rcount / when !kin.
template <bool KCONT, bool VEC>
__device__ __forceinline__ float4 load_x(const float* __restrict__ X, int r, int k, long long ldx,
                                         int rcount, bool kin) {
    if constexpr (VEC && !KCONT) {
        if (kin && r + 3 < rcount) return sg::ld4(X + (long long)k * ldx + r);
    }
    float v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u)
        v[u] = (kin && r + u < rcount) ? X[off<KCONT>(r + u, k, ldx)] : 0.0f;
    return make_float4(v[0], v[1], v[2], v[3]);
}

// One chunk of a warp's k-rows (p = warp, warp + WARPS, ... below rows*WARPS)
// into acc: U rows per lane in flight, then their FMAs against Ys[p][0..S).
template <int S, int V, int U, int WARPS, bool KCONT, bool VEC>
__device__ __forceinline__ void wide_rows(float (&acc)[V][4][S], const float* __restrict__ X,
                                          long long ldx, const float* Ys, int k0, int rows,
                                          int warp, int lane, int rcount) {
    for (int g = 0; g < rows; g += U) {
        float4 x[U][V];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int p = warp + (g + u) * WARPS;
            const bool kin = g + u < rows;
#pragma unroll
            for (int v = 0; v < V; ++v)
                x[u][v] = load_x<KCONT, VEC>(X, v * 128 + lane * 4, k0 + p, ldx, rcount, kin);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (g + u >= rows) break;
            const int p = warp + (g + u) * WARPS;
            float y[S];
            s33::load_y<S>(Ys, p, y);
#pragma unroll
            for (int v = 0; v < V; ++v)
#pragma unroll
                for (int s = 0; s < S; ++s) {
                    acc[v][0][s] = fmaf(x[u][v].x, y[s], acc[v][0][s]);
                    acc[v][1][s] = fmaf(x[u][v].y, y[s], acc[v][1][s]);
                    acc[v][2][s] = fmaf(x[u][v].z, y[s], acc[v][2][s]);
                    acc[v][3][s] = fmaf(x[u][v].w, y[s], acc[v][3][s]);
                }
        }
    }
}

// Resident threads per SM to ask ptxas for: enough blocks that every block of
// a typical grid (~8 per SM) is resident at once, within the registers the
// accumulators need (4*V*S: 4 at S = 1, 64 at S = 16).
__host__ __device__ constexpr int wide_min_blocks(int s, int threads) {
    return ((s <= 1 ? 768 : 512) / threads) > 0
               ? (s <= 1 ? 768 : 512) / threads : 1;
}

}  // namespace s33

template <int BM, int BN, int BK, int THREADS, bool TA, bool TB>
__global__ void __launch_bounds__(THREADS, s33::wide_min_blocks(BM <= 16 ? BM : BN, THREADS))
sgemm_gemv_wide(SGEMM_PARAMS, float* __restrict__ W, unsigned* __restrict__ counters,
                int kc, int NS) {
    constexpr bool SMALL_M = BM <= 16;
    constexpr int S = SMALL_M ? BM : BN;
    constexpr int RB = SMALL_M ? BN : BM;
    constexpr bool KCONT = SMALL_M ? !TB : TA;
    constexpr bool YK = SMALL_M ? TA : !TB;
    constexpr int WARPS = THREADS / 32;
    constexpr int V = RB / 128;                     // float4s per lane per k-row
    constexpr int U = S <= 4 ? 8 : 4;               // k-rows per lane in flight
    constexpr int SG = (4096 / (WARPS * RB)) < S ? (4096 / (WARPS * RB)) : S;  // s per reduction round
    static_assert(S >= 1 && S <= 16, "small side per block is 1..16");
    static_assert(RB % 128 == 0 && V * S <= 16, "RB: multiple of 128; 4*V*S accumulators <= 64");
    static_assert(BK % WARPS == 0 && BK * S * 4 <= 16384, "Y chunk: BK rows split over warps, <= 16 KiB");
    static_assert(SG >= 1 && WARPS * RB * SG <= 4096, "reduction buffer <= 16 KiB");

    __shared__ __align__(16) float Ys[BK * S];
    __shared__ __align__(16) float Red[WARPS * RB * SG];
    __shared__ unsigned is_last;

    sg::pdl_wait();
    const int slice = blockIdx.z % NS;
    const long long entry = blockIdx.z / NS;
    A += entry * strideA;
    B += entry * strideB;
    C += entry * strideC;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int s0 = (SMALL_M ? blockIdx.x : blockIdx.y) * S;
    const int r0 = (SMALL_M ? blockIdx.y : blockIdx.x) * RB;
    const int scount = (SMALL_M ? M : N) - s0;
    const int rcount = (SMALL_M ? N : M) - r0;
    const int kbeg = slice * kc, kend = min(K, kbeg + kc);

    const float* X;
    long long ldx;
    if constexpr (SMALL_M) { X = B + (TB ? (long long)r0 : (long long)r0 * ldb); ldx = ldb; }
    else                   { X = A + (TA ? (long long)r0 * lda : (long long)r0); ldx = lda; }
    const float* Y;
    long long ldy;
    if constexpr (SMALL_M) { Y = A + (TA ? (long long)s0 * lda : (long long)s0); ldy = lda; }
    else                   { Y = B + (TB ? (long long)s0 : (long long)s0 * ldb); ldy = ldb; }
    const bool vec = !KCONT && (reinterpret_cast<unsigned long long>(X) & 15) == 0 && (ldx & 3) == 0;

    float acc[V][4][S];
#pragma unroll
    for (int v = 0; v < V; ++v)
#pragma unroll
        for (int c = 0; c < 4; ++c) s33::zero(acc[v][c]);

    for (int k0 = kbeg; k0 < kend; k0 += BK) {
        const int kl = min(BK, kend - k0);
        // Stage Y(k0 + p, s) -> Ys[p * S + s] (zeros past the chunk / small side).
        for (int e = tid; e < BK * S; e += THREADS) {
            int p, s;
            if constexpr (YK) { p = e % BK; s = e / BK; } else { s = e % S; p = e / S; }
            Ys[p * S + s] = (p < kl && s < scount) ? Y[s33::off<YK>(s, k0 + p, ldy)] : 0.0f;
        }
        __syncthreads();
        const int rows = (kl - warp + WARPS - 1) / WARPS;     // this warp's k-rows in the chunk
        // One uniform branch per chunk; the scalar path keeps fewer rows in
        // flight, so it does not set the register budget of the float4 path.
        if (vec)
            s33::wide_rows<S, V, U, WARPS, KCONT, true>(acc, X, ldx, Ys, k0, rows, warp, lane, rcount);
        else
            s33::wide_rows<S, V, 2, WARPS, KCONT, false>(acc, X, ldx, Ys, k0, rows, warp, lane, rcount);
        __syncthreads();
    }

    // Warps meet in shared memory, SG small-side columns per round, summed in
    // warp order; the block's strip goes to C (NS == 1) or to its slot.
    const long long tile = (entry * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    float* slot = W + (tile * NS + slice) * (long long)(S * RB);
#pragma unroll
    for (int sb = 0; sb < S; sb += SG) {
#pragma unroll
        for (int sl = 0; sl < SG; ++sl) {
            if (sb + sl >= S) break;
#pragma unroll
            for (int v = 0; v < V; ++v)
                *reinterpret_cast<float4*>(Red + (warp * SG + sl) * RB + v * 128 + lane * 4) =
                    make_float4(acc[v][0][sb + sl], acc[v][1][sb + sl], acc[v][2][sb + sl],
                                acc[v][3][sb + sl]);
        }
        __syncthreads();
        for (int e = tid; e < SG * RB; e += THREADS) {
            const int sl = e / RB, r = e % RB, s = sb + sl;
            if (s >= S) continue;
            float t = 0.0f;
#pragma unroll
            for (int w = 0; w < WARPS; ++w) t += Red[(w * SG + sl) * RB + r];
            if (NS == 1) {
                if (s < scount && r < rcount) {
                    const long long o = SMALL_M ? (long long)(r0 + r) * ldc + (s0 + s)
                                                : (long long)(s0 + s) * ldc + (r0 + r);
                    sg::store_c(C, o, t, alpha, beta, SGEMM_EPI, SMALL_M ? s0 + s : r0 + r,
                                SMALL_M ? r0 + r : s0 + s);
                }
            } else {
                __stcg(slot + s * RB + r, t);
            }
        }
        __syncthreads();
    }
    if (NS == 1) return;

    __threadfence();
    __syncthreads();
    if (tid == 0) is_last = sg::count_in(counters + tile) == (unsigned)(NS - 1);
    __syncthreads();
    if (!is_last) return;
    __threadfence();
    const float* slots = W + tile * NS * (long long)(S * RB);
    for (int e = tid; e < S * RB; e += THREADS) {
        const int s = e / RB, r = e % RB;
        const float t = sg::sum_slots(slots, S * RB, NS, e);     // slots in order
        if (s < scount && r < rcount) {
            const long long o = SMALL_M ? (long long)(r0 + r) * ldc + (s0 + s)
                                        : (long long)(s0 + s) * ldc + (r0 + r);
            sg::store_c(C, o, t, alpha, beta, SGEMM_EPI, SMALL_M ? s0 + s : r0 + r,
                        SMALL_M ? r0 + r : s0 + s);
        }
    }
    if (tid == 0) counters[tile] = 0u;
}
