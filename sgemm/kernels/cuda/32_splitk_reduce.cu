// Scheme kernel 32 (second launch) -- deterministic split-K reduction.
//
// The first launch (30_tile.cu or any SGEMM_PARAMS kernel, run as a strided
// batch over K-slices) leaves S partial products in a workspace W: slice s,
// element (i, j) at W[s * strideW + j * ldw + i].  This kernel sums them in a
// fixed order (bit-identical results run to run, unlike atomics) and applies
// the epilogue, C = act(alpha * sum + beta * C + bias), with the netlib rule
// that beta == 0 never reads C.  This is the only place split-K applies bias
// and activation: the slices are raw partial products (alpha = 1, beta = 0,
// no epilogue), so the epilogue runs once, on the sum.
//
// S == 0 sums nothing (W is never read): C = act(beta * C + bias), the
// alpha == 0 / k == 0 quick path when an epilogue is asked for (plan.py).
// Grid z walks batch entries of C (strideC; W is one entry's, so z > 1 only
// with S == 0).
//
// A thread owns V consecutive rows of one column (V = 4 with float4 when VEC:
// W and C 16-byte aligned, ldw, strideW and ldc multiples of 4); the grid's x
// runs over the flattened (row group, column) pairs (schemes.reduce_grid
// on the host).  With S >= 16 slices, G = 8 threads share an element group:
// thread g sums slices [g*ceil(S/G), ...) in order, then thread 0 adds the G
// partials in order g = 0..G-1 (still one fixed order).  One thread per
// element walking all S slices (as first written) left small outputs latency-
// bound: 105x164 with 257 slices reduced in 24.9 us where the bytes take ~6
// (H100; 27 busy threads in each of 164 blocks).
#include "common.cuh"

template <bool VEC>
__global__ void __launch_bounds__(256)
splitk_reduce(int M, int N, int S, const float* __restrict__ W, long long ldw,
              long long strideW, float alpha, float beta, float* __restrict__ C,
              long long ldc, long long strideC, const float* __restrict__ bias, int epi) {
    constexpr int V = VEC ? 4 : 1;
    __shared__ float part[V][256];
    sg::pdl_wait();
    C += (long long)blockIdx.z * strideC;
    const int G = S >= 16 ? 8 : 1;            // slice groups per element group
    const int E = 256 / G;                    // element groups per block
    const int eg = threadIdx.x % E, g = threadIdx.x / E;
    const long long mg = (M + V - 1) / V;
    const long long idx = (long long)blockIdx.x * E + eg;
    const bool live = idx < mg * N;
    const long long j = live ? idx / mg : 0;
    const int i = live ? (int)(idx - j * mg) * V : 0;
    const int per = (S + G - 1) / G;
    const int s0 = min(S, g * per), s1 = min(S, s0 + per);
    float t[V];
#pragma unroll
    for (int u = 0; u < V; ++u) t[u] = 0.0f;
    const float* w = W + j * ldw + i;
    if (live && s0 < s1) {
        bool done = false;
        if constexpr (VEC) {
            if (i + 3 < M) {
                float4 a = sg::ld4(w + s0 * strideW);
#pragma unroll 4
                for (int s = s0 + 1; s < s1; ++s) {
                    const float4 b = sg::ld4(w + s * strideW);
                    a.x += b.x; a.y += b.y; a.z += b.z; a.w += b.w;
                }
                t[0] = a.x; t[1] = a.y; t[2] = a.z; t[3] = a.w;
                done = true;
            }
        }
        if (!done) {
#pragma unroll
            for (int u = 0; u < V; ++u) {
                if (i + u >= M) break;
                float a = w[s0 * strideW + u];
                for (int s = s0 + 1; s < s1; ++s) a += w[s * strideW + u];
                t[u] = a;
            }
        }
    }
    if (G > 1) {                              // G is uniform over the launch
#pragma unroll
        for (int u = 0; u < V; ++u) part[u][threadIdx.x] = t[u];
        __syncthreads();
        if (g != 0) return;
        for (int q = 1; q < G; ++q)
#pragma unroll
            for (int u = 0; u < V; ++u) t[u] += part[u][q * E + eg];
    }
    if (!live) return;
    float* c = C + j * ldc + i;
    if constexpr (VEC) {
        if (i + 3 < M) {
            float4 r = make_float4(alpha * t[0], alpha * t[1], alpha * t[2], alpha * t[3]);
            if (beta != 0.0f) {
                const float4 o = *reinterpret_cast<const float4*>(c);
                r.x = fmaf(beta, o.x, r.x); r.y = fmaf(beta, o.y, r.y);
                r.z = fmaf(beta, o.z, r.z); r.w = fmaf(beta, o.w, r.w);
            }
            *reinterpret_cast<float4*>(c) = sg::epi4(r, SGEMM_EPI, i, (int)j);
            return;
        }
    }
#pragma unroll
    for (int u = 0; u < V; ++u)
        if (i + u < M) sg::store_c(c, u, t[u], alpha, beta, SGEMM_EPI, i + u, (int)j);
}
