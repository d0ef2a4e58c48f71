// Scheme kernels 40 -- the integer engine's conversion and reconstruction
// (Ozaki scheme II; the host arithmetic and an exact NumPy emulation are in
// sgemm/int8x/, which these kernels must match bit for bit).
//
// A matrix X (rows x cols, X(r, c) = X[r * sr + c * sc]: A's rows over k,
// or B's columns over k) goes to INT8 residue planes in three steps:
//   int8x_exponents: e_r = bits - exponent(max_c |X(r, c)|) per row (frexp),
//     0 for an all-zero row; any Inf or NaN raises *bad (the engine then
//     leaves the call to FP32: such values have no integer form);
//   int8x_residues<N>: X'(r, c) = rint(X(r, c) 2^e_r), exact in 64 bits
//     (|X'| <= 2^bits), then for each modulus p_l the residue in [-p/2, p/2)
//     as int8, plane l row-major: out[l * plane + r * ld + c] (k contiguous,
//     what the INT8 GEMM, 41_int8_mma.cu, reads; columns [cols, ld) are
//     zeros, ld a multiple of 16: one 16-byte cp.async chunk is then wholly
//     inside or wholly past k, so no larger padding is needed).
// After the INT8 GEMMs (41_int8_mma.cu: C'_l = A'_l B'_l in INT32, or
// congruent to it modulo p_l past 131008-deep K; column-major like C):
//   int8x_garner<N>: per element the symmetric mixed-radix digits of C' from
//     its residues (Garner: v_l = ((r_l - v_0) p_0^-1 - v_1) p_1^-1 ... mod
//     p_l), C' = v_0 + p_0 (v_1 + p_1 (...)) in double without contraction
//     (the emulation's order), scaled by 2^-(mu_i + nu_j), then
//     C = alpha C' + beta C in double, rounded once to float; beta == 0
//     never reads C.
// Each waits on griddepcontrol first (launched with PDL on sm_90 like the
// other FP32 kernels).  Moduli and Garner's inverses come in one int array: p_0..p_{N-1}, then
// inv[l][j] = p_j^-1 mod p_l for j < l, row by row (sgemm/int8x/moduli.py).
// Not measured on a GPU yet; not used by the planner.
#include "common.cuh"

__global__ void __launch_bounds__(256)
int8x_exponents(int rows, int cols, const float* __restrict__ X, long long sr, long long sc,
                int bits, int* __restrict__ e, int* __restrict__ bad) {
    sg::pdl_wait();   // the previous kernel may still be writing X
    const int r = (int)(((long long)blockIdx.x * 256 + threadIdx.x) >> 5);
    const int lane = threadIdx.x & 31;
    if (r >= rows) return;                       // a whole warp leaves together
    float m = 0.0f;
    bool finite = true;
    for (int c = lane; c < cols; c += 32) {
        const float x = X[r * sr + c * sc];
        finite = finite && isfinite(x);
        m = fmaxf(m, fabsf(x));
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    finite = __all_sync(0xffffffffu, finite);
    if (lane == 0) {
        int ex = 0;
        frexpf(m, &ex);
        e[r] = m > 0.0f ? bits - ex : 0;
        if (!finite) atomicOr(bad, 1);
    }
}

namespace i8x {
__device__ __forceinline__ int symmetric(long long v, int p) {
    int r = (int)(v % p);
    if (r < 0) r += p;
    return r >= (p + 1) / 2 ? r - p : r;
}
}  // namespace i8x

template <int N>
__global__ void __launch_bounds__(256)
int8x_residues(int rows, int cols, const float* __restrict__ X, long long sr, long long sc,
               const int* __restrict__ e, const int* __restrict__ mods,
               signed char* __restrict__ out, long long ld, long long plane) {
    sg::pdl_wait();
    int p[N];
#pragma unroll
    for (int l = 0; l < N; ++l) p[l] = mods[l];
    const long long total = (long long)rows * ld;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += step) {
        const long long r = t / ld, c = t - r * ld;
        long long v = 0;
        if (c < cols) v = __double2ll_rn(ldexp((double)X[r * sr + c * sc], e[r]));
#pragma unroll
        for (int l = 0; l < N; ++l)
            out[l * plane + r * ld + c] = (signed char)i8x::symmetric(v, p[l]);
    }
}

template <int N>
__global__ void __launch_bounds__(256)
int8x_garner(int M, int Nc, const int* __restrict__ R, long long ldr, long long plane,
             const int* __restrict__ mods, const int* __restrict__ mu,
             const int* __restrict__ nu, float alpha, float beta, float* __restrict__ C,
             long long ldc) {
    sg::pdl_wait();
    int p[N];
    int inv[N * (N - 1) / 2 + 1];
#pragma unroll
    for (int l = 0; l < N; ++l) p[l] = mods[l];
#pragma unroll
    for (int q = 0; q < N * (N - 1) / 2; ++q) inv[q] = mods[N + q];
    const long long total = (long long)M * Nc;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += step) {
        const long long j = t / M, i = t - j * M;
        int v[N];
#pragma unroll
        for (int l = 0; l < N; ++l) {
            int x = R[l * plane + i + j * ldr] % p[l];
            if (x < 0) x += p[l];
#pragma unroll
            for (int q = 0; q < l; ++q) {
                x = ((x - v[q]) * inv[l * (l - 1) / 2 + q]) % p[l];
                if (x < 0) x += p[l];
            }
            v[l] = x >= (p[l] + 1) / 2 ? x - p[l] : x;
        }
        double y = (double)v[N - 1];
#pragma unroll
        for (int l = N - 2; l >= 0; --l) y = __dadd_rn((double)v[l], __dmul_rn((double)p[l], y));
        y = ldexp(y, -(mu[i] + nu[j]));
        double out = __dmul_rn((double)alpha, y);
        float* c = C + i + j * ldc;
        if (beta != 0.0f) out = __dadd_rn(out, __dmul_rn((double)beta, (double)*c));
        *c = __double2float_rn(out);
    }
}
