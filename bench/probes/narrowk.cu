// Prototype (bench/probes/narrowk_ab.py; not part of the package): a product
// with a side of at most 32 whose big operand lies along k, streamed.
//
// P[split][r][s] = sum over k in the split's slice of X(r, k) * Y(k, s), for
// X row-major R x K (k contiguous) and Y given as Yt (S x K, k contiguous:
// YK) or as Y (K x S, s contiguous).  AL: X's rows (and Yt's) start on 16
// bytes, so a lane's 4 k are one 16-byte copy; else four 4-byte copies.  A second
// kernel sums the splits in order into C (R x S, row-major).
//
// Why: deep K beside a side of at most 32 with the big operand along k ran
// at 0.79-0.93 of cuBLAS on the 32x256 and 128x32 tiles, which stream it at
// 1.2-1.5 TB/s (bench/results/forced-cands-narrow-deepk-h200-2026-11-29.json).
// Here nothing is transposed: a 128-deep chunk of each of a warp's ROWS rows
// is copied by 16-byte cp.async lane by lane (lane l copies k = 4l..4l+3 of
// each row and later reads only what it copied), NST chunks in flight, and
// the block's Y chunk (S x 128, shared by its warps) rides in the same
// stages.  Per chunk a lane reads ROWS + S float4 from shared memory for
// 4 * ROWS * S FMAs; the lanes' partial sums meet by a butterfly at the end
// of the slice (each chain is slice / 32 long, then 5 adds).
#define NK_CHUNK 128

__device__ __forceinline__ unsigned nk_smem(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void nk_cp16(unsigned dst, const float* src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(bytes));
}
__device__ __forceinline__ void nk_cp4(unsigned dst, const float* src, int bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
                 "r"(bytes));
}
__device__ __forceinline__ void nk_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// a + x . y, in k order
__device__ __forceinline__ float nk_dot4(float4 x, float4 y, float a) {
    return fmaf(x.w, y.w, fmaf(x.z, y.z, fmaf(x.y, y.y, fmaf(x.x, y.x, a))));
}
template <int N>
__device__ __forceinline__ void nk_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

template <int S, int ROWS, int WARPS, int NST, bool YK, bool AL>
__global__ void __launch_bounds__(WARPS * 32, 1)
narrowk_main(int R, int K, int Sreal, int kslice, const float* __restrict__ X, long long ldx,
             const float* __restrict__ Y, long long ldy, float* __restrict__ P) {
    constexpr int T = WARPS * 32;
    constexpr int XS = WARPS * ROWS * NK_CHUNK;      // one stage of X, floats
    constexpr int YS = S * NK_CHUNK;                 // one stage of Y
    extern __shared__ __align__(16) float sm[];
    float* Xs = sm;                                  // [NST][WARPS][ROWS][128]
    float* Ys = sm + NST * XS;                       // [NST][S][128]

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int r0 = blockIdx.x * (WARPS * ROWS) + warp * ROWS;
    const int kb = blockIdx.y * kslice;
    const int ke = min(K, kb + kslice);
    const int nchunks = (ke - kb + NK_CHUNK - 1) / NK_CHUNK;

    auto issue = [&](int c) {
        const int st = c % NST, k0 = kb + c * NK_CHUNK;
        // X: lane's own 4 k of each of its warp's rows
        const int k = k0 + 4 * lane;
        const int left = ke - k;
#pragma unroll
        for (int q = 0; q < ROWS; ++q) {
            const int r = r0 + q;
            const bool ok = r < R && left > 0;
            const float* src = ok ? X + (long long)r * ldx + k : X;
            const unsigned dst = nk_smem(Xs + st * XS + (warp * ROWS + q) * NK_CHUNK + 4 * lane);
            if constexpr (AL) {
                nk_cp16(dst, src, ok ? 4 * min(4, left) : 0);
            } else {    // rows off 16 bytes: four 4-byte copies, each guarded
#pragma unroll
                for (int u = 0; u < 4; ++u)
                    nk_cp4(dst + 4 * u, ok && u < left ? src + u : X, ok && u < left ? 4 : 0);
            }
        }
        float* ys = Ys + st * YS;
        if constexpr (YK) {      // Yt(s, k) at Y[s * ldy + k]: 16-byte copies along k
            for (int e = tid; e < S * (NK_CHUNK / 4); e += T) {
                const int s = e / (NK_CHUNK / 4), kk = 4 * (e % (NK_CHUNK / 4));
                const int l = ke - (k0 + kk);
                const bool ok = s < Sreal && l > 0;
                const float* src = ok ? Y + (long long)s * ldy + k0 + kk : Y;
                const unsigned dst = nk_smem(ys + s * NK_CHUNK + kk);
                if constexpr (AL) {
                    nk_cp16(dst, src, ok ? 4 * min(4, l) : 0);
                } else {
#pragma unroll
                    for (int u = 0; u < 4; ++u)
                        nk_cp4(dst + 4 * u, ok && u < l ? src + u : Y, ok && u < l ? 4 : 0);
                }
            }
        } else {                 // Y(k, s) at Y[k * ldy + s]: 4-byte copies along s
            for (int e = tid; e < S * NK_CHUNK; e += T) {
                const int s = e % S, kk = e / S;
                const bool ok = s < Sreal && k0 + kk < ke;
                nk_cp4(nk_smem(ys + s * NK_CHUNK + kk), ok ? Y + (long long)(k0 + kk) * ldy + s : Y,
                       ok ? 4 : 0);
            }
        }
    };

    float acc[ROWS][S];
#pragma unroll
    for (int q = 0; q < ROWS; ++q)
#pragma unroll
        for (int s = 0; s < S; ++s) acc[q][s] = 0.0f;

#pragma unroll
    for (int c = 0; c < NST - 1; ++c) {
        if (c < nchunks) issue(c);
        nk_commit();
    }
    for (int c = 0; c < nchunks; ++c) {
        nk_wait<NST - 2>();
        __syncthreads();       // chunk c's Y is in; every warp is done with chunk c - 1
        if (c + NST - 1 < nchunks) issue(c + NST - 1);
        nk_commit();
        const int st = c % NST;
        float4 x[ROWS];
#pragma unroll
        for (int q = 0; q < ROWS; ++q)
            x[q] = *reinterpret_cast<const float4*>(Xs + st * XS + (warp * ROWS + q) * NK_CHUNK +
                                                    4 * lane);
        const float* ys = Ys + st * YS + 4 * lane;
#pragma unroll
        for (int s = 0; s < S; ++s) {
            const float4 y = *reinterpret_cast<const float4*>(ys + s * NK_CHUNK);
#pragma unroll
            for (int q = 0; q < ROWS; ++q) acc[q][s] = nk_dot4(x[q], y, acc[q][s]);
        }
    }
    nk_wait<0>();

    // Butterfly: every lane ends with the sums; lane s stores column s.
#pragma unroll
    for (int q = 0; q < ROWS; ++q) {
        float mine = 0.0f;
#pragma unroll
        for (int s = 0; s < S; ++s) {
            float a = acc[q][s];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
            if (lane == s) mine = a;
        }
        const int r = r0 + q;
        if (r < R && lane < Sreal)
            P[((long long)blockIdx.y * R + r) * Sreal + lane] = mine;
    }
}

// C[r * ldc + s] (trans: C[s * ldc + r]) = sum over splits, in split order,
// of P[split][r][s].
__global__ void narrowk_reduce(int R, int Sreal, int splits, const float* __restrict__ P,
                               float* __restrict__ C, long long ldc, int trans) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)R * Sreal) return;
    float a = 0.0f;
    for (int z = 0; z < splits; ++z) a += P[(long long)z * R * Sreal + i];
    const long long r = i / Sreal, s = i % Sreal;
    C[trans ? s * ldc + r : r * ldc + s] = a;
}
