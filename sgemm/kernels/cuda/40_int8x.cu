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
//     what the INT8 GEMMs, 41_int8_mma.cu and 42_int8_wgmma.cu, read; columns [cols, ld) are
//     zeros, ld a multiple of 16: one 16-byte cp.async chunk is then wholly
//     inside or wholly past k, so no larger padding is needed).
// After the INT8 GEMMs (41/42: C'_l = A'_l B'_l in INT32, or congruent to
// it modulo p_l past 131008/131056-deep K; column-major like C):
//   int8x_garner<N>: per element the symmetric mixed-radix digits of C' from
//     its residues (Garner: v_l = ((r_l - v_0) p_0^-1 - v_1) p_1^-1 ... mod
//     p_l), C' = v_0 + p_0 (v_1 + p_1 (...)) in double without contraction
//     (the emulation's order), scaled by 2^-(mu_i + nu_j), then
//     C = alpha C' + beta C in double, rounded once to float; beta == 0
//     never reads C.
// Each waits on griddepcontrol first (launched with PDL on sm_90 like the
// other FP32 kernels).  Moduli and Garner's inverses come in one int array: p_0..p_{N-1}, then
// inv[l][j] = p_j^-1 mod p_l for j < l, row by row (sgemm/int8x/moduli.py).
// Measured (H100, 8192^3, bench/results/int8-gemm-probe-h100-2026-11-25.json):
// exponents 0.48 ms for A and B, residues 0.76 ms each (1.06 TB/s), Garner
// 3.02 ms.  Not used by the planner.
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
// The residue kernel's tile: TR rows x TC columns (k) of X per block of 256
// threads, staged in shared memory as int8 planes [N][TR][PITCH].  PITCH =
// TC + 4 bytes = 33 words (odd), so byte stores down a column (32
// consecutive rows, the column-major read) hit 32 distinct banks.
// (An enum: namespace-scope constexpr variables become per-process symbols.)
enum : int { TR = 32, TC = 128, PITCH = TC + 4, THREADS = 256 };

// t mod p in [0, p) for |t| < 2^24, in float and 32-bit integer arithmetic
// (a % by a run-time p is a long software division).  t is exact in float;
// q = floor(t * fl(1/p)) is floor(t / p) within 1 (the product's relative
// error is below 2^-23 and |t / p| < 2^24 / p, so its absolute error is
// below 2 / p <= 1), and one correction each way puts t - q p in [0, p).
__device__ __forceinline__ int mod_f(int t, int p, float inv) {
    const int q = (int)floorf(__fmul_rn((float)t, inv));
    int r = t - q * p;
    if (r < 0) r += p;
    if (r >= p) r -= p;
    return r;
}

// x mod p in [0, p) for |x| <= 2^31 (the scaled integers, and any INT32
// plane value): x = hi 2^16 + lo with lo in [0, 2^16) and |hi| <= 2^15, so
// t = hi (2^16 mod p) + lo is congruent to x and |t| < 2^24.
// tests/int8x/test_residues.py checks both in float32 against exact
// integers.
__device__ __forceinline__ int mod_small(long long x, int p, int c16, float inv) {
    const int hi = (int)(x >> 16), lo = (int)(x & 0xffff);
    return mod_f(hi * c16 + lo, p, inv);
}
}  // namespace i8x

// int8x_residues<N>: one block per TR x TC tile of X (grid: row tiles in x,
// column tiles up to ld in y).  Phase 1 reads the tile along whichever of
// rows or columns is contiguous in memory (sr == 1: down columns, as a
// column-major A or row-major B is stored; else along rows), so every warp
// reads 128 consecutive bytes, converts each element (scale by 2^e_r, round
// to an integer, N residues) and stores its N bytes in shared memory.
// Phase 2 writes each plane's rows with k contiguous as 4-byte words, a warp
// a 128-byte row segment.  The first version (one thread per output byte,
// reading X at r sr + c sc) read a column-major operand with a 4 m-byte
// stride between lanes: 5.98 ms for both operands at 8192^3 on the H100;
// this one 0.76 ms for each (about 1.06 TB/s counting the float32 read and
// the 8 planes written; the same for the row-major B).
template <int N>
__global__ void __launch_bounds__(i8x::THREADS)
int8x_residues(int rows, int cols, const float* __restrict__ X, long long sr, long long sc,
               const int* __restrict__ e, const int* __restrict__ mods,
               signed char* __restrict__ out, long long ld, long long plane) {
    using namespace i8x;
    static_assert(N * TR * PITCH <= 48 * 1024, "the staged planes must fit static shared memory");
    __shared__ __align__(16) signed char tile[N][TR][PITCH];
    sg::pdl_wait();
    int p[N], c16[N];
    float inv[N];
#pragma unroll
    for (int l = 0; l < N; ++l) {
        p[l] = mods[l];
        c16[l] = 65536 % p[l];
        inv[l] = __frcp_rn((float)p[l]);
    }
    const int r0 = blockIdx.x * TR;
    const long long c0 = (long long)blockIdx.y * TC;
    const bool down_columns = sr == 1 && sc != 1;      // uniform: one layout per launch

    // ---- phase 1: read, convert, stage ----
    constexpr int PER = TR * TC / THREADS;
    float x[PER];
#pragma unroll
    for (int i = 0; i < PER; ++i) {                    // all loads first: PER in flight
        const int q = threadIdx.x + i * THREADS;
        const int r = down_columns ? q % TR : q / TC, c = down_columns ? q / TR : q % TC;
        const long long gr = r0 + r, gc = c0 + c;
        x[i] = gr < rows && gc < cols ? X[gr * sr + gc * sc] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < PER; ++i) {
        const int q = threadIdx.x + i * THREADS;
        const int r = down_columns ? q % TR : q / TC, c = down_columns ? q / TR : q % TC;
        const int er = r0 + r < rows ? e[r0 + r] : 0;
        // exact: |x 2^e| <= 2^bits <= 2^31 (moduli.budget), an integer in 64 bits
        const long long v = __double2ll_rn(ldexp((double)x[i], er));
#pragma unroll
        for (int l = 0; l < N; ++l) {
            const int m = mod_small(v, p[l], c16[l], inv[l]);
            tile[l][r][c] = (signed char)(m >= (p[l] + 1) / 2 ? m - p[l] : m);
        }
    }
    __syncthreads();

    // ---- phase 2: planes out, k contiguous, 4 bytes a thread ----
    // ld is a multiple of 16, so a word is wholly inside [0, ld) or past it;
    // columns [cols, ld) hold the residues of 0.
#pragma unroll 4
    for (int w = threadIdx.x; w < N * TR * (TC / 4); w += THREADS) {
        const int cw = w % (TC / 4), r = w / (TC / 4) % TR, l = w / (TC / 4 * TR);
        const long long gr = r0 + r, gc = c0 + 4 * cw;
        if (gr < rows && gc < ld)
            *reinterpret_cast<int*>(out + l * plane + gr * ld + gc) =
                *reinterpret_cast<const int*>(&tile[l][r][4 * cw]);
    }
}

// int8x_garner<N>: one thread per element, grid (row blocks of 256, columns;
// a column loop past 65535 columns).  Every reduction modulo p_l goes
// through mod_small / mod_f (float reciprocals) instead of %: the first
// version's 36 run-time 32-bit divisions and one 64-bit division an element
// made it look compute-bound (2.94 ms at 8192^3 on the H100 for ~2.4 GB
// of traffic).  Measured, that was wrong: this version took 3.02 ms at
// 8192^3 against 2.72 for the first in an earlier run on the same kind of
// card (docs/notes/int8x.md), so the divisions were not what bounds it.
// Garner's inner step (x - v_q) inv is below 383 * 255 < 2^17 in
// magnitude, inside mod_f's range.
template <int N>
__global__ void __launch_bounds__(256)
int8x_garner(int M, int Nc, const int* __restrict__ R, long long ldr, long long plane,
             const int* __restrict__ mods, const int* __restrict__ mu,
             const int* __restrict__ nu, float alpha, float beta, float* __restrict__ C,
             long long ldc) {
    sg::pdl_wait();
    int p[N], c16[N];
    float invp[N];
    int inv[N * (N - 1) / 2 + 1];
#pragma unroll
    for (int l = 0; l < N; ++l) {
        p[l] = mods[l];
        c16[l] = 65536 % p[l];
        invp[l] = __frcp_rn((float)p[l]);
    }
#pragma unroll
    for (int q = 0; q < N * (N - 1) / 2; ++q) inv[q] = mods[N + q];
    const int i = blockIdx.x * 256 + threadIdx.x;
    if (i >= M) return;
    const int mi = mu[i];
    for (int j = blockIdx.y; j < Nc; j += gridDim.y) {
        int v[N];
#pragma unroll
        for (int l = 0; l < N; ++l) {
            int x = i8x::mod_small(R[l * plane + i + j * ldr], p[l], c16[l], invp[l]);
#pragma unroll
            for (int q = 0; q < l; ++q)
                x = i8x::mod_f((x - v[q]) * inv[l * (l - 1) / 2 + q], p[l], invp[l]);
            v[l] = x >= (p[l] + 1) / 2 ? x - p[l] : x;
        }
        double y = (double)v[N - 1];
#pragma unroll
        for (int l = N - 2; l >= 0; --l) y = __dadd_rn((double)v[l], __dmul_rn((double)p[l], y));
        y = ldexp(y, -(mi + nu[j]));
        double out = __dmul_rn((double)alpha, y);
        float* c = C + i + j * ldc;
        if (beta != 0.0f) out = __dadd_rn(out, __dmul_rn((double)beta, (double)*c));
        *c = __double2float_rn(out);
    }
}
