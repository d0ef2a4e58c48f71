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
// After the INT8 GEMMs (41/42: byte planes, C'_l mod p_l in [0, p) as
// uint8, column-major like C, rows padded to a multiple of 16):
//   int8x_garner<N>: per element the symmetric mixed-radix digits of C' from
//     its residues (Garner: v_l = ((r_l - v_0) p_0^-1 - v_1) p_1^-1 ... mod
//     p_l, computed as one weighted sum, see the kernel), C' = v_0 + p_0 (v_1
//     + p_1 (...)) in double without contraction
//     (the emulation's order), scaled by 2^-(mu_i + nu_j), then
//     C = alpha C' + beta C in double, rounded once to float; beta == 0
//     never reads C.
// Each waits on griddepcontrol first (launched with PDL on sm_90 like the
// other FP32 kernels).  Moduli and Garner's constants come in one int array:
// p_0..p_{N-1}, then what int8x_garner lists (sgemm/int8x/moduli.py).
// Measured (H100, 8192^3, bench/results/int8-gemm-probe-h100-2026-11-25.json):
// exponents 0.48 ms for A and B, residues 0.76 ms each (1.06 TB/s), Garner
// 3.02 ms on INT32 planes (the byte-plane version: measurement pending).
#include "common.cuh"
#include "int8_common.cuh"

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
    using i8c::mod_small;
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

// int8x_garner<N>: byte planes in (what 41/42 write: C'_l mod p_l in
// [0, p), column-major, R[l plane + i + j ldr], every row < ldr written),
// FP32 out.  Each thread takes 4 consecutive rows of one column: one 4-byte
// load a plane, a warp 128 contiguous bytes.  Grid: row blocks of 256 in x
// (64 threads x 4 rows), 4 columns a block in y, looping past 65535.
// Digits in one reduction pair each instead of Garner's chain: v_l =
// (r_l - sum_{q<l} v_q W_lq) Winv_l mod p_l, W_lq = p_0..p_{q-1} mod p_l,
// Winv_l = (p_0..p_{l-1})^-1 mod p_l -- the same digits as the chain
// ((r_l - v_0) p_0^-1 - v_1) p_1^-1 ... (both are (C' - v_0 - v_1 p_0 - ...)
// / (p_0..p_{l-1}) mod p_l), with 2 reductions a digit instead of l + 1
// (16 instead of 36 for 8 moduli).  The sum is exact in int: |v_q W_lq| <
// 128 * 256, at most 15 terms (N <= 16), so |sum| < 2^19; OFF_l, a multiple
// of p_l >= 2^19, makes it non-negative and below 2^21.  Reductions of
// 0 <= t < 2^24 by Barrett: q = umulhi(t, ceil(2^32 / p)) is floor(t / p)
// exactly (the multiplier's excess d / p, d < p <= 256, moves t / p by
// t d / (p 2^32) < 1 / p, less than the distance from t / p to the next
// integer), so r = t - q p needs no correction; umulhi is an integer
// multiply, not the quarter-rate int<->float conversions of i8c::mod_f.
// Measured before this version (INT32 planes, the chain through mod_f):
// 3.02 ms at 8192^3 on the H100, 2.72 for the first (`%`) kernel.
// Constants after the moduli (sgemm/int8x/device.py, constants()): W_lq for
// q < l row by row, Winv_l, ceil(2^32 / p_l), OFF_l.
namespace i8x {
__device__ __forceinline__ int mod_u(int t, int p, unsigned bm) {
    return t - (int)__umulhi((unsigned)t, bm) * p;
}
}  // namespace i8x

template <int N>
__global__ void __launch_bounds__(256)
int8x_garner(int M, int Nc, const unsigned char* __restrict__ R, long long ldr, long long plane,
             const int* __restrict__ mods, const int* __restrict__ mu,
             const int* __restrict__ nu, float alpha, float beta, float* __restrict__ C,
             long long ldc) {
    static_assert(N >= 1 && N <= 16, "the digit sums are sized for at most 16 moduli");
    sg::pdl_wait();
    enum : int { NW = N * (N - 1) / 2 };       // Garner weights W_lq, q < l
    int p[N], winv[N], off[N];
    unsigned bm[N];
    int w[NW + 1];
#pragma unroll
    for (int l = 0; l < N; ++l) {
        p[l] = mods[l];
        winv[l] = mods[N + NW + l];
        bm[l] = (unsigned)mods[2 * N + NW + l];
        off[l] = mods[3 * N + NW + l];
    }
#pragma unroll
    for (int q = 0; q < NW; ++q) w[q] = mods[N + q];
    const int i0 = (blockIdx.x * 64 + threadIdx.x % 64) * 4;
    if (i0 >= M) return;
    int mi[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) mi[e] = i0 + e < M ? mu[i0 + e] : 0;
    for (int j = blockIdx.y * 4 + threadIdx.x / 64; j < Nc; j += gridDim.y * 4) {
        // i0 + 3 < ldr: i0 < M, i0 a multiple of 4 and ldr a multiple of 16
        int v[N][4];
#pragma unroll
        for (int l = 0; l < N; ++l) {
            const unsigned r4 = *reinterpret_cast<const unsigned*>(R + l * plane + j * ldr + i0);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                int t = (int)(r4 >> (8 * e) & 0xffu) + off[l];
#pragma unroll
                for (int q = 0; q < l; ++q) t -= v[q][e] * w[l * (l - 1) / 2 + q];
                const int x = i8x::mod_u(i8x::mod_u(t, p[l], bm[l]) * winv[l], p[l], bm[l]);
                v[l][e] = x >= (p[l] + 1) / 2 ? x - p[l] : x;
            }
        }
        const int nj = nu[j];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            if (i0 + e >= M) break;
            double y = (double)v[N - 1][e];
#pragma unroll
            for (int l = N - 2; l >= 0; --l)
                y = __dadd_rn((double)v[l][e], __dmul_rn((double)p[l], y));
            y = ldexp(y, -(mi[e] + nj));
            double out = __dmul_rn((double)alpha, y);
            float* c = C + (i0 + e) + j * ldc;
            if (beta != 0.0f) out = __dadd_rn(out, __dmul_rn((double)beta, (double)*c));
            *c = __double2float_rn(out);
        }
    }
}
