// Scheme kernel 32 (second launch) -- deterministic split-K reduction.
//
// The first launch (30_tile.cu or any SGEMM_PARAMS kernel, run as a strided
// batch over K-slices) leaves S partial products in a workspace W: slice s,
// element (i, j) at W[s * strideW + j * ldw + i].  This kernel sums the slices
// in order s = 0, 1, ..., S-1 (a fixed order: bit-identical results run to
// run, unlike atomics) and applies the epilogue, C = alpha * sum + beta * C,
// with the netlib rule that beta == 0 never reads C.
// Grid: x covers m in chunks of 256*V rows (V = 4 with float4 when VEC:
// W and C 16-byte aligned, ldw, strideW and ldc multiples of 4), y strides
// over the columns (y <= 65535, so wide C loops).
#include "common.cuh"

template <bool VEC>
__global__ void __launch_bounds__(256)
splitk_reduce(int M, int N, int S, const float* __restrict__ W, long long ldw,
              long long strideW, float alpha, float beta, float* __restrict__ C,
              long long ldc) {
    constexpr int V = VEC ? 4 : 1;
    sg::pdl_wait();
    const int i = (blockIdx.x * 256 + threadIdx.x) * V;
    if (i >= M) return;
    for (int j = blockIdx.y; j < N; j += gridDim.y) {
        const float* w = W + (long long)j * ldw + i;
        float* c = C + (long long)j * ldc + i;
        if (VEC && i + 3 < M) {
            float4 t = sg::ld4(w);
#pragma unroll 4
            for (int s = 1; s < S; ++s) {
                const float4 u = sg::ld4(w + s * strideW);
                t.x += u.x; t.y += u.y; t.z += u.z; t.w += u.w;
            }
            float4 r = make_float4(alpha * t.x, alpha * t.y, alpha * t.z, alpha * t.w);
            if (beta != 0.0f) {
                const float4 o = *reinterpret_cast<const float4*>(c);
                r.x = fmaf(beta, o.x, r.x); r.y = fmaf(beta, o.y, r.y);
                r.z = fmaf(beta, o.z, r.z); r.w = fmaf(beta, o.w, r.w);
            }
            *reinterpret_cast<float4*>(c) = r;
        } else {
            for (int u = 0; u < V && i + u < M; ++u) {
                float t = w[u];
                for (int s = 1; s < S; ++s) t += w[s * strideW + u];
                sg::store_c(c, u, t, alpha, beta);
            }
        }
    }
}
